"""Budget: bytes held by kind against a limit and the parent's; shedding other kinds before refusing."""

from __future__ import annotations

from plantstub._budget import Budget


def test_take_within_the_limit_and_the_parents() -> None:
    stub = Budget(100)
    one, two = Budget(80, stub), Budget(80, stub)
    assert one.take("calls", 60)
    assert not two.take("calls", 60)  # the stub's 100 would be passed
    assert two.take("records", 40)
    assert stub.figures()["parts"] == {"calls": 60, "records": 40}
    one.give("calls", 60)
    assert stub.held == 40 and one.held == 0


def test_other_kinds_shed_before_a_take_is_refused() -> None:
    budget = Budget(100)
    kept = [30, 30, 30]

    budget.sheds("calls", _oldest_first(budget, kept))
    for size in kept:
        assert budget.take("calls", size)
    assert budget.take("records", 50)  # two calls go, oldest first
    assert kept == [30]
    figures = budget.figures()
    assert figures["held"] == 80
    assert figures["dropped"] == {"calls": {"count": 2, "bytes": 60}}
    assert not budget.take("calls", 30)  # a kind never sheds itself: its holder drops its own oldest


def test_a_released_budget_holds_nothing_and_frees_the_parent() -> None:
    stub = Budget(100)
    session = Budget(100, stub)
    assert session.take("calls", 70)
    session.release()
    assert stub.held == 0
    session.give("calls", 70)  # a holder letting go after the end counts nothing twice
    assert stub.held == 0
    assert not session.take("calls", 1)
    assert stub.take("calls", 100)


def test_lost_counts_in_the_parent_too() -> None:
    stub = Budget(100)
    session = Budget(50, stub)
    session.lost("deliveries", 10, count=2)
    assert stub.figures()["dropped"] == {"deliveries": {"count": 2, "bytes": 10}}
    assert not session.fits(60) and session.fits(50)


def test_what_a_session_dropped_stays_counted_in_the_stubs_after_it_ends() -> None:
    """A session's drops are read from it by the stub's figures, and folded into the stub's own when it ends; one it
    counts after that is the stub's."""
    stub = Budget(100)
    ended, live = Budget(50, stub), Budget(50, stub)
    ended.lost("calls", 30)
    live.lost("calls", 5)
    stub.lost("records", 7)
    assert stub.figures()["dropped"] == {"calls": {"count": 2, "bytes": 35}, "records": {"count": 1, "bytes": 7}}
    ended.release()
    ended.lost("calls", 1)
    assert stub.figures()["dropped"] == {"calls": {"count": 3, "bytes": 36}, "records": {"count": 1, "bytes": 7}}
    assert live.figures()["dropped"] == {"calls": {"count": 1, "bytes": 5}}


def test_another_sessions_droppable_kinds_shed_when_the_stubs_budget_is_short() -> None:
    stub = Budget(100)
    first, second = Budget(100, stub), Budget(50, stub)
    kept = [30, 30, 30]

    first.sheds("calls", _oldest_first(first, kept))
    for size in kept:
        assert first.take("calls", size)
    assert second.take("calls", 40)  # the first session's oldest call goes: the stub's budget was short
    assert (kept, first.held, second.held, stub.held) == ([30, 30], 60, 40, 100)
    assert not second.take("records", 20)  # its own budget is short: other sessions keep theirs
    assert kept == [30, 30]
    first.release()  # an ended session's holders shed nothing more
    assert stub._sheds == []


def _oldest_first(budget: Budget, kept: list[int]):
    """A shed of calls of these sizes held in `budget`: the oldest go first, each given back and counted lost."""

    def shed(short: int) -> int:
        freed = 0
        while kept and freed < short:
            size = kept.pop(0)
            budget.give("calls", size)
            budget.lost("calls", size)
            freed += size
        return freed

    return shed
