"""Waiting for calls: `stub.wait_for_calls(n, ...)` and the admin API's `POST calls/wait`.

A wait looks at the calls kept when it starts once (off the event loop, for the admin API), then the journal hands
it each new call as it is recorded: the new call alone is judged, never the whole journal again, and the waiter is
woken only when the count is reached (or its `$regex` budget is spent). A clear() starts the count afresh.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from array import array
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from multidict import CIMultiDict, CIMultiDictProxy

from plantstub._json import NO_BODY, nests_deeper, shown
from plantstub._regex import RegexBudget, release
from plantstub.errors import CallAssertionError
from plantstub.matching import body_mismatches, path_pattern
from plantstub.pattern import RequestPattern
from plantstub.recording.assertions import Expectation, checked, wait_failure
from plantstub.recording.call import Call, Record
from plantstub.recording.journal import Journal

WAIT_FILTERS = ("method", "path", "headers", "query", "body", "status")
MAX_WAIT_SECONDS = 600.0
WAIT_REGEX_SECONDS = 0.5  # what every `$regex` of one wait may take in all, over every call it judges
MAX_FILTER_DEPTH = 64  # how deep a filter's value may nest (a call's body is matched as deep as the filter goes)
SCAN_BYTES = 256 * 1024  # the kept calls one step of a wait's first look parses, off the event loop


class WaitError(ValueError):
    """A wait that cannot go on: its `$regex` filters spent their budget. The message says which and what to do."""


class WaitOverBudget(WaitError):
    """A wait the session's memory budget cannot hold (its filters, the numbers of the calls it counts)."""


def expectation_of(filters: dict[str, Any], where: str = "") -> Expectation:
    """The filters of wait_for_calls() (those of assert_called) as an Expectation; TypeError naming an unknown one,
    ValueError naming each value that cannot be a criterion, both after `where` (`body.` for the admin API)."""
    unknown = sorted(set(filters) - set(WAIT_FILTERS))
    if unknown:
        raise TypeError(f"{where}{unknown[0]}: unknown filter (known: {', '.join(WAIT_FILTERS)})")
    for name, value in filters.items():
        if nests_deeper(value, MAX_FILTER_DEPTH):
            raise ValueError(f"{where}{name}: nested more than {MAX_FILTER_DEPTH} levels deep (filters may nest "
                             f"{MAX_FILTER_DEPTH} at most)")
    return checked(where, **{"body": NO_BODY, **{k: v for k, v in filters.items() if k != "body" or v is not None}})


def _headers(record: Record) -> Mapping[str, str]:
    headers = record.headers
    return headers if isinstance(headers, (CIMultiDict, CIMultiDictProxy)) else CIMultiDict(headers)


class Waiter:
    """The calls of one wait that match, counted as they come: fed each new record by the journal (`feed`, on the
    thread that records), and the calls kept when the wait began once (`scan`). Thread-safe.

    It keeps the numbers (`seq`) of the matching calls, never the records: a record the journal lets go is let go
    (the journal's bounds and the memory budget hold for a wait too), and the answer is the matching calls the
    journal still keeps. At most `most` numbers (the journal's count bound) are kept, 8 bytes each."""

    def __init__(self, expectation: Expectation, n: int, wake: Callable[[], None], most: int) -> None:
        self.expectation = expectation
        pattern = expectation.pattern
        self._head = RequestPattern(pattern.method, pattern.path, pattern.headers, pattern.query,
                                    status=pattern.status)  # all but the body: judged first, without parsing it
        self._body = pattern.body
        self._matchers = pattern.matchers
        # Method and path first, cheaply: most calls a waiter is handed are not for it.
        self._method = pattern.method
        self._path = None if pattern.path is None else path_pattern(pattern.path)
        self._patterns = pattern.matchers or any(
            not isinstance(value, str) for value in (*pattern.headers.values(), *pattern.query.values()))
        self.n = n
        self.budget = RegexBudget(WAIT_REGEX_SECONDS, "wait")
        self.found = array("q")  # the numbers of the matching calls, as they came (the newest `most` of them)
        self.count = 0  # matching calls since the wait began (or the last clear)
        self._most = max(most, 1)
        self.clears = 0  # clear()s seen: a scan begun before one is out of date
        # Calls counted while pending (a delayed reply): their answer is the same call, not one more.
        self._early: set[int] = set()
        self.done = False  # the count was reached, or the budget spent: the waiter is woken once
        self._wake = wake
        self._lock = threading.Lock()

    def matches(self, record: Record, body: Any = NO_BODY) -> bool:
        """Does `record` match? `body`: its request body parsed, when the caller has it (else parsed here if needed)."""
        if (self._method is not None and self._method != record.method) or (
                self._path is not None and not self._path.match(record.path)):
            return False
        if not self._patterns:
            return self._judge(record, body)
        token = self.budget.use()  # the scan's thread and the recording thread may both be judging
        try:
            return self._judge(record, body)
        finally:
            release(token)

    def _judge(self, record: Record, body: Any) -> bool:
        if self._head.mismatches(record.method, record.path, _headers(record), record.query, NO_BODY,
                                 record.status):
            return False
        if self._body is NO_BODY:
            return True
        if body is NO_BODY:
            body = record.request_body()
        return not body_mismatches(self._body, body, "body", self._matchers)

    def feed(self, record: Record | None, body: Any = NO_BODY) -> None:
        """The journal's listener: one call recorded (or None: the journal was cleared)."""
        if record is None:
            with self._lock:
                del self.found[:]
                self.count = 0
                self.clears += 1
                self._early.clear()
            return
        if self.done:
            return
        matched = self.matches(record, body)
        if not matched and self.budget.spent is None:  # the common case, on the recording thread: nothing to do
            return
        with self._lock:
            if matched:
                self._count(record)
            self._settle()

    def _count(self, record: Record) -> None:
        """Under the lock: one more matching call, unless it was counted already while pending."""
        seq = record.seq
        if seq in self._early:
            if not record.pending:
                self._early.discard(seq)  # answered: nothing more will come of it
            return
        if record.pending:
            self._early.add(seq)
        self.found.append(seq)
        self.count += 1
        if len(self.found) >= 2 * self._most:  # the older ones are out of the journal: let them go
            del self.found[:-self._most]

    def _settle(self) -> None:
        """Under the lock: wake the waiter once, when it has what it waits for or cannot go on."""
        if not self.done and (self.count >= self.n or self.budget.spent is not None):
            self.done = True
            self._wake()

    def scan(self, records: list[Record]) -> list[Record]:
        """Those of `records` that match (the calls kept when the wait began)."""
        return [record for record in records if self.matches(record)]

    def add_scanned(self, found: list[Record], clears: int) -> None:
        """The scan's result, unless a clear() came since it began (`clears`: the count then). A call the scan saw
        pending may have been answered, and counted by feed(), meanwhile: it counts once."""
        with self._lock:
            if clears == self.clears:
                counted = set(self.found) if self.found else ()
                found = [record for record in found if record.seq not in counted]
                self._early.update(record.seq for record in found if record.pending)
                self.found[:0] = array("q", (record.seq for record in found[-self._most:]))
                self.count += len(found)
            self._settle()

    def calls(self, kept: list[Record]) -> list[Call]:
        """The matching calls among `kept` (the journal's records now), oldest first (bodies parsed now)."""
        with self._lock:
            wanted = set(self.found)
        return [record.view() for record in kept if record.seq in wanted]


