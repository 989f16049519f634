"""pytest plugin (entry point `pytest11`): the `plantstub` fixture, its marker, options and coverage summary."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .stub import Stub

COVERAGE_KEY = pytest.StashKey[dict]()
STUB_KEY = pytest.StashKey["Stub"]()


@dataclass(frozen=True)
class MarkerOptions:
    """What `@pytest.mark.plantstub(...)` may say: `scenario` (also as the one positional argument) and `strict`."""

    scenario: str | None = None
    strict: bool = True


_OPTIONS_KEY = pytest.StashKey[MarkerOptions]()


def _marker_options(marker: pytest.Mark | None) -> MarkerOptions:
    """The marker's options; a mistake in it fails the test's setup with a message, not a traceback."""
    if marker is None:
        return MarkerOptions()
    known = ("scenario", "strict")
    kwargs = dict(marker.kwargs)
    problems = []
    if len(marker.args) > 1 or (marker.args and "scenario" in kwargs):
        problems.append(f"takes one scenario name, got {[*marker.args, *kwargs.values()][:3]!r}")
    elif marker.args:
        kwargs["scenario"] = marker.args[0]
    for key in kwargs:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            problems.append(f"unknown argument {key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    if "scenario" in kwargs and not isinstance(kwargs["scenario"], (str, type(None))):
        problems.append(f"scenario must be a name (a string), got {kwargs['scenario']!r}")
    if "strict" in kwargs and not isinstance(kwargs["strict"], bool):
        problems.append(f"strict must be True or False, got {kwargs['strict']!r}")
    if problems:
        pytest.fail(f"@pytest.mark.plantstub: {'; '.join(problems)}. It takes scenario=NAME and strict=True|False.",
                    pytrace=False)
    return MarkerOptions(scenario=kwargs.get("scenario"), strict=kwargs.get("strict", True))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("plantstub", "plantstub (contract-checked Plant Store stub)")
    group.addoption("--plantstub-spec", metavar="FILE", help="OpenAPI document the stub serves (default: bundled Plant Store)")
    group.addoption("--plantstub-scenarios", metavar="DIR", help="folder of scenario files")
    group.addoption("--plantstub-coverage", action="store_true", default=False,
                    help="show contract coverage (calls per operation and response) in the summary")
    group.addoption("--plantstub-coverage-fail-under", metavar="PCT", type=float, default=None,
                    help="fail the run when contract coverage is below PCT percent")
    parser.addini("plantstub_spec", "OpenAPI document the stub serves, relative to the ini file", type="paths")
    parser.addini("plantstub_scenarios", "folder of scenario files, relative to the ini file", type="paths")


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


def _resolve(config: pytest.Config, value: str | None) -> Path | None:
    if value is None:
        return None
    path = Path(value)
    return path if path.is_absolute() else config.rootpath / path


@pytest.fixture(scope="session")
def plantstub_settings(pytestconfig: pytest.Config):
    """Settings of the session's stub: command line > PLANTSTUB_* environment > ini > defaults.

    Override this fixture in a conftest.py to configure the stub in code.
    """
    from .config import build_settings

    explicit = {
        "spec": _resolve(pytestconfig, pytestconfig.getoption("plantstub_spec")),
        "scenarios": _resolve(pytestconfig, pytestconfig.getoption("plantstub_scenarios")),
        "port": 0,
    }
    fallback = {
        "spec": _first(pytestconfig.getini("plantstub_spec")),
        "scenarios": _first(pytestconfig.getini("plantstub_scenarios")),
    }
    if fallback["scenarios"] is None and explicit["scenarios"] is None and (pytestconfig.rootpath / "scenarios").is_dir():
        fallback["scenarios"] = str(pytestconfig.rootpath / "scenarios")
    return build_settings(explicit, fallback=fallback)


@pytest.fixture(scope="session")
def plantstub_server(plantstub_settings, pytestconfig: pytest.Config) -> Iterator[Stub]:
    """One running stub for the whole session (per xdist worker); tests get it through `plantstub`."""
    from .stub import Stub

    with Stub(settings=plantstub_settings) as stub:
        pytestconfig.stash[STUB_KEY] = stub
        yield stub


def _add_coverage(config: pytest.Config, stub: Stub) -> None:
    tally = config.stash[COVERAGE_KEY]
    for op in stub.coverage()["operations"]:
        counts = tally.setdefault(op["operation"], {"declared": {}, "undeclared": {}})
        for response in op["responses"]:
            counts["declared"][response["status"]] = counts["declared"].get(response["status"], 0) + response["calls"]
        for status, n in op["undeclared"].items():
            counts["undeclared"][status] = counts["undeclared"].get(status, 0) + n


@pytest.fixture
def plantstub(plantstub_server: Stub, request: pytest.FixtureRequest) -> Iterator[Stub]:
    """A running stub with an empty journal and the scenario of the test's marker (or none)."""
    options = _marker_options(request.node.get_closest_marker("plantstub"))
    plantstub_server.reset()
    plantstub_server.use(options.scenario)
    request.node.stash[_OPTIONS_KEY] = options
    try:
        yield plantstub_server
    finally:
        _add_coverage(request.config, plantstub_server)
        plantstub_server.use(None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Strict mode: a test that passed but made the stub see a broken request fails, with the reasons."""
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or not report.passed or "plantstub" not in getattr(item, "fixturenames", ()):
        return
    options = item.stash.get(_OPTIONS_KEY, None)
    stub = item.config.stash.get(STUB_KEY, None)
    if options is None or stub is None or not options.strict:
        return
    bad = [c for c in stub.calls if not c.valid]
    if not bad:
        return
    n = len(bad)
    listed = "; ".join(f"#{c.seq} {c.method} {c.path} -> {c.response.get('status')}: {'; '.join(c.errors)}" for c in bad)
    report.outcome = "failed"
    report.longrepr = (
        f"plantstub: {item.name} sent {n} request{'s' if n > 1 else ''} that "
        f"break{'s' if n == 1 else ''} the contract: {listed}. If that was the point of the test, "
        "mark it @pytest.mark.plantstub(strict=False)."
    )


def _coverage_rows(tally: dict) -> tuple[list[str], int, int]:
    rows, covered, total = [], 0, 0
    for operation, counts in tally.items():
        for status, n in counts["declared"].items():
            rows.append(f"  {operation:<30} {status:<8} {n:>6}{'' if n else '   <- never exercised'}")
            total += 1
            covered += n > 0
        for status, n in counts["undeclared"].items():
            rows.append(f"  {operation:<30} {status:<8} {n:>6}   (not declared)")
    return rows, covered, total


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: without xdist installed, pytest must not see it as unknown
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist: merge each worker's coverage tally into the controller's."""
    data = getattr(node, "workeroutput", {}).get("plantstub_coverage")
    if not data:
        return
    tally = node.config.stash[COVERAGE_KEY]
    for operation, counts in data.items():
        into = tally.setdefault(operation, {"declared": {}, "undeclared": {}})
        for kind in ("declared", "undeclared"):
            for status, n in counts[kind].items():
                into[kind][status] = into[kind].get(status, 0) + n


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if hasattr(config, "workeroutput"):
        config.workeroutput["plantstub_coverage"] = config.stash[COVERAGE_KEY]
        return
    threshold = config.getoption("plantstub_coverage_fail_under")
    if threshold is not None and config.stash[COVERAGE_KEY]:
        _, covered, total = _coverage_rows(config.stash[COVERAGE_KEY])
        if total and 100.0 * covered / total < threshold and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    wanted = config.getoption("plantstub_coverage") or config.getoption("plantstub_coverage_fail_under") is not None
    tally = config.stash.get(COVERAGE_KEY, {})
    if not wanted or hasattr(config, "workeroutput"):
        return
    terminalreporter.section("plantstub contract coverage")
    if not tally:
        terminalreporter.write_line("no test used the plantstub fixture")
        return
    rows, covered, total = _coverage_rows(tally)
    terminalreporter.write_line(f"  {'operation':<30} {'response':<8} {'calls':>6}")
    for row in rows:
        terminalreporter.write_line(row)
    percent = 100.0 * covered / total if total else 100.0
    terminalreporter.write_line(f"plantstub: {covered} of {total} declared responses exercised ({percent:.1f}%)")
    threshold = config.getoption("plantstub_coverage_fail_under")
    if threshold is not None and percent < threshold:
        terminalreporter.write_line(
            f"plantstub: FAIL: contract coverage {percent:.1f}% is under --plantstub-coverage-fail-under={threshold:g}",
            red=True,
        )
