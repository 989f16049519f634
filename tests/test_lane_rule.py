"""The `lanes` mark by rule (tests/lanerule.py): which tests CI's lanes run besides the fast set."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from tests.lanerule import TESTS, lanes_reason


@given(st.integers())
def _a_search(n: int) -> None:
    assert n == n


def _plain() -> None:
    pass


def _item(folder: str, test: object = _plain) -> SimpleNamespace:
    """What the rule reads of a collected test: its function and its file."""
    return SimpleNamespace(obj=test, path=TESTS / folder / "test_x.py")


def test_the_rule_takes_searches_anywhere_and_every_test_of_the_request_path_and_the_contract():
    assert lanes_reason(_item("integration", _a_search)) == "runs a Hypothesis search"
    assert lanes_reason(_item("server")) == "in tests/server/"
    assert lanes_reason(_item("contract")) == "in tests/contract/"
    assert lanes_reason(_item("integration")) is None  # `plantstub serve` and the plugin: the README's run
    assert lanes_reason(_item("scenarios")) is None


INNER = """
import pytest
from hypothesis import given, strategies as st


def test_fast():
    assert True


@given(st.integers())
def test_a_search(n):
    assert n == n


@pytest.mark.slow
def test_slow_elsewhere():
    assert True


@pytest.mark.slow
@pytest.mark.lanes
def test_slow_and_marked_by_hand():
    assert True
"""


def test_a_lane_runs_the_fast_set_the_searches_and_what_is_marked(pytester):
    pytester.makeconftest('pytest_plugins = ["tests.slowrule", "tests.lanerule"]')
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n"
                     "markers =\n    slow: slow\n    lanes: lanes\n")
    pytester.makepyfile(test_inner=INNER)
    # pytest-aiohttp at its floor (1.0) registers an old-style hook, a deprecation warning this suite makes an error
    lane = pytester.runpytest("-m", "not slow or lanes", "-p", "no:cacheprovider", "-p", "no:aiohttp", "-v")
    lane.assert_outcomes(passed=3, deselected=1)
    lane.stdout.fnmatch_lines_random(["*::test_fast PASSED*", "*::test_a_search PASSED*",
                                      "*::test_slow_and_marked_by_hand PASSED*"])
