"""The `slow` mark by rule: tests that start processes or venvs, run an inner pytest session or a Hypothesis search.

A pytest plugin (tests/conftest.py loads it). At collection it marks `slow` every test whose code, its fixtures' code
or the test helpers they call (followed through tests/) use subprocess, multiprocessing, venv or pty, every test
that uses `pytester`, and every Hypothesis test. While each test runs, an audit hook sees every process started;
a test not marked `slow` that started one fails at teardown, naming the command, so the rule cannot drift.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator
from pathlib import Path
from types import CodeType
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent
PROCESS_MODULES = frozenset({"subprocess", "multiprocessing", "venv", "pty"})
INNER_SESSIONS = frozenset({"pytester", "testdir"})  # fixtures that run a pytest session inside the test
# The audit events of starting a process (https://docs.python.org/3/library/audit_events.html).
PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.fork", "os.forkpty", "os.posix_spawn",
                            "os.exec", "os.spawn", "pty.spawn"})

_started: list[str] = []  # processes started since the running test's setup began
_watching = False


def _codes(code: CodeType) -> Iterator[CodeType]:
    """`code` and the code of every function, lambda and comprehension defined inside it."""
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _codes(const)


def _ours(obj: Any) -> bool:
    """Whether `obj` was written in tests/ (so the rule follows its code)."""
    code = getattr(obj, "__code__", None)
    return code is not None and Path(code.co_filename).resolve().is_relative_to(TESTS)


def _process_use(func: Any, seen: set[CodeType]) -> str | None:
    """How `func` starts a process, as the chain of names that leads to it (`ServeProcess -> subprocess`), or None."""
    func = inspect.unwrap(func)
    code = getattr(func, "__code__", None)
    if code is None or code in seen:
        return None
    seen.add(code)
    names = getattr(func, "__globals__", {})
    for inner in _codes(code):
        for name in inner.co_names:
            if name in PROCESS_MODULES:  # `import subprocess` in the function, or the module's `subprocess.run`
                return name
            found = _value_use(names.get(name), seen)
            if found:
                return f"{name} -> {found}"
    return None


def _value_use(value: Any, seen: set[CodeType]) -> str | None:
    """How a global a test's code names starts a process: a process module, one of its functions, or our helper."""
    if inspect.ismodule(value):
        return value.__name__ if value.__name__.split(".")[0] in PROCESS_MODULES else None
    if str(getattr(value, "__module__", "")).split(".")[0] in PROCESS_MODULES:
        return str(value.__module__)
    if inspect.isclass(value) and value.__module__.startswith("tests"):
        for member in vars(value).values():
            found = _process_use(member, seen) if _ours(member) else None
            if found:
                return found
        return None
    return _process_use(value, seen) if inspect.isfunction(value) and _ours(value) else None


_uses: dict[CodeType, str | None] = {}  # a parametrized test's cases, and tests sharing fixtures, are read once


def process_use(func: Any) -> str | None:
    """How `func`, or what of tests/ it names, starts a process (`ServeProcess -> subprocess`), or None."""
    code = getattr(inspect.unwrap(func), "__code__", None)
    if code is None:
        return None
    if code not in _uses:
        _uses[code] = _process_use(func, set())
    return _uses[code]


def slow_reason(item: pytest.Item) -> str | None:
    """Why the rule marks `item` slow (a process, an inner session, a Hypothesis search), or None."""
    fixtures = set(getattr(item, "fixturenames", ()))
    if fixtures & INNER_SESSIONS:
        return "runs an inner pytest session (pytester)"
    test = getattr(item, "obj", None)
    if getattr(test, "is_hypothesis_test", False):
        return "runs a Hypothesis search"
    found = process_use(test)
    if found:
        return f"starts a process: {found}"
    info = getattr(item, "_fixtureinfo", None)  # the fixtures' definitions: our own are read as the test is
    for name in sorted(fixtures):
        for fixturedef in (info.name2fixturedefs.get(name, ()) if info else ()):
            found = process_use(fixturedef.func) if _ours(fixturedef.func) else None
            if found:
                return f"starts a process: fixture {name} -> {found}"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `slow` every test the rule finds (see the module docstring)."""
    for item in items:
        reason = slow_reason(item)
        if reason:
            item.add_marker(pytest.mark.slow(reason=reason))


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # Runs on every audited event of the process: return at once unless it starts a process during a test.
    if _watching and event in PROCESS_EVENTS:
        line = f"{event} {_shown(args)}"
        if event.startswith("os.") and _started and _started[-1] == "subprocess.Popen " + line.partition(" ")[2]:
            return  # the means subprocess.Popen used (os.posix_spawn from Python 3.13 on): one process, once
        _started.append(line)


def _shown(args: tuple[Any, ...]) -> str:
    """The command of a process-start event, short (subprocess.Popen's args are executable, args, cwd, env)."""
    shown = args[1] if len(args) > 1 and isinstance(args[1], (list, tuple, str, bytes)) else args[:1]
    text = " ".join(map(str, shown)) if isinstance(shown, (list, tuple)) else str(shown)
    return text if len(text) <= 120 else text[:117] + "..."


sys.addaudithook(_audit)  # for good: an audit hook cannot be removed, so it only records while `_watching`


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Watch for processes from the test's setup to its teardown."""
    global _watching
    _started.clear()
    _watching = True
    try:
        return (yield)
    finally:
        _watching = False


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    """Fail the teardown of a test that started a process without being marked slow."""
    report: pytest.TestReport = yield
    if call.when == "teardown" and _started and item.get_closest_marker("slow") is None:
        report.outcome = "failed"
        report.longrepr = unmarked_text(item.nodeid, _started)
    return report


def unmarked_text(nodeid: str, started: list[str]) -> str:
    """The failure of a test that started processes without the `slow` mark."""
    listed = "".join(f"\n  {line}" for line in started[:3]) + (f"\n  ... {len(started) - 3} more" if len(started) > 3 else "")
    return (f"plantstub tests: {nodeid} started {len(started)} process(es) but is not marked slow:{listed}\n"
            "Start it through a fixture or helper in tests/ that the rule follows (tests/slowrule.py), such as "
            "`serve`, or mark the test @pytest.mark.slow.")
