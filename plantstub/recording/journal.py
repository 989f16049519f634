"""The call journal: every request with its response, bounded in memory, optionally a JSON-lines file."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, NamedTuple

from plantstub._json import NO_BODY

FLUSH_DELAY = 0.1


class Call(NamedTuple):
    """A recorded request and the response it got; `started` is seconds since the epoch.

    Immutable; a NamedTuple because one is built for every request (4x cheaper than a frozen
    dataclass). `headers` is the request's own case-insensitive, read-only header mapping.
    """

    seq: int
    started: float
    method: str
    path: str
    query: dict[str, Any]
    headers: Mapping[str, str]
    body: Any
    valid: bool
    errors: tuple[str, ...]
    scenario: str | None
    rule: str | None
    response: dict[str, Any]
    # Problems on the stub's side, never the consumer's: a scenario reply that broke the contract once
    # rendered, or a plantstub bug. `valid` and `errors` are about the request alone.
    stub_errors: tuple[str, ...] = ()

    @property
    def status(self) -> int | None:
        """The status sent, or None when a fault sent none."""
        return self.response.get("status")

    @property
    def time(self) -> str:
        """When the request arrived, ISO 8601 UTC (as the admin API shows it)."""
        return datetime.fromtimestamp(self.started, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def to_dict(self) -> dict[str, Any]:
        """The call as the admin API and the journal file show it."""
        return {
            "seq": self.seq,
            "time": self.time,
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "headers": {name: _text(value) for name, value in self.headers.items()},
            "body": self.body,
            "valid": self.valid,
            "errors": list(self.errors),
            "scenario": self.scenario,
            "rule": self.rule,
            "response": self.response,
            "stub_errors": list(self.stub_errors),
        }


def _text(value: str) -> str:
    """A header value as JSON can carry it: bytes that were not UTF-8 become U+FFFD."""
    if value.isascii():
        return value
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def response_record(status: int, headers: dict[str, str], body: Any) -> dict[str, Any]:
    return {"status": status, "headers": headers, "body": None if body is NO_BODY else body}


def dumps_call(call: Call) -> str:
    """One JSON line; a body too deep for the encoder is shown as text rather than lost."""
    data = call.to_dict()
    try:
        return json.dumps(data, ensure_ascii=False)
    except (RecursionError, ValueError, TypeError):
        data["body"] = repr(data["body"])[:10_000]
        data["response"] = {**data["response"], "body": repr(data["response"].get("body"))[:10_000]}
        return json.dumps(data, ensure_ascii=False)


class Journal:
    """Keeps the most recent `size` calls; numbers them; appends each to `file` when given.

    Appends come from the event loop thread; readers (admin API, `Stub.calls` in another thread)
    take a snapshot under the same lock, so a read never sees a half-made list.

    A call is numbered when it arrives (`arrive()`) and recorded when it is answered (`append()`), in
    `seq` order. `clear()` starts a new epoch: a call that arrived before it and is answered after it
    (a reply delayed past the client's timeout in the previous test) goes to the file, not to memory,
    so it never shows up among the next test's calls.
    """

    def __init__(self, size: int = 10_000, file: Path | None = None) -> None:
        self.size = size
        self._calls: deque[Call] = deque(maxlen=size)
        self._lock = threading.Lock()
        self._seq = 0
        self.epoch = 0  # +1 on every clear()
        self.recorded = 0  # since the last clear
        self.file = file
        self._sink: IO[str] | None = None
        self._flush_pending = False
        if file is not None:
            file.parent.mkdir(parents=True, exist_ok=True)
            self._sink = open(file, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def arrive(self) -> tuple[int, int]:
        """Number a request as it arrives: its `seq`, and the epoch it belongs to."""
        with self._lock:
            self._seq += 1
            return self._seq, self.epoch

    def append(self, call: Call, epoch: int | None = None) -> bool:
        """Record `call`; False when it arrived in an earlier epoch (kept in the file only)."""
        with self._lock:
            current = epoch is None or epoch == self.epoch
            if current:
                calls = self._calls
                if not calls or calls[-1].seq < call.seq:
                    calls.append(call)
                else:  # answered after a later arrival (a delayed reply): keep seq order
                    at = len(calls)
                    while at > 0 and calls[at - 1].seq > call.seq:
                        at -= 1
                    if len(calls) == calls.maxlen:
                        if at == 0:  # older than everything kept: it is the one the cap drops
                            at = -1
                        else:
                            calls.popleft()
                            at -= 1
                    if at >= 0:
                        calls.insert(at, call)
                self.recorded += 1
        if self._sink is not None:
            self._sink.write(dumps_call(call) + "\n")
            self._schedule_flush()
        return current

    def _schedule_flush(self) -> None:
        # Flush within FLUSH_DELAY rather than per call (a fifth of the throughput): a reader of the
        # file sees every call 0.1 s later at most, and SIGTERM or Ctrl-C flush through close().
        if self._flush_pending:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not in an event loop: nothing would flush later
            self.flush()
            return
        self._flush_pending = True
        loop.call_later(FLUSH_DELAY, self.flush)

    def flush(self) -> None:
        self._flush_pending = False
        if self._sink is not None:
            self._sink.flush()

    @property
    def dropped(self) -> int:
        """Calls pushed out of memory by the size cap since the last clear (still in the file)."""
        return max(0, self.recorded - len(self._calls))

    def snapshot(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def clear(self) -> None:
        """Forget the calls in memory and start a new epoch (calls still in flight will not enter it)."""
        with self._lock:
            self._calls.clear()
            self.recorded = 0
            self.epoch += 1

    def close(self) -> None:
        if self._sink is not None:
            self._sink.flush()
            self._sink.close()
            self._sink = None
