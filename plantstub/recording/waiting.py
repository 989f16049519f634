"""Waiting for calls: `stub.wait_for_calls(n, ...)` and the admin API's `POST calls/wait`, woken by the journal
as each call is recorded (no polling)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Any

from plantstub._json import NO_BODY
from plantstub.errors import CallAssertionError
from plantstub.recording.assertions import Expectation, checked, wait_failure
from plantstub.recording.call import Call
from plantstub.recording.journal import Journal

WAIT_FILTERS = ("method", "path", "headers", "query", "body", "status")
MAX_WAIT_SECONDS = 600.0


def expectation_of(filters: dict[str, Any], where: str = "") -> Expectation:
    """The filters of wait_for_calls() (those of assert_called) as an Expectation; TypeError naming an unknown one,
    ValueError naming each value that cannot be a criterion, both after `where` (`body.` for the admin API)."""
    unknown = sorted(set(filters) - set(WAIT_FILTERS))
    if unknown:
        raise TypeError(f"{where}{unknown[0]}: unknown filter (known: {', '.join(WAIT_FILTERS)})")
    return checked(where, **{"body": NO_BODY, **{k: v for k, v in filters.items() if k != "body" or v is not None}})


class CallCounter:
    """The calls of a journal that match an expectation; each call is parsed once, however often it is asked."""

    def __init__(self, journal: Journal, expectation: Expectation) -> None:
        self.journal = journal
        self.expectation = expectation
        self._views: dict[int, tuple[Call, bool]] = {}  # seq -> (the call, matches); seqs never repeat

    def read(self) -> tuple[list[Call], list[Call]]:
        """(every call kept, those that match), oldest first."""
        calls, found, views = [], [], {}
        for record in self.journal.records():
            entry = self._views.get(record.seq)
            if entry is None:
                call = record.view()
                entry = (call, self.expectation.matches(call))
            views[record.seq] = entry
            calls.append(entry[0])
            if entry[1]:
                found.append(entry[0])
        self._views = views  # only what the journal still keeps: a reset lets the rest go
        return calls, found


def _check(n: int, timeout: float) -> None:
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n: {n!r} is not a count of calls (0 or more)")
    if not 0 <= timeout <= MAX_WAIT_SECONDS:
        raise ValueError(f"timeout: {timeout!r} is not 0 to {MAX_WAIT_SECONDS:g} seconds")


def wait_for_calls(journal: Journal, expectation: Expectation, n: int, timeout: float) -> list[Call]:
    """Block this thread until `n` calls match; returns every matching call (n or more).

    :raises CallAssertionError: after `timeout` seconds, with what arrived and the closest calls.
    """
    __tracebackhide__ = True
    _check(n, timeout)
    counter = CallCounter(journal, expectation)
    changed = threading.Event()
    journal.listen(changed.set)
    try:
        deadline = time.monotonic() + timeout
        while True:
            changed.clear()  # before reading: a call recorded meanwhile sets it again, and is seen next round
            calls, found = counter.read()
            left = deadline - time.monotonic()
            if len(found) >= n:
                return found
            if left <= 0:
                break
            changed.wait(left)
    finally:
        journal.unlisten(changed.set)
    raise CallAssertionError(wait_failure(calls, expectation, found, n, timeout))


async def wait_for_calls_async(journal: Journal, expectation: Expectation, n: int, timeout: float) -> tuple[list[Call], str | None]:
    """On the event loop (the admin API): the matching calls, and the failure text when they did not all arrive."""
    _check(n, timeout)
    counter = CallCounter(journal, expectation)
    loop = asyncio.get_running_loop()
    changed = asyncio.Event()

    def wake() -> None:
        loop.call_soon_threadsafe(changed.set)

    journal.listen(wake)
    try:
        deadline = loop.time() + timeout
        while True:
            changed.clear()
            calls, found = counter.read()
            left = deadline - loop.time()
            if len(found) >= n:
                return found, None
            if left <= 0:
                break
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(changed.wait(), left)
    finally:
        journal.unlisten(wake)
    return found, wait_failure(calls, expectation, found, n, timeout)
