"""Delivery (one webhook or callback sent, with what the receiver answered), the bounded DeliveryLog that keeps
them compact (`Sent`: the body as bytes), and the text of failed delivery assertions."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any, NamedTuple

from plantstub._budget import Budget
from plantstub._clock import iso_time
from plantstub._fields import ByFields
from plantstub._json import NO_BODY, body_for_record, shown
from plantstub._words import plural
from plantstub.errors import CallAssertionError
from plantstub.matching import body_mismatches
from plantstub.webhooks.ahead import Ahead

DEFAULT_LOG_SIZE = 10_000
DEFAULT_LOG_BYTES = 64 * 2**20  # the deliveries the log keeps, in bytes: beyond it the oldest go (`dropped`)
KIND = "deliveries"  # the memory budget's name for what the log holds


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class Delivery(ByFields):
    """One webhook or callback as sent: the admin API and `stub.deliveries` show these fields."""

    seq: int
    time: str  # ISO 8601 UTC, when it was queued
    name: str
    url: str  # as shown: a password in it reads `***`
    body: Any
    attempts: int
    status: int | None  # the receiver's last answer; None when none came
    error: str | None
    valid: bool  # the receiver answered a status the webhook declares

    def as_dict(self) -> dict[str, Any]:
        # Not dataclasses.asdict(): it copies the body, recursively (a body nested 500 levels deep overflows it)
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


# What one kept delivery costs beside its body, URL, name and error: the record, its time string, the bytes object's
# header, the deque's slot (~250 B by tracemalloc; ~550 B of RSS growth per delivery kept, with 62-byte bodies).
SENT_OVERHEAD = 350


class Sent(NamedTuple):
    """A delivery as the log keeps it: the body as the JSON bytes sent, parsed only when read (`delivery()`). A
    NamedTuple: one is made for every delivery, on the event loop."""

    seq: int
    at: float  # when it was queued, seconds since the epoch (written as text only when shown)
    name: str
    url: str  # as shown
    payload: bytes
    attempts: int
    status: int | None
    error: str | None
    valid: bool

    @property
    def size(self) -> int:
        """The bytes it holds, about (what the delivery log takes from the session's memory budget)."""
        return len(self.payload) + len(self.url) + len(self.name) + len(self.error or "") + SENT_OVERHEAD

    def delivery(self) -> Delivery:
        return Delivery(self.seq, iso_time(self.at), self.name, self.url, body_for_record(self.payload), self.attempts,
                        self.status, self.error, self.valid)


class DeliveryLog:
    """The deliveries of a stub, oldest first: the last `size`, holding at most `max_bytes`, are kept, the older
    counted in `dropped`, as the journal does with calls. Each is held in bytes taken from `memory` ("deliveries"),
    whose other kinds may make it drop its oldest. `lost_*` count those never sent since the last clear()."""

    def __init__(self, size: int = DEFAULT_LOG_SIZE, max_bytes: int = DEFAULT_LOG_BYTES,
                 memory: Budget | None = None) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self.held: Ahead | None = None  # the bytes of the deliveries kept, taken from the budget ahead
        if memory is not None:
            self.held = Ahead(memory, KIND)
        self.items: deque[Sent] = deque()
        self.bytes = 0
        self.dropped = 0
        self.next_seq = 1
        self.recorded = 0  # since the last clear()
        self.lost_full = 0  # never sent: more than the queue's cap were waiting
        self.lost_memory = 0  # never sent: the memory budget had no room for it while it waited
        self.epoch = 0  # one more on each clear(): a delivery decided before it is not recorded after it
        if memory is not None:
            memory.sheds(KIND, self._shed)

    @property
    def lost(self) -> int:
        return self.lost_full + self.lost_memory

    def number(self) -> int:
        seq = self.next_seq
        self.next_seq += 1
        return seq

    def add(self, sent: Sent, epoch: int, waiting: Ahead | None = None, waited: int = 0, size: int = 0) -> None:
        """Keep `sent`, decided in `epoch` (one decided before a reset is not kept); `waiting` holds the `waited` bytes
        it held while it waited to be sent (sender.py's Ahead, sharing our Ahead's lock): they go back first. `size`:
        sent.size, when the caller has it (0: worked out here)."""
        if not size:
            size = sent.size
        items = self.items
        held = self.held
        if waiting is not None:
            if (held is not None and epoch == self.epoch and len(items) < self.size
                    and self.bytes + size <= self.max_bytes and waiting.hand_over(waited, held, size)):
                # the usual: nothing to drop, and the bytes handed over in one lock round trip (a give() and a take())
                self.recorded += 1
                items.append(sent)
                self.bytes += size
                return
            waiting.give(waited)
        if epoch != self.epoch:  # decided before a reset: it belongs to the test before, not to this one
            return
        self.recorded += 1
        while items and (len(items) >= self.size or self.bytes + size > self.max_bytes):
            self._drop_oldest()
        if held is not None:
            while not held.take(size):
                if not items:  # bigger than the room there is: not kept, and counted
                    self.dropped += 1
                    held.lost(size)
                    return
                held.lost(self._drop_oldest())  # its bytes are the spare the next take() finds
        items.append(sent)
        self.bytes += size

    def _drop_oldest(self) -> int:
        size = self.items.popleft().size
        self.bytes -= size
        self.dropped += 1
        if self.held is not None:
            self.held.give(size)
        return size

    def _shed(self, short: int) -> int:
        """Free at least `short` bytes for another kind: the spare taken ahead, then the oldest deliveries."""
        held = self.held
        assert held is not None  # only registered with a budget
        freed = held.shed()
        while self.items and freed < short:
            size = self.items.popleft().size
            self.bytes -= size
            self.dropped += 1
            held.give_back(size, lost=True)
            freed += size
        return freed

    def snapshot(self) -> list[Delivery]:
        """The deliveries kept, oldest first, each body parsed now."""
        return [sent.delivery() for sent in list(self.items)]

    def kept(self) -> list[Sent]:
        """The deliveries kept, oldest first, as held (nothing parsed: cheap on the event loop)."""
        return list(self.items)

    def clear(self) -> int:
        """Forget the deliveries and the losses counted (health's problem goes with them); a new epoch, numbered from 1
        again (a test's first delivery is #1): one decided before it keeps its number and is not recorded after it."""
        count = len(self.items)
        self.items.clear()
        if self.held is not None:  # all of it goes back, the spare too
            self.held.give_back(self.bytes)
            self.held.shed()
        self.bytes = 0
        self.lost_full = self.lost_memory = 0
        self.recorded = 0
        self.next_seq = 1
        self.epoch += 1
        return count

    def problems(self, cap: int) -> list[str]:
        found = []
        if self.lost_full:
            found.append(f"webhooks: {self.lost_full} deliveries were not sent: more than {cap} were waiting to be sent")
        if self.lost_memory:
            found.append(f"webhooks: {self.lost_memory} deliveries were not sent: the session's memory budget "
                         "(--max-bytes) had no room for them while they waited to be sent")
        return found


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
    lines = [f"plantstub: expected {'at least ' if times is None else ''}{plural(count, 'delivery', 'deliveries')} "
             f"of {what}{wanted}; got {len(found)}."]
    if deliveries:
        lines.append(f"{plural(len(deliveries), 'delivery', 'deliveries')} recorded:")
        lines.extend(_line(d) for d in deliveries[-10:])
    else:
        lines.append("no deliveries recorded (is a receiver subscribed? see stub.subscribe() and --webhook)")
    raise CallAssertionError("\n".join(lines))


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
            raise CallAssertionError(f"plantstub: expected {plural(n, 'delivery', 'deliveries')} within {timeout:g} s; "
                                     f"got {len(found)}"
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