def _check(n: int, timeout: float) -> None:
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n: {shown(n)} is not a count of calls (0 or more)")
    if not 0 <= timeout <= MAX_WAIT_SECONDS:  # compared as given: an integer of 400 digits is no float
        raise ValueError(f"timeout: {shown(timeout)} is not 0 to {MAX_WAIT_SECONDS:g} seconds")


def _batches(records: list[Record]) -> Iterator[list[Record]]:
    """The records in batches of about SCAN_BYTES (one record at least)."""
    batch: list[Record] = []
    size = 0
    for record in records:
        if batch and size + record.size > SCAN_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(record)
        size += record.size
    if batch:
        yield batch


def _failure(journal: Journal, waiter: Waiter, found: list[Call], timeout: float) -> str:
    """The text of a wait that ended without its calls (the kept calls parsed and compared now: off the loop)."""
    with RegexBudget(WAIT_REGEX_SECONDS, "wait"):  # near misses match the patterns again: bounded as well
        return wait_failure(journal.snapshot(), waiter.expectation, found, waiter.n, timeout)


def _spent(waiter: Waiter, where: str) -> str:
    return f"{where}{waiter.budget.message()}"


def wait_for_calls(journal: Journal, expectation: Expectation, n: int, timeout: float) -> list[Call]:
    """Block this thread until `n` calls match; returns the matching calls the journal still keeps.

    :raises CallAssertionError: after `timeout` seconds, with what arrived and the closest calls; or at once when
        the `$regex` filters spent the wait's budget.
    """
    __tracebackhide__ = True
    _check(n, timeout)
    arrived = threading.Event()
    waiter = Waiter(expectation, n, arrived.set, journal.size)
    kept = journal.listen(waiter.feed)
    try:
        deadline = time.monotonic() + timeout
        clears = waiter.clears
        waiter.add_scanned(waiter.scan(kept), clears)
        arrived.wait(max(0.0, deadline - time.monotonic()))
    finally:
        journal.unlisten(waiter.feed)
    found = waiter.calls(journal.records())
    if waiter.budget.spent is not None:
        raise CallAssertionError(_spent(waiter, "plantstub: wait_for_calls(): "))
    if waiter.count >= n:
        return found
    raise CallAssertionError(_failure(journal, waiter, found, timeout))


async def wait_for_calls_async(journal: Journal, expectation: Expectation, n: int,
                               timeout: float) -> tuple[list[Call], str | None]:
    """On the event loop (the admin API): the matching calls, and the failure text when they did not all arrive.
    The kept calls are judged, and the answer's calls parsed, off the loop.

    :raises WaitError: when the `$regex` filters spent the wait's budget.
    """
    _check(n, timeout)
    loop = asyncio.get_running_loop()
    arrived = asyncio.Event()

    def wake() -> None:  # from the recording thread, or from a thread judging the kept calls
        loop.call_soon_threadsafe(arrived.set)

    waiter = Waiter(expectation, n, wake, journal.size)
    kept = journal.listen(waiter.feed)
    try:
        deadline = loop.time() + timeout
        clears = waiter.clears
        found: list[Record] = []
        for batch in _batches(kept):
            found += await asyncio.to_thread(waiter.scan, batch)
            if waiter.budget.spent is not None:
                break
        waiter.add_scanned(found, clears)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(arrived.wait(), max(0.0, deadline - loop.time()))
    finally:
        journal.unlisten(waiter.feed)
    if waiter.budget.spent is not None:
        raise WaitError(_spent(waiter, ""))
    calls = await asyncio.to_thread(lambda: waiter.calls(journal.records()))
    if waiter.count >= n:
        return calls, None
    return calls, await asyncio.to_thread(_failure, journal, waiter, calls, timeout)
