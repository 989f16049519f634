"""The call journal: every request with its response, bounded in memory by count and bytes, optionally a
JSON-lines file that gets every call complete."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plantstub._json import NO_BODY
from plantstub.recording.call import Call, Record, dumps_call
from plantstub.recording.journal_file import JournalFile

DEFAULT_SIZE = 10_000
DEFAULT_BYTES = 64 * 1024 * 1024
Listener = Callable[["Record | None", Any], None]  # (the call recorded, or None on clear(); its parsed body)


class Journal:
    """Keeps the most recent calls, at most `size` of them and about `max_bytes` of memory; numbers them;
    appends each to `file` when given.

    Appends come from the event loop thread; readers (admin API, `Stub.calls` in another thread)
    take a snapshot under the same lock, so a read never sees a half-made list.

    A call is numbered when it arrives (`arrive()`) and recorded when it is answered (`append()`), in
    `seq` order. `clear()` starts a new epoch: a call that arrived before it and is answered after it
    (a reply delayed past the client's timeout in the previous test) goes to the file, not to memory,
    so it never shows up among the next test's calls.
    """

    def __init__(
        self, size: int = DEFAULT_SIZE, file: Path | None = None, max_bytes: int = DEFAULT_BYTES, flush: str = "batch"
    ) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self._records: deque[Record] = deque()
        self._bytes = 0
        self._lock = threading.Lock()
        self._seq = 0
        self.epoch = 0  # +1 on every clear()
        self.recorded = 0  # since the last clear
        self.dropped_bytes = 0  # since the last clear
        self.file = None if file is None else JournalFile(file, flush)
        # Called with each call recorded, and on clear(): how waiters (wait_for_calls) learn without polling.
        self._listeners: tuple[Listener, ...] = ()

    def arrive(self) -> tuple[int, int]:
        """Number a request as it arrives: its `seq`, and the epoch it belongs to."""
        with self._lock:
            self._seq += 1
            return self._seq, self.epoch

    def append(self, record: Record, epoch: int | None = None, body: Any = NO_BODY, response_body: Any = NO_BODY) -> bool:
        """Record a call; False when it arrived in an earlier epoch (kept in the file only).

        `body` and `response_body` are the parsed bodies when the caller has them: the file line is
        written from them instead of parsing the bytes again.
        """
        with self._lock:
            current = epoch is None or epoch == self.epoch
            if current:
                self._insert(record)
                self.recorded += 1
            listeners = self._listeners  # read with the insert: a listener gets exactly the calls listen() did not
        if current and listeners:
            self._tell(listeners, record, body)
        if self.file is not None:
            self.file.write(dumps_call(record.view(body, response_body)) + b"\n")
        return current

    def _insert(self, record: Record) -> None:
        records = self._records
        if not records or records[-1].seq < record.seq:
            records.append(record)
        else:  # answered after a later arrival (a delayed reply): keep seq order
            at = len(records)
            while at > 0 and records[at - 1].seq > record.seq:
                at -= 1
            records.insert(at, record)
        self._bytes += record.size
        # The oldest go first; the newest call always stays, whatever its size.
        while len(records) > 1 and (len(records) > self.size or self._bytes > self.max_bytes):
            gone = records.popleft()
            self._bytes -= gone.size
            self.dropped_bytes += gone.size

    def listen(self, listener: Listener) -> list[Record]:
        """Call `listener(record, body)` (from the recording thread) after every call recorded from now on, and
        `listener(None, NO_BODY)` on clear(); returns the records kept until now (each call is in exactly one of
        the two). `body` is the request body parsed when the recorder had it, else NO_BODY. A listener must be
        quick and thread-safe: it runs on the event loop."""
        with self._lock:
            self._listeners = (*self._listeners, listener)
            return list(self._records)

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
        """About how many bytes of memory the kept calls take."""
        return self._bytes

    def records(self) -> list[Record]:
        """The kept records, oldest first (a snapshot)."""
        with self._lock:
            return list(self._records)

    def snapshot(self) -> list[Call]:
        """The kept calls as readers see them, oldest first (bodies parsed now)."""
        return [record.view() for record in self.records()]

    def clear(self) -> None:
        """Forget the calls in memory and start a new epoch (calls still in flight will not enter it)."""
        with self._lock:
            self._records.clear()
            self._bytes = 0
            self.recorded = 0
            self.dropped_bytes = 0
            self.epoch += 1
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
