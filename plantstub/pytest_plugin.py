"""pytest plugin (entry point `pytest11`): the `plantstub` fixture and its helpers, the marker, the hooks of strict
mode and the coverage summary. The parts live in `plantstub.plugin`."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING

import pytest

from plantstub.config import Settings
from plantstub.plugin.markers import OPTIONS_KEY, marker_options
from plantstub.plugin.options import (
    DEFAULT_SETTINGS,
    URL_ENV,
    WAIT_ENV,
    add_options,
    given_seed,
    run_seed,
    session_wait,
    settings_of,
    sidecar_url,
    with_proxy,
)
from plantstub.plugin.pool import StubPool
from plantstub.plugin.seeds import add_failure_section, merge_worker, note_drawn, seed_key, worker_finished, write_seeds
from plantstub.plugin.sidecar import check_stateful, end_session, open_session, sidecar_terms
from plantstub.plugin.strict import settled_deliveries, strict_failures
from plantstub.plugin.summary import COVERAGE_KEY, WorkerNode, session_finished, write_summary
from plantstub.recording.coverage import merge, tally_of

if TYPE_CHECKING:
    import pluggy

    from plantstub.client.remote import RemoteStub
    from plantstub.stub import Stub

__all__ = ["COVERAGE_KEY", "URL_ENV", "WAIT_ENV", "StubPool"]
_STUB_OF_TEST = pytest.StashKey["Stub | RemoteStub"]()
_ON_SIDECAR = pytest.StashKey[bool]()  # the test's stub is its session on a sidecar
_DRAWN_OF_TEST = pytest.StashKey[int]()  # the dynamic answers the test drew, counted at its fixture's teardown
_WAIT_KEY = pytest.StashKey[float]()
REPORT_PLUGIN = "plantstub-report"  # the name plugin/report.py registers the report under


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "plantstub(scenario=None, strict=True, proxy=None): scenario active for this test; strict=False lets the "
        "test send requests that break the contract; proxy=URL forwards what nothing else answers to the real service",
    )
    config.stash[COVERAGE_KEY] = {}
    config.stash[_WAIT_KEY] = session_wait(config)  # a bad value stops the run here, naming it
    if config.getoption("plantstub_report", None) or config.getini("plantstub_report"):
        from plantstub.plugin.report import start_report  # only when asked for: the plugin's import stays cheap

        start_report(config)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: without xdist installed, pytest must not see it as unknown
def pytest_configure_node(node: WorkerNode) -> None:
    """pytest-xdist: every worker draws dynamic answers from the seed the header shows."""
    node.workerinput["plantstub_seed"] = run_seed(node.config)


def pytest_report_header(config: pytest.Config) -> str | None:
    """`plantstub: dynamic answers, seed N` when the run's stub varies its answers, so a failing run can be repeated."""
    from plantstub.errors import PlantstubError

    try:
        settings = settings_of(config)
    except PlantstubError:  # said where the fixture is used
        return None
    if not settings.dynamic or sidecar_url(config) is not None:
        return None
    return f"plantstub: dynamic answers, seed {settings.seed} (--plantstub-seed {settings.seed} repeats them)"


@pytest.fixture(scope="session")
def plantstub_settings(pytestconfig: pytest.Config) -> Settings:
    """Settings of the stub: command line > PLANTSTUB_* environment > ini > defaults.

    Override this fixture in a conftest.py to configure the stub in code: return a dict of Settings fields
    (port 0 unless it names one); an override in a sub-folder's conftest.py gives that folder its own stub.
    With --plantstub-url, its admin_token, scenario and stateful apply (docs/pytest.md).
    """
    from plantstub.errors import PlantstubError

    made = pytestconfig.stash.get(DEFAULT_SETTINGS, None)  # by the header already (not in an xdist worker)
    if made is not None:
        return made
    try:
        return settings_of(pytestconfig)
    except PlantstubError as exc:
        problem = f"plantstub: {exc}"
    pytest.fail(problem, pytrace=False)  # outside the except block: one line, no chained traceback


@pytest.fixture(scope="session")
def plantstub_pool(request: pytest.FixtureRequest) -> Iterator[StubPool]:
    """The session's running stubs, by settings, and its sidecar connections; all stop when the session ends."""
    pool = StubPool(given_seed(request.config))
    try:
        yield pool
    finally:
        pool.stop()


def _sidecar_of(config: pytest.Config, settings: Settings | dict[str, object], pool: StubPool) -> tuple[RemoteStub, str | None] | None:
    """The sidecar of --plantstub-url for the test's settings, and the scenario they start it with; None: no sidecar.

    Looked up per test, not cached by pytest: a folder's settings (its admin token) apply to that folder's tests only,
    and one that cannot be used fails those tests alone.
    """
    url = sidecar_url(config)
    if url is None:
        return None
    terms = sidecar_terms(settings, config.stash.get(DEFAULT_SETTINGS, None), url)
    remote = pool.sidecar(url, terms.admin_token)
    if terms.stateful is not None:
        check_stateful(terms.stateful, pool.is_stateful(remote), url)
    return remote, terms.scenario


@pytest.fixture
def plantstub_sidecar(pytestconfig: pytest.Config, plantstub_settings: Settings | dict[str, object], plantstub_pool: StubPool) -> RemoteStub | None:
    """The running stub of --plantstub-url (env PLANTSTUB_URL, ini plantstub_url), connected with the test's admin
    token (PLANTSTUB_ADMIN_TOKEN, or an overridden plantstub_settings' admin_token); None without one."""
    found = _sidecar_of(pytestconfig, plantstub_settings, plantstub_pool)
    return None if found is None else found[0]


