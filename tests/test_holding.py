"""The two forms every holder of client bytes uses (plantstub/_budget.py): a Holding owns what it took and gives all of
it back at once; `with budget.hold()` gives its bytes back however the block ends."""

from __future__ import annotations

import pytest

from plantstub._budget import Budget, OverBudget


def test_a_holding_counts_what_it_holds_and_releases_all_of_it():
    stub = Budget(100)
    session = Budget(80, stub)
    rules, calls = session.holding("rules"), session.holding("calls")
    assert rules.take(30) and rules.take(20) and calls.take(10)
    rules.give(5)
    assert (rules.held, calls.held, session.held, stub.held) == (45, 10, 55, 55)
    assert not rules.take(30)  # over the session's 80: nothing is held then
    rules.lost(30)
    assert rules.release() == 45 and rules.release() == 0  # a second release gives nothing back twice
    assert (rules.held, session.figures()["parts"], stub.held) == (0, {"calls": 10}, 10)
    assert session.figures()["dropped"] == {"rules": {"count": 1, "bytes": 30}}


def test_a_hold_gives_back_however_its_block_ends_and_refuses_what_does_not_fit():
    budget = Budget(100)
    with budget.hold("waiters", 60):
        assert budget.figures()["parts"] == {"waiters": 60}
        with pytest.raises(OverBudget) as refused, budget.hold("waiters", 50):
            pass
        assert refused.value.size == 50 and budget.held == 60  # nothing held for the refused one
    assert budget.held == 0
    with pytest.raises(RuntimeError), budget.hold("waiters", 60):
        raise RuntimeError("the wait failed")
    assert (budget.held, budget.figures()["dropped"]) == (0, {"waiters": {"count": 1, "bytes": 50}})
