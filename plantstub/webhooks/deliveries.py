"""Delivery (one webhook or callback sent, with what the receiver answered), the bounded DeliveryLog,
and the text of failed delivery assertions."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from plantstub._json import NO_BODY, json_bytes, shown
from plantstub.errors import CallAssertionError
from plantstub.matching import body_mismatches

DEFAULT_LOG_SIZE = 10_000
DEFAULT_LOG_BYTES = 64 * 2**20  # the bodies the log keeps, as JSON: beyond it the oldest deliveries go (`dropped`)


@dataclass(frozen=True, slots=True)
class Delivery:
    """One webhook or callback as sent: the admin API and `stub.deliveries` show these fields."""

    seq: int
    time: str  # ISO 8601 UTC, when it was queued
    name: str
    url: str
    body: Any
    attempts: int
    status: int | None  # the receiver's last answer; None when none came
    error: str | None
    valid: bool  # the receiver answered a status the webhook declares

    def as_dict(self) -> dict[str, Any]:
        # Not dataclasses.asdict(): it copies the body, recursively (a body nested 500 levels deep overflows it)
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class DeliveryLog:
    """The deliveries of a stub, oldest first: the last `size`, holding at most `max_bytes` of bodies (as JSON),
    are kept, the older counted in `dropped`, as the journal does with calls; `lost` counts those never sent."""

    def __init__(self, size: int = DEFAULT_LOG_SIZE, max_bytes: int = DEFAULT_LOG_BYTES) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self.items: deque[tuple[Delivery, int]] = deque()  # each with its body's size
        self.bytes = 0
        self.dropped = 0
        self.next_seq = 1
        self.recorded = 0
        self.lost = 0  # never sent: the queue was full (see health `problems`)
        self.epoch = 0  # one more on each clear(): a delivery decided before it is not recorded after it

    def number(self) -> int:
        seq = self.next_seq
        self.next_seq += 1
        return seq

    def add(self, delivery: Delivery, epoch: int) -> None:
        if epoch != self.epoch:  # decided before a reset: it belongs to the test before, not to this one
            return
        size = len(json_bytes(delivery.body))
        self.items.append((delivery, size))
        self.bytes += size
        self.recorded += 1
        while len(self.items) > self.size or (self.bytes > self.max_bytes and len(self.items) > 1):
            self.bytes -= self.items.popleft()[1]
            self.dropped += 1

    def snapshot(self) -> list[Delivery]:
        return [delivery for delivery, _ in self.items]

    def clear(self) -> int:
        count = len(self.items)
        self.items.clear()
        self.bytes = 0
        self.epoch += 1
        return count

    def problems(self, cap: int) -> list[str]:
        if not self.lost:
            return []
        return [f"webhooks: {self.lost} deliveries were not sent: more than {cap} were waiting to be sent"]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun[:-1]}ies"


def _line(d: Delivery) -> str:
    answer = f"{d.status}" if d.status is not None else "no answer"
    tail = f"  {d.error}" if d.error else ""
    return f"  #{d.seq} {d.name} -> {d.url}  {answer}  attempts {d.attempts}  body {shown(d.body)}{tail}"


def matching(deliveries: list[Delivery], name: str | None, body: Any) -> list[Delivery]:
    return [d for d in deliveries
            if (name is None or d.name == name) and (body is NO_BODY or not body_mismatches(body, d.body))]


def assert_delivered(deliveries: list[Delivery], name: str | None, body: Any, times: int | None) -> list[Delivery]:
    """The deliveries like this; CallAssertionError listing what was sent when there are not `times` of them
    (at least one when None)."""
    __tracebackhide__ = True
    found = matching(deliveries, name, body)
    if (times is None and found) or (times is not None and len(found) == times):
        return found
    what = name if name is not None else "any webhook"
    wanted = f" with body {shown(body)}" if body is not NO_BODY else ""
    count = 1 if times is None else times
    lines = [f"plantstub: expected {'at least ' if times is None else ''}{_count(count, 'delivery')} of {what}"
             f"{wanted}; got {len(found)}."]
    if deliveries:
        lines.append(f"{_count(len(deliveries), 'delivery')} recorded:")
        lines.extend(_line(d) for d in deliveries[-10:])
    else:
        lines.append("no deliveries recorded (is a receiver subscribed? see stub.subscribe() and --webhook)")
    raise CallAssertionError("\n".join(lines))


def now() -> tuple[float, str]:
    at = time.time()
    return at, iso(at)


class DeliveryChecks:
    """`wait_for_deliveries` and `assert_delivered` over `self.deliveries`: one code path, so the in-process stub
    and one driven over the admin API wait and fail alike. Each gives `deliveries` and `_pending_deliveries()`."""

    _poll = 0.01  # seconds between looks while waiting

    @property
    def deliveries(self) -> list[Delivery]:
        raise NotImplementedError

    def _pending_deliveries(self) -> int:
        raise NotImplementedError

    def wait_for_deliveries(self, n: int, timeout: float = 5.0) -> list[Delivery]:
        """Wait until at least `n` deliveries are recorded (sent and answered, or given up on); returns them.

        :raises CallAssertionError: when fewer arrived within `timeout` seconds, listing those that did.
        """
        __tracebackhide__ = True
        deadline = time.monotonic() + timeout
        while True:
            found = self.deliveries
            if len(found) >= n or time.monotonic() >= deadline:
                break
            time.sleep(self._poll)
        if len(found) < n:
            pending = self._pending_deliveries()
            shown_found = "".join(f"\n  #{d.seq} {d.name} -> {d.url}  {d.status}" for d in found)
            raise CallAssertionError(f"plantstub: expected {n} deliveries within {timeout:g} s; got {len(found)}"
                                     f" ({pending} still being sent).{shown_found}")
        return found

    def assert_delivered(self, name: str | None = None, body: Any = NO_BODY, times: int | None = None) -> list[Delivery]:
        """Assert webhooks like this were sent: `times` exactly, or at least one when None.

        :param name: the webhook's (or callback's) name; None: any.
        :param body: partial JSON: each key given must equal the sent body's.
        :raises CallAssertionError: listing the deliveries recorded.
        """
        __tracebackhide__ = True
        return assert_delivered(self.deliveries, name, body, times)
