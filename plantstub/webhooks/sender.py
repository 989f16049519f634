"""A session's deliveries waiting to be sent: each a Job holding its body as JSON bytes, bounded by count (the queue's
cap) and by bytes (the session's memory budget, "pending"); the stub's Outbox sends them."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

from plantstub._budget import Budget
from plantstub._json import json_bytes
from plantstub.config import shown_url
from plantstub.contract.model import Operation
from plantstub.webhooks.deliveries import DeliveryLog, Sent, now

QUEUE_CAP = 1000  # deliveries waiting at once per session; beyond it they are counted as lost (health `problems`)
WEBHOOK_HEADER = "X-Plantstub-Webhook"  # on every delivery: its name (and how the stub knows its own deliveries)
KIND = "pending"  # the memory budget's name for the deliveries decided and not yet sent
# What one waiting job costs beside its body and URL: the Job, its time string, the bytes object's header, the
# queue's slot (~250 B by tracemalloc, ~650 B for a delayed one with its timer; ~470 B of RSS growth per queued job).
JOB_OVERHEAD = 400


@dataclass(slots=True)
class Job:
    """A delivery to make: numbered, timed and its body written as JSON once, when it is decided; recorded (as a
    `Sent`) when it is done."""

    seq: int
    time: str
    name: str
    url: str
    payload: bytes  # the body as sent; one bytes object, shared by the jobs of one decision
    hook: Operation | None  # what the receiver may answer; None when not known
    error: str | None = None  # set when it cannot be sent at all (a callback URL the request lacks)
    epoch: int = 0  # the delivery log's epoch when it was decided
    explicit: bool = True  # the user chose the URL (a subscription); False: a request named it (a callback)

    @property
    def size(self) -> int:
        return len(self.payload) + len(self.url) + JOB_OVERHEAD

    def sent(self, attempts: int, status: int | None, error: str | None, valid: bool) -> Sent:
        return Sent(self.seq, self.time, self.name, shown_url(self.url), self.payload, attempts, status, error, valid)


def payload_of(body: Any) -> bytes:
    """`body` as the JSON bytes to send, compact: a small orjson result keeps a 4 KiB buffer, so it is copied."""
    payload = json_bytes(body)
    return payload if len(payload) >= 4096 else memoryview(payload).tobytes()


def job(log: DeliveryLog, name: str, url: str, payload: bytes, hook: Operation | None, error: str | None = None,
        explicit: bool = True) -> Job:
    """A job numbered and timed now."""
    _, at = now()
    return Job(log.number(), at, name, url, payload, hook, error, log.epoch, explicit)


class Turns(Protocol):
    """What a Sender tells the stub's Outbox (webhooks/outbox.py): it has a job ready."""

    def ready(self, sender: Sender) -> None: ...


class Sender:
    """One session's deliveries until the stub's `outbox` sends them; submit() never waits. Call on the loop."""

    def __init__(self, log: DeliveryLog, outbox: Turns, memory: Budget | None = None, cap: int = QUEUE_CAP) -> None:
        self.log = log
        self.outbox = outbox
        self.held = None if memory is None else memory.holding(KIND)  # the bytes of the jobs waiting and flying
        self.cap = cap
        self.queue: deque[Job] = deque()  # ready to go, oldest first
        self.later: dict[asyncio.TimerHandle, Job] = {}  # waiting out a rule's delay_ms
        self.flying: dict[asyncio.Task[None], Job] = {}  # being sent, by the outbox's worker sending each
        self.in_turn = False  # whether the outbox has this sender in its round
        self.closed = False  # the session ended: nothing more is queued or recorded
        self.started = False  # whether anything was ever submitted

    def submit(self, job: Job, delay_ms: int = 0) -> None:
        """Queue `job` (after `delay_ms`); counted as lost when more than `cap` wait or the memory budget has no
        room for its bytes."""
        if self.closed:
            return
        self.started = True
        if len(self.queue) + len(self.later) >= self.cap:
            self.log.lost_full += 1
            return
        if self.held is not None and not self.held.take(job.size):
            self.log.lost_memory += 1
            self.held.lost(job.size)
            return
        if not delay_ms:
            self._queue(job)
            return
        handle: asyncio.TimerHandle | None = None

        def due() -> None:
            if handle is not None and self.later.pop(handle, None) is not None:
                self._queue(job)

        handle = asyncio.get_running_loop().call_later(delay_ms / 1000, due)
        self.later[handle] = job

    def _queue(self, job: Job) -> None:
        self.queue.append(job)
        self.outbox.ready(self)

    @property
    def pending(self) -> int:
        """Deliveries decided but not yet recorded, of every epoch (what a stop's grace waits for)."""
        return len(self.queue) + len(self.flying) + len(self.later)

    def pending_in(self, epoch: int) -> int:
        """Deliveries of `epoch` decided but not yet recorded: one being sent when a reset came is not the next test's."""
        # Only the flying may be older: forget_before() drops the waiting ones of an earlier epoch.
        return len(self.queue) + len(self.later) + sum(job.epoch == epoch for job in self.flying.values())

    def next_job(self) -> Job | None:
        """The oldest job waiting, taken out of the queue (None: none)."""
        return self.queue.popleft() if self.queue else None

    def done(self, job: Job, sent: Sent | None) -> None:
        """`job` is over: its bytes go back; `sent` (None: it was cancelled) goes to the log."""
        self._give(job)
        if sent is not None and not self.closed:
            self.log.add(sent, job.epoch)

    def _give(self, job: Job) -> None:
        if self.held is not None:
            self.held.give(job.size)

    def forget_before(self, epoch: int) -> None:
        """Drop the waiting jobs decided before `epoch` (a reset): not sent to a test that has ended."""
        for handle, job in list(self.later.items()):
            if job.epoch != epoch:
                handle.cancel()
                del self.later[handle]
                self._give(job)
        kept = deque(job for job in self.queue if job.epoch == epoch)
        for job in self.queue:
            if job.epoch != epoch:
                self._give(job)
        self.queue = kept

    def hurry(self) -> None:
        """Queue the delayed jobs now (the stub stops, or the session ends: their delay is not waited out)."""
        for handle, job in list(self.later.items()):
            handle.cancel()
            self._queue(job)
        self.later.clear()

    def abandon(self) -> int:
        """Stop: drop what waits and cancel what is being sent; how many deliveries that leaves unsent."""
        self.closed = True
        unsent = self.pending
        for handle in self.later:
            handle.cancel()
        for job in [*self.later.values(), *self.queue]:
            self._give(job)
        self.later.clear()
        self.queue.clear()
        for task in self.flying:
            task.cancel()  # that delivery only: its worker gives its bytes back and goes on (Outbox._work)
        return unsent
