"""The call journal: every request with its response, bounded in memory by count and by real bytes (its own bound and
the session's Budget), optionally a JSON-lines file that gets every call complete."""

from __future__ import annotations

import heapq
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plantstub._budget import Budget
from plantstub._json import NO_BODY
from plantstub.recording.call import Call, Record
from plantstub.recording.file_line import FileLines
from plantstub.recording.journal_file import JournalFile

DEFAULT_SIZE = 10_000
DEFAULT_BYTES = 64 * 1024 * 1024
Listener = Callable[["Record | None", Any], None]  # (the call recorded, or None on clear(); its parsed body)
KIND = "calls"  # what the journal holds, as its Budget names it
AHEAD = 64 * 1024


def _seq(record: Record) -> int:
    return record.seq


class Journal:
    """Keeps the most recent calls, at most `size` of them, `max_bytes` of memory and what `memory` (the session's
    Budget, kind "calls") lets it hold; numbers them; appends each to `file` when given, naming `session`.

    Appends come from the event loop thread; readers (admin API, `Stub.calls` in another thread)
    take a snapshot under the same lock, so a read never sees a half-made list.

    A call is numbered when it arrives (`arrive()`) and recorded when it is answered (`append()`), in
    `seq` order. A call whose reply is delayed is listed before that (`pend()`), without a response, and its
    answer takes its place. `clear()` starts a new epoch, numbered from 1 again (a test's first call is #1): a
    call that arrived before it and is answered after it
    (a reply delayed past the client's timeout in the previous test) goes to the file, not to memory,
    so it never shows up among the next test's calls.
    """

    def __init__(
        self, size: int = DEFAULT_SIZE, file: Path | None = None, max_bytes: int = DEFAULT_BYTES, flush: str = "batch",
        memory: Budget | None = None, session: str | None = None, given_as: str = "--journal",
    ) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self.memory = Budget(max_bytes) if memory is None else memory
        self._held = self.memory.holding(KIND)  # the calls', the pending ones' and the bytes taken ahead
        # Bytes taken from the budget ahead of the calls that will hold them: most calls then take no lock but the
        # journal's own. At most twice AHEAD (a 64th of a small budget), counted in the budget's `calls`.
        self._chunk = min(AHEAD, self.memory.limit // 64)
        self._ahead = 0
        self.session = session  # the sidecar session's id, which the file's lines carry (None: the default session)
        self._records: deque[Record] = deque()
        self._bytes = 0
        # Calls listed before their answer (a delayed reply), by seq; their bytes are taken from the budget as calls'.
        self._pending: dict[int, Record] = {}
        self._lock = threading.Lock()
        self._seq = 0
        self.epoch = 0  # +1 on every clear()
        self.recorded = 0  # since the last clear
        self.dropped_bytes = 0  # since the last clear
        self.refused = 0  # since the last clear: calls too big to keep even alone (in the file only)
        self.file = None if file is None else JournalFile(file, flush, given_as)
        self._lines = FileLines()  # the file's lines (a session sharing another's file sets `file` after this)
        # Called with each call recorded, and on clear(): how waiters (wait_for_calls) learn without polling.
        self._listeners: tuple[Listener, ...] = ()
        # Another kind short of room (records, rules...) makes the oldest calls go first.
        self.memory.sheds(KIND, self._shed)

    def arrive(self) -> tuple[int, int]:
        """Number a request as it arrives: its `seq`, and the epoch it belongs to."""
        with self._lock:
            self._seq += 1
            return self._seq, self.epoch

    def pend(self, record: Record, epoch: int, body: Any = NO_BODY) -> bool:
        """List a call that has arrived and whose reply is not sent yet (a delay): `record` without a response, which
        readers and waiters see at once and append() replaces. False when it is not listed (a later epoch, no room in
        the memory budget, or as many pending as the journal keeps calls): it then shows once answered, as before."""
        size = record.size
        if not (self._held.take(size) or self._make_room(size)):
            return False
        with self._lock:
            listed = epoch == self.epoch and len(self._pending) < self.size
            if listed:
                self._pending[record.seq] = record
                listeners = self._listeners
        if not listed:
            self._held.give(size)
            return False
        if listeners:
            self._tell(listeners, record, body)
        return True

    def _unpend(self, seq: int) -> None:
        """Under the lock: the pending listing of call `seq` goes (its answer is in, or the call is gone)."""
        record = self._pending.pop(seq, None)
        if record is not None:
            self._held.give(record.size)

    @property
    def pending(self) -> int:
        """How many calls are listed and not answered yet."""
        return len(self._pending)

    def append(self, record: Record, epoch: int | None = None, body: Any = NO_BODY, response_body: Any = NO_BODY) -> bool:
        """Record a call; False when it arrived in an earlier epoch (kept in the file only).

        `body` and `response_body` are the parsed bodies when the caller has them: the file line is
        written from them instead of parsing the bytes again.
        """
        told: tuple[Listener, ...] | None = None
        with self._lock:
            now = self.epoch
            current = epoch is None or epoch == now
            if current:
                self.recorded += 1
                if record.size <= self.max_bytes:  # the usual call: kept with bytes taken ahead, under this one lock
                    told = self._kept_ahead(record, record.size)
        if current:
            if told is None:
                told = self._keep(record, now)
            listeners = told if told is not None else self._listeners
            if listeners:
                self._tell(listeners, record, body)
        if current and self._pending:  # kept, its listing went with _insert(); not kept (no room): now
            with self._lock:
                if self.epoch == now:  # numbers restart in a new epoch: a late answer must not unlist a new call
                    self._unpend(record.seq)
        if self.file is not None:  # a reset numbers calls from 1 again: (session, epoch, seq) names a call in the file
            self.file.write(self._lines.line(record, body, response_body, self.session, now if current else epoch))
        return current

    def _keep(self, record: Record, epoch: int) -> tuple[Listener, ...] | None:
        """Keep `record` in memory, the oldest calls going first to make room; not at all when it cannot fit. The
        listeners as they were when it went in (so a listener gets exactly the calls listen() did not), or None."""
        size = record.size
        if size > self.max_bytes:
            self._refuse(size)
            return None
        with self._lock:
            kept = self._kept_ahead(record, size)
            if kept is not None:
                return kept
            need = size - self._ahead
        # From the session's budget and the stub's, outside the journal's lock (taking may make other kinds shed under
        # their own locks): what is missing and some bytes ahead, or just what is missing, or room made for it.
        held, ahead = self._held, self._chunk
        if held.take(need + ahead, shed=False):  # bytes ahead only when nothing recorded must go for them
            got = need + ahead
        elif held.take(need) or self._make_room(need):
            got = need
        else:
            self._refuse(size)
            return None
        with self._lock:
            self._ahead += got
            if epoch != self.epoch:  # cleared meanwhile (from another thread): the call belongs to no epoch kept
                return ()
            if self._ahead >= size:
                self._ahead -= size
                self._insert(record, size)
                return self._listeners
        self._refuse(size)  # another kind had our bytes shed meanwhile: the room is gone
        return None

    def _kept_ahead(self, record: Record, size: int) -> tuple[Listener, ...] | None:
        """Under the lock: keep `record` within the journal's own bounds (its oldest calls going first) with bytes
        taken from the budget ahead; the listeners then, or None when too few bytes are ahead (nothing kept)."""
        records = self._records
        if len(records) >= self.size or self._bytes + size > self.max_bytes:  # within the journal's own bounds
            self._drop_oldest(self._bytes + size - self.max_bytes, len(records) - self.size + 1)
        if self._ahead < size:
            return None
        self._ahead -= size
        self._insert(record, size)
        return self._listeners

    def _insert(self, record: Record, size: int) -> None:
        if self._pending:  # the answer of a call listed while pending: in its place, at once for readers
            self._unpend(record.seq)
        records = self._records
        if not records or records[-1].seq < record.seq:
            records.append(record)
        else:  # answered after a later arrival (a delayed reply): keep seq order
            at = len(records)
            while at > 0 and records[at - 1].seq > record.seq:
                at -= 1
            records.insert(at, record)
        self._bytes += size

    def _make_room(self, need: int) -> bool:
        """Let our own oldest calls go until the budget takes `need` more bytes; False (none let go) when it would not
        even with every call gone: the room is held by what cannot be dropped."""
        memory = self.memory
        while True:
            with self._lock:
                if not self._could_fit(need):
                    return False
                freed = self._drop_oldest(max(memory.held + need - memory.limit, 1), room=True)
            if not freed:
                return False
            if self._held.take(need):
                return True

    def _drop_oldest(self, short: int, count: int = 1, room: bool = False) -> int:
        """Let go of the oldest calls, at least `count` of them and `short` bytes (fewer when there are no more); the
        bytes freed. Called under the lock. Dropped for the budget's room (`room`), they go back to it; for the
        journal's own bounds, they are kept ahead for the next call (a full journal drops one call a call: the
        budget is not asked each time). Short of bytes, they are counted lost."""
        records, freed, gone_count = self._records, 0, 0
        while records and (gone_count < count or freed < short):
            freed += records.popleft().size
            gone_count += 1
        if gone_count:
            self._bytes -= freed
            self.dropped_bytes += freed
            if short > 0:
                self._held.lost(freed, gone_count)
            if room:
                self._held.give(freed)
            else:
                self._ahead += freed
                if self._ahead > 2 * self._chunk:
                    self._held.give(self._ahead - self._chunk)
                    self._ahead = self._chunk
        return freed

    def _could_fit(self, size: int) -> bool:
        """Whether `size` bytes would fit in the budget and its parents once every kept call is gone."""
        budget: Budget | None = self.memory
        while budget is not None:
            if budget.held - self._bytes + size > budget.limit:
                return False
            budget = budget.parent
        return True

    def _shed(self, short: int) -> int:
        """Free at least `short` bytes for another kind: the bytes taken ahead, then the oldest calls (the Budget's
        shed)."""
        with self._lock:
            ahead, self._ahead = self._ahead, 0
            if ahead:
                self._held.give(ahead)
            return ahead + (self._drop_oldest(short - ahead, 0, room=True) if ahead < short else 0)

    def _refuse(self, size: int) -> None:
        """The newest call alone is over what memory may hold: it is not kept (the file still gets it), and counted."""
        with self._lock:
            self.refused += 1
            self.dropped_bytes += size
        self._held.lost(size)

    def listen(self, listener: Listener) -> list[Record]:
        """Call `listener(record, body)` (from the recording thread) after every call recorded from now on, and
        `listener(None, NO_BODY)` on clear(); returns the records kept until now (each call is in exactly one of
        the two). `body` is the request body parsed when the recorder had it, else NO_BODY. A listener must be
        quick and thread-safe: it runs on the event loop."""
        with self._lock:
            self._listeners = (*self._listeners, listener)
            return self._listed()

    def unlisten(self, listener: Listener) -> None:
        with self._lock:
            listeners = list(self._listeners)
            if listener in listeners:
                listeners.remove(listener)
            self._listeners = tuple(listeners)

    @staticmethod
    def _tell(listeners: tuple[Listener, ...], record: Record | None, body: Any) -> None:
        for listener in listeners:  # a tuple, replaced whole: safe while another thread listens
            try:
                listener(record, body)
            except Exception:  # noqa: BLE001 - a waiter gone wrong must never cost a call its record
                continue

    @property
    def dropped(self) -> int:
        """Calls pushed out of memory by the bounds since the last clear (still in the file)."""
        return max(0, self.recorded - self.kept)

    @property
    def kept(self) -> int:
        """How many calls are in memory."""
        return len(self._records)

    @property
    def kept_bytes(self) -> int:
        """The bytes of memory the kept calls take (what their records count)."""
        return self._bytes

    @property
    def taken(self) -> int:
        """The bytes the journal holds of its budget: its calls' and those taken ahead for the next ones."""
        return self._bytes + self._ahead

    def records(self) -> list[Record]:
        """The kept records, pending ones among them, oldest first (a snapshot)."""
        with self._lock:
            return self._listed()

    def _listed(self) -> list[Record]:
        """Under the lock: the kept records and the pending ones, in `seq` order."""
        if not self._pending:
            return list(self._records)
        return list(heapq.merge(self._records, sorted(self._pending.values(), key=_seq), key=_seq))

    def snapshot(self) -> list[Call]:
        """The kept calls as readers see them, oldest first (bodies parsed now)."""
        return [record.view() for record in self.records()]

    def clear(self) -> None:
        """Forget the calls in memory and start a new epoch, numbered from 1 again (calls still in flight will not
        enter it: they keep the number and epoch they arrived with)."""
        with self._lock:
            self._seq = 0
            self._records.clear()
            held, self._bytes, self._ahead = self._bytes + self._ahead, 0, 0
            held += sum(record.size for record in self._pending.values())  # answered later: the file only
            self._pending.clear()
            self.recorded = 0
            self.dropped_bytes = 0
            self.refused = 0
            self.epoch += 1
            # What the journal counts, not release(): bytes a _keep() took outside the lock join _ahead after this.
            self._held.give(held)
            listeners = self._listeners
        if listeners:
            self._tell(listeners, None, NO_BODY)

    @property
    def lost(self) -> int:
        """Calls the journal file could not take (0 without a file)."""
        return 0 if self.file is None else self.file.lost

    def problems(self) -> list[str]:
        """Why calls are being lost right now, for health (empty when nothing is)."""
        return [] if self.file is None else self.file.problems()

    def flush(self) -> None:
        if self.file is not None:
            self.file.flush()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
