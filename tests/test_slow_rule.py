"""The `slow` mark by rule (tests/slowrule.py): what it follows at collection, and the guard behind it."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import ServeProcess
from tests.slowrule import process_use, unmarked_text


def _runs_python() -> None:
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def _calls_a_helper() -> None:
    _runs_python()


def _serves() -> None:
    ServeProcess("--port", "0").stop()


def _quiet() -> int:
    return sum(range(3))


# In a dict: a test that named these functions itself would be one the rule marks slow.
SAMPLES = {"direct": _runs_python, "helper": _calls_a_helper, "class": _serves, "quiet": _quiet}


def test_process_use_follows_helpers_and_classes_of_the_tests_package():
    assert process_use(SAMPLES["direct"]) == "subprocess"
    assert process_use(SAMPLES["helper"]) == "_runs_python -> subprocess"
    assert process_use(SAMPLES["class"]) == "ServeProcess -> subprocess"
    assert process_use(SAMPLES["quiet"]) is None


def test_unmarked_text_names_the_test_its_processes_and_the_way_out():
    started = [f"subprocess.Popen python -c {n}" for n in range(5)]
    assert unmarked_text("tests/test_x.py::test_y", started) == (
        "plantstub tests: tests/test_x.py::test_y started 5 process(es) but is not marked slow:\n"
        "  subprocess.Popen python -c 0\n  subprocess.Popen python -c 1\n  subprocess.Popen python -c 2\n"
        "  ... 2 more\n"
        "Start it through a fixture or helper in tests/ that the rule follows (tests/slowrule.py), such as "
        "`serve`, or mark the test @pytest.mark.slow.")


INNER = """
import importlib
import subprocess
import sys

import pytest
from hypothesis import given, strategies as st


def test_seen_by_the_rule():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_hidden_from_the_rule():
    importlib.import_module("sub" + "process").run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.slow
def test_hidden_but_marked():
    importlib.import_module("sub" + "process").run([sys.executable, "-c", "pass"], check=True)


@given(st.integers())
def test_a_search(n):
    assert n == n


def test_quiet():
    assert True
"""


def test_the_rule_marks_slow_and_the_guard_fails_an_unmarked_process(pytester):
    pytester.makeconftest('pytest_plugins = ["tests.slowrule"]')
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")  # pytest-asyncio's warning off
    pytester.makepyfile(test_inner=INNER)
    # pytest-aiohttp at its floor (1.0) registers an old-style hook, a deprecation warning this suite makes an error
    fast = pytester.runpytest("-m", "not slow", "-p", "no:cacheprovider", "-p", "no:aiohttp")
    fast.assert_outcomes(passed=2, errors=1, deselected=3)
    fast.stdout.fnmatch_lines([
        "*ERROR at teardown of test_hidden_from_the_rule*",
        "plantstub tests: test_inner.py::test_hidden_from_the_rule started 1 process(es) but is not marked slow:",
        f"  subprocess.Popen {sys.executable} -c pass",
    ])
    everything = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:aiohttp")
    everything.assert_outcomes(passed=5, errors=1)
