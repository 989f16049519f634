"""pytest plugin (entry point `pytest11`): the `plantstub` fixture, its marker, options and coverage summary."""

from __future__ import annotations

import argparse
import difflib
import os
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# config and _gc are stdlib only: loading the plugin stays cheap.
from plantstub._gc import collector_paused
from plantstub.config import Settings, build_settings, bundled_name
from plantstub.recording.coverage import Tally, figures, merge, tally_of

if TYPE_CHECKING:
    from plantstub.recording.call import Call
    from plantstub.server.remote import RemoteStub
    from plantstub.stub import Stub
    from plantstub.webhooks.deliveries import Delivery

COVERAGE_KEY = pytest.StashKey[Tally]()
_STUB_OF_TEST = pytest.StashKey["Stub | RemoteStub"]()
URL_ENV = "PLANTSTUB_URL"


@dataclass(frozen=True)
class MarkerOptions:
    """What `@pytest.mark.plantstub(...)` may say: `scenario` (also as the one positional argument) and `strict`."""

    scenario: str | None = None
    strict: bool = True


_OPTIONS_KEY = pytest.StashKey[MarkerOptions]()
_KNOWN = ("scenario", "strict")


def _marker_kwargs(marker: pytest.Mark) -> dict[str, Any]:
    """One marker's arguments as keywords; a mistake in it fails the test's setup with a message, not a traceback."""
    kwargs = dict(marker.kwargs)
    problems = []
    if len(marker.args) > 1 or (marker.args and "scenario" in kwargs):
        problems.append(f"takes one scenario name, got {[*marker.args, *kwargs.values()][:3]!r}")
    elif marker.args:
        kwargs["scenario"] = marker.args[0]
    for key in kwargs:
        if key not in _KNOWN:
            close = difflib.get_close_matches(key, _KNOWN, n=1)
            problems.append(f"unknown argument {key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    if "scenario" in kwargs and not isinstance(kwargs["scenario"], (str, type(None))):
        problems.append(f"scenario must be a name (a string), got {kwargs['scenario']!r}")
    if "strict" in kwargs and not isinstance(kwargs["strict"], bool):
        problems.append(f"strict must be True or False, got {kwargs['strict']!r}")
    if problems:
        pytest.fail(f"@pytest.mark.plantstub: {'; '.join(problems)}. It takes scenario=NAME and strict=True|False.",
                    pytrace=False)
    return kwargs


def _marker_options(node: pytest.Item) -> MarkerOptions:
    """The test's options: its markers combined, the closest first (a test's own over its class's and module's).

    So `@pytest.mark.plantstub(strict=False)` on a test keeps the scenario its module's marker chose.
    """
    merged: dict[str, Any] = {}
    for level in reversed(node.listchain()):
        marks = [m for m in level.own_markers if m.name == "plantstub"]
        if isinstance(level, pytest.Class):
            marks.reverse()  # a class lists its bases' marks first, its own last
        for marker in marks:
            for key, value in _marker_kwargs(marker).items():
                merged.setdefault(key, value)
    return MarkerOptions(**merged)


def _percent(text: str) -> float:
    """--plantstub-coverage-fail-under: a percentage, 0 to 100."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage (expected a number from 0 to 100)")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("plantstub", "plantstub (contract-checked Plant Store stub)")
    group.addoption("--plantstub-spec", metavar="FILE",
                    help="OpenAPI document the stub serves, relative to the current folder (default: bundled Plant Store)")
    group.addoption("--plantstub-spec-root", metavar="DIR",
                    help="folder whose files the spec's $refs may read, relative to the current folder (default: the spec's folder)")
    group.addoption("--plantstub-scenarios", metavar="DIR",
                    help="folder of scenario files, relative to the current folder")
    group.addoption("--plantstub-stateful", action="store_const", const=True, default=None,
                    help="the stub remembers what is created, listed, read, updated and deleted (reset per test)")
    group.addoption("--plantstub-coverage", action="store_true", default=False,
                    help="show contract coverage (calls per operation and response) in the summary")
    group.addoption("--plantstub-coverage-fail-under", metavar="PCT", type=_percent, default=None,
                    help="fail the run when contract coverage is below PCT percent")
    group.addoption("--plantstub-url", metavar="URL",
                    help=f"use the stub running at URL (a sidecar), one session per test, instead of starting one "
                         f"[env {URL_ENV}]")
    parser.addini("plantstub_url", "base URL of a running stub (a sidecar) the fixture uses, one session per test")
    parser.addini("plantstub_spec", "OpenAPI document the stub serves, relative to the ini file", type="paths")
    parser.addini("plantstub_spec_root", "folder whose files the spec's $refs may read, relative to the ini file",
                  type="paths")
    parser.addini("plantstub_scenarios", "folder of scenario files, relative to the ini file", type="paths")
    parser.addini("plantstub_stateful", "the stub remembers what it is told (true/false)", default=None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "plantstub(scenario=None, strict=True): scenario active for this test; strict=False lets the "
        "test send requests that break the contract",
    )
    config.stash[COVERAGE_KEY] = {}


def _first(value: Any) -> str | None:
    if isinstance(value, list):
        return str(value[0]) if value else None
    return value


def _spec(value: str | Path | None) -> str | Path | None:
    """A spec path made absolute, or the name of a bundled document (`plant-store-full`) when no such file exists."""
    return (bundled_name(value) or value) if value is not None else None


def _resolve(config: pytest.Config, value: str | None) -> Path | None:
    """A path given on the command line: relative to the folder pytest was started in, as a shell user expects."""
    if value is None:
        return None
    path = Path(value)
    return path if path.is_absolute() else config.invocation_params.dir / path


@pytest.fixture(scope="session")
def plantstub_settings(pytestconfig: pytest.Config) -> Settings:
    """Settings of the stub: command line > PLANTSTUB_* environment > ini > defaults.

    Override this fixture in a conftest.py to configure the stub in code: return a dict of Settings fields
    (port 0 unless it names one); an override in a sub-folder's conftest.py gives that folder its own stub.
    """
    explicit = {
        "spec": _spec(_resolve(pytestconfig, pytestconfig.getoption("plantstub_spec"))),
        "spec_root": _resolve(pytestconfig, pytestconfig.getoption("plantstub_spec_root")),
        "scenarios": _resolve(pytestconfig, pytestconfig.getoption("plantstub_scenarios")),
        "stateful": pytestconfig.getoption("plantstub_stateful"),
        "port": 0,
    }
    fallback = {
        "spec": _spec(_first(pytestconfig.getini("plantstub_spec"))),
        "spec_root": _first(pytestconfig.getini("plantstub_spec_root")),
        "scenarios": _first(pytestconfig.getini("plantstub_scenarios")),
        "stateful": pytestconfig.getini("plantstub_stateful"),
    }
    if fallback["scenarios"] is None and explicit["scenarios"] is None and (pytestconfig.rootpath / "scenarios").is_dir():
        fallback["scenarios"] = str(pytestconfig.rootpath / "scenarios")
    return build_settings(explicit, fallback=fallback)


class StubPool:
    """The running stubs of a session (of an xdist worker): one per distinct settings, started on first use.

    Settings that cannot start a stub (a missing folder, a broken scenario) fail each test that asks
    for them with the same one-line reason, without trying again.
    """

    def __init__(self) -> None:
        self.stubs: dict[Settings, Stub] = {}
        self.failures: dict[Settings, str] = {}

    def get(self, settings: Settings | dict[str, Any]) -> Stub:
        # The first call imports the server and starts it: every object that builds lives on, so a collection
        # meanwhile would only walk them (about a sixth of a worker's first use).
        with collector_paused():
            return self._get(settings)

    def _get(self, settings: Settings | dict[str, Any]) -> Stub:
        from plantstub.errors import PlantstubError
        from plantstub.stub import Stub

        stub: Stub | None = None
        problem = None
        try:
            if isinstance(settings, dict):
                settings = build_settings({"port": 0, **settings})
            stub = self.stubs.get(settings)
            if stub is None:
                problem = self.failures.get(settings)
                if problem is None:
                    stub = self.stubs[settings] = Stub(settings=settings).start()
        except PlantstubError as exc:
            problem = f"plantstub: the stub cannot start: {exc}"
            if isinstance(settings, Settings):
                self.failures[settings] = problem
        if problem is not None:  # outside the except block: one line, no chained traceback
            pytest.fail(problem, pytrace=False)
        assert stub is not None  # started, or found running
        return stub

    def stop(self) -> None:
        for stub in self.stubs.values():
            stub.stop()
        self.stubs.clear()


@pytest.fixture(scope="session")
def plantstub_pool() -> Iterator[StubPool]:
    """The session's running stubs, by settings; all stop when the session ends."""
    pool = StubPool()
    try:
        yield pool
    finally:
        pool.stop()


@pytest.fixture(scope="session")
def plantstub_sidecar(pytestconfig: pytest.Config, plantstub_settings: Settings) -> RemoteStub | None:
    """The running stub of --plantstub-url (env PLANTSTUB_URL, ini plantstub_url), checked once; None without one.

    Its admin token is PLANTSTUB_ADMIN_TOKEN's (or an overridden plantstub_settings' admin_token).
    """
    url = pytestconfig.getoption("plantstub_url") or os.environ.get(URL_ENV) or pytestconfig.getini("plantstub_url")
    if not url:
        return None
    from plantstub.errors import PlantstubError
    from plantstub.server.remote import RemoteStub  # not plantstub.stub: a sidecar's workers need no aiohttp

    problem = None
    try:
        return RemoteStub.connect(str(url), plantstub_settings.admin_token)
    except PlantstubError as exc:
        problem = f"plantstub: --plantstub-url: {exc}"
    pytest.fail(problem, pytrace=False)  # outside the except block: one line, no chained traceback


@pytest.fixture(scope="session")
def plantstub_server(
    plantstub_settings: Settings, plantstub_pool: StubPool, plantstub_sidecar: RemoteStub | None
) -> Stub | RemoteStub:
    """The session's running stub for the settings seen where it is first requested (per xdist worker), or the
    sidecar of --plantstub-url."""
    return plantstub_sidecar if plantstub_sidecar is not None else plantstub_pool.get(plantstub_settings)


def _add_coverage(config: pytest.Config, stub: Stub | RemoteStub) -> None:
    merge(config.stash[COVERAGE_KEY], tally_of(stub.coverage()))


@pytest.fixture
def plantstub(
    plantstub_settings: Settings, plantstub_pool: StubPool, plantstub_sidecar: RemoteStub | None,
    request: pytest.FixtureRequest,
) -> Iterator[Stub | RemoteStub]:
    """A running stub with an empty journal and the scenario of the test's markers (or none).

    The stub is the one for the `plantstub_settings` this test sees, so a sub-folder's conftest.py
    that overrides them gets its own; with --plantstub-url, a session of its own on that sidecar, ended
    at teardown.
    """
    from plantstub.errors import PlantstubError, UnknownScenario

    options = _marker_options(request.node)
    stub: Stub | RemoteStub
    pooled: Stub | None = None  # the in-process stub, when no sidecar is used
    if plantstub_sidecar is not None:
        problem = None
        try:
            stub = plantstub_sidecar.session()
        except PlantstubError as exc:
            problem = f"plantstub: no session on the sidecar: {exc}"
        if problem is not None:
            pytest.fail(problem, pytrace=False)
    else:
        stub = pooled = plantstub_pool.get(plantstub_settings)
        stub.reset()
    problem = None
    try:
        stub.use(options.scenario)
    except UnknownScenario as exc:
        problem = f"@pytest.mark.plantstub: {exc}"
    if problem is not None:  # outside the except block: one line, no chained traceback
        if plantstub_sidecar is not None:
            stub.stop()
        pytest.fail(problem, pytrace=False)
    request.node.stash[_OPTIONS_KEY] = options
    request.node.stash[_STUB_OF_TEST] = stub
    try:
        yield stub
    finally:
        try:
            _add_coverage(request.config, stub)
        finally:
            if pooled is None:
                stub.stop()  # ends this test's session on the sidecar (its subscriptions with it)
            else:
                pooled.use(None)
                pooled.reset_subscriptions()  # a subscription the test made ends with it


def _listed(calls: list[Call], reasons: Any) -> str:
    return "; ".join(f"#{c.seq} {c.method} {c.path} -> {c.response.get('status')}: {'; '.join(reasons(c))}" for c in calls)


def _strict_failures(name: str, calls: list[Call], deliveries: Sequence[Delivery] = ()) -> list[str]:
    """Strict mode's complaints about one test: the consumer's broken requests, the stub's own faults, then the
    consumer's webhook receivers that answered a status the webhook does not declare."""
    found = []
    bad = [c for c in calls if not c.valid]
    if bad:
        n = len(bad)
        found.append(
            f"plantstub: {name} sent {n} request{'s' if n > 1 else ''} that break{'s' if n == 1 else ''} the "
            f"contract: {_listed(bad, lambda c: c.errors)}. If that was the point of the test, mark it "
            "@pytest.mark.plantstub(strict=False)."
        )
    faulty = [c for c in calls if c.stub_errors]
    if faulty:
        n = len(faulty)
        found.append(
            f"plantstub: the stub, not {name}, broke the contract on {n} call{'s' if n > 1 else ''}: "
            f"{_listed(faulty, lambda c: c.stub_errors)}. A scenario rule named here must be fixed (or say "
            "`off_contract: true`); an internal error is a plantstub bug."
        )
    refused = [d for d in deliveries if d.status is not None and not d.valid]
    if refused:
        n = len(refused)
        listed = "; ".join(f"#{d.seq} {d.name} -> {d.url}: {d.error}" for d in refused)
        found.append(
            f"plantstub: in {name}, the consumer's webhook receiver broke the contract on {n} "
            f"deliver{'ies' if n > 1 else 'y'}: {listed}. Make the receiver answer a declared status, or mark the "
            "test @pytest.mark.plantstub(strict=False) if that was the point."
        )
    return found


def _settled_deliveries(stub: Stub, timeout: float = 5.0) -> list[Delivery]:
    """The test's deliveries once those still being sent are done (at most `timeout` seconds)."""
    import time

    deadline = time.monotonic() + timeout
    while stub.pending_deliveries() and time.monotonic() < deadline:
        time.sleep(0.01)
    return stub.deliveries


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Strict mode: a test that passed but whose calls broke the contract fails, with the reasons."""
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or not report.passed or "plantstub" not in getattr(item, "fixturenames", ()):
        return
    options = item.stash.get(_OPTIONS_KEY, None)
    stub = item.stash.get(_STUB_OF_TEST, None)
    if options is None or stub is None or not options.strict:
        return
    from plantstub.server.remote import RemoteStub

    # a sidecar's deliveries are not read over HTTP (yet): strict mode checks its calls only
    deliveries = [] if isinstance(stub, RemoteStub) else _settled_deliveries(stub)
    failures = _strict_failures(item.name, stub.calls, deliveries)
    if failures:
        report.outcome = "failed"
        report.longrepr = "\n".join(failures)


def _coverage_rows(tally: Tally) -> list[str]:
    rows = []
    for operation, counts in tally.items():
        for status, n in counts["declared"].items():
            rows.append(f"  {operation:<30} {status:<8} {n:>6}{'' if n else '   <- never exercised'}")
        for status, n in counts["undeclared"].items():
            rows.append(f"  {operation:<30} {status:<8} {n:>6}   (not declared)")
    return rows


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: without xdist installed, pytest must not see it as unknown
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist: merge each worker's coverage tally into the controller's."""
    data = getattr(node, "workeroutput", {}).get("plantstub_coverage")
    if not data:
        return
    merge(node.config.stash[COVERAGE_KEY], data)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if hasattr(config, "workeroutput"):
        config.workeroutput["plantstub_coverage"] = config.stash[COVERAGE_KEY]
        return
    threshold = config.getoption("plantstub_coverage_fail_under")
    if threshold is None or session.exitstatus != 0:
        return
    tally = config.stash[COVERAGE_KEY]
    # Asked for, but nothing was measured (no test used the fixture): that is a failure, not 100 %.
    if not tally or figures(tally).percent < threshold:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    wanted = config.getoption("plantstub_coverage") or config.getoption("plantstub_coverage_fail_under") is not None
    tally = config.stash.get(COVERAGE_KEY, {})
    if not wanted or hasattr(config, "workeroutput"):
        return
    terminalreporter.section("plantstub contract coverage")
    if not tally:
        terminalreporter.write_line("no test used the plantstub fixture")
        threshold = config.getoption("plantstub_coverage_fail_under")
        if threshold is not None:
            terminalreporter.write_line(
                f"plantstub: FAIL: --plantstub-coverage-fail-under={threshold:g} was given, but no test used the "
                "plantstub fixture, so there is no coverage to measure",
                red=True,
            )
        return
    terminalreporter.write_line(f"  {'operation':<30} {'response':<8} {'calls':>6}")
    for row in _coverage_rows(tally):
        terminalreporter.write_line(row)
    total = figures(tally)
    percent = total.percent
    terminalreporter.write_line(
        f"plantstub: {total.covered} of {total.total} declared responses exercised ({percent:.1f}%)"
    )
    threshold = config.getoption("plantstub_coverage_fail_under")
    if threshold is not None and percent < threshold:
        terminalreporter.write_line(
            f"plantstub: FAIL: contract coverage {percent:.1f}% is under --plantstub-coverage-fail-under={threshold:g}",
            red=True,
        )