@pytest.fixture
def plantstub_server(pytestconfig: pytest.Config, plantstub_settings: Settings | dict[str, object], plantstub_pool: StubPool) -> Stub | RemoteStub:
    """The running stub for the settings this test sees (started once per session, per xdist worker), or the
    sidecar of --plantstub-url."""
    found = _sidecar_of(pytestconfig, plantstub_settings, plantstub_pool)
    return plantstub_pool.get(plantstub_settings) if found is None else found[0]


@pytest.fixture
def plantstub(plantstub_settings: Settings | dict[str, object], plantstub_pool: StubPool, request: pytest.FixtureRequest) -> Iterator[Stub | RemoteStub]:
    """A running stub with an empty journal (its first call is #1) and the scenario of the test's markers, else of
    its settings (or none).

    The stub is the one for the `plantstub_settings` this test sees, so a sub-folder's conftest.py
    that overrides them gets its own; with --plantstub-url, a session of its own on that sidecar, ended
    at teardown.
    """
    from plantstub.errors import PlantstubError, UnknownScenario

    options = marker_options(request.node)
    stub: Stub | RemoteStub
    pooled: Stub | None = None  # the in-process stub, when no sidecar is used
    view: RemoteStub | None = None  # the test's session on the sidecar, when one is used
    sidecar = _sidecar_of(request.config, plantstub_settings, plantstub_pool)
    if options.proxy is not None:
        if sidecar is not None:
            pytest.fail(f"@pytest.mark.plantstub(proxy=...): the sidecar at {sidecar_url(request.config)} forwards "
                        "where its own --proxy says; start it with --proxy, or drop --plantstub-url", pytrace=False)
        plantstub_settings = with_proxy(plantstub_settings, options.proxy)
    if sidecar is not None:
        remote, scenario = sidecar
        stub = view = open_session(remote, request.config.stash[_WAIT_KEY], seed_key(request.node))
        stub.watch_default()  # so a failed assertion can say when calls went to the default session instead
    else:
        stub = pooled = plantstub_pool.get(plantstub_settings)
        scenario = pooled.settings.scenario
        stub.reset(seed_key(request.node))  # this test's dynamic answers: from the seed and its node id
    problem = None
    try:
        stub.use(options.scenario if options.scenario is not None else scenario)
    except UnknownScenario as exc:
        problem = f"@pytest.mark.plantstub: {exc}"
    if problem is not None:  # outside the except block: one line, no chained traceback
        if sidecar is not None:
            stub.stop()
        pytest.fail(problem, pytrace=False)
    request.node.stash[OPTIONS_KEY] = options
    request.node.stash[_STUB_OF_TEST] = stub
    request.node.stash[_ON_SIDECAR] = view is not None
    try:
        yield stub
    finally:
        try:
            merge(request.config.stash[COVERAGE_KEY], tally_of(stub.coverage()))
            report = request.config.pluginmanager.get_plugin(REPORT_PLUGIN)  # --plantstub-report
            if report is not None:
                report.add_calls(request.node.nodeid, stub.calls)
        except PlantstubError:
            if pooled is not None:  # a sidecar's session that cannot be reached: end_session() says so below
                raise
        finally:
            if view is not None:
                try:
                    end_session(view, request.node.name)  # ends this test's session on the sidecar (its subscriptions)
                finally:
                    _drawn(request, view, view.ended_answers or 0)
            elif pooled is not None:
                _drawn(request, pooled, pooled.dynamic_answers)
                pooled.use(None)
                pooled.reset_subscriptions()  # a subscription the test made ends with it


def _drawn(request: pytest.FixtureRequest, stub: Stub | RemoteStub, drawn: int) -> None:
    """Keep how many dynamic answers the test drew: for a failure at its teardown, and for the run's summary."""
    request.node.stash[_DRAWN_OF_TEST] = drawn
    note_drawn(request.config, stub, request.node.stash.get(_ON_SIDECAR, False), drawn)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
    """Strict mode: a test that passed but whose calls broke the contract fails, with the reasons. A failed test
    that drew dynamic answers names their seed."""
    outcome = yield
    report = outcome.get_result()
    if call.when == "setup" or "plantstub" not in getattr(item, "fixturenames", ()):
        return
    options = item.stash.get(OPTIONS_KEY, None)
    stub = item.stash.get(_STUB_OF_TEST, None)
    if stub is None:
        return
    if call.when == "call" and report.passed and options is not None and options.strict:
        failures = strict_failures(item.name, stub.calls, settled_deliveries(stub))
        if failures:
            report.outcome = "failed"
            report.longrepr = "\n".join(failures)
    if report.failed:  # at teardown, the count the fixture kept (a sidecar's session has ended)
        add_failure_section(report, item, stub, item.stash.get(_ON_SIDECAR, False),
                            item.stash.get(_DRAWN_OF_TEST, None) if call.when == "teardown" else None)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: without xdist installed, pytest must not see it as unknown
def pytest_testnodedown(node: WorkerNode, error: object) -> None:
    """pytest-xdist: merge each worker's coverage tally, and its count of tests that drew dynamic answers, into the
    controller's."""
    merge_worker(node.config, node)
    data = getattr(node, "workeroutput", {}).get("plantstub_coverage")
    if not data:
        return
    merge(node.config.stash[COVERAGE_KEY], data)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    worker_finished(session.config)
    session_finished(session)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    write_seeds(terminalreporter, config)
    write_summary(terminalreporter, config)
