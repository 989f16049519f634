"""A session's deliveries waiting to be sent: each a Job holding its body as JSON bytes, bounded by count (the queue's
cap) and by bytes (the session's memory budget, "pending"); the stub's Outbox sends them."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any, NamedTuple, Protocol

import orjson

from plantstub._budget import Budget
from plantstub._json import json_bytes
from plantstub.config import shown_url
from plantstub.contract.model import Operation
from plantstub.webhooks.ahead import Ahead
from plantstub.webhooks.deliveries import SENT_OVERHEAD, DeliveryLog, Sent

QUEUE_CAP = 1000  # deliveries waiting at once per session; beyond it they are counted as lost (health `problems`)
WEBHOOK_HEADER = "X-Plantstub-Webhook"  # on every delivery: its name (and how the stub knows its own deliveries)
KIND = "pending"  # the memory budget's name for the deliveries decided and not yet sent
# What one waiting job costs beside its body and URL: the Job, its time string, the bytes object's header, the
# queue's slot (~250 B by tracemalloc, ~650 B for a delayed one with its timer; ~470 B of RSS growth per queued job).
JOB_OVERHEAD = 400


class Job(NamedTuple):
    """A delivery to make: numbered, timed and its body written as JSON once, when it is decided; recorded (as a
    `Sent`) when it is done. A NamedTuple: one is made on the request path for every delivery."""

    seq: int
    at: float  # when it was decided (time.time())
    name: str
    url: str
    payload: bytes  # the body as sent; one bytes object, shared by the jobs of one decision
    hook: Operation | None  # what the receiver may answer; None when not known
    error: str | None = None  # set when it cannot be sent at all (a callback URL the request lacks)
    epoch: int = 0  # the delivery log's epoch when it was decided
    explicit: bool = True  # the user chose the URL (a subscription); False: a request named it (a callback)
    size: int = 0  # the bytes it holds while it waits (the memory budget's "pending"), counted once by job()

    def sent(self, attempts: int, status: int | None, error: str | None, valid: bool) -> Sent:
        return _new_sent(Sent, (self.seq, self.at, self.name, shown_url(self.url), self.payload, attempts, status, error,
                                valid))

    def answered(self, attempts: int, status: int, error: str | None) -> Sent:
        """The delivery the receiver answered `status` on its last attempt: valid when the webhook declares that
        status (any 2xx when it declares none); `error` (a 5xx's words) or why the status is not declared."""
        verdict = _verdicts.get((id(self.hook), self.name, status)) or _verdict(self.hook, self.name, status)
        url = self.url
        # self.sent(...), without its frame nor shown_url's for the usual URL (no password): on every delivery
        return _new_sent(Sent, (self.seq, self.at, self.name, url if "@" not in url else shown_url(url), self.payload,
                                attempts, status, verdict[2] or error, verdict[1]))


_new_sent = _new_job = tuple.__new__  # a NamedTuple made from a tuple: no frame of its __new__, on every delivery
# (id of the webhook, its name, a status) -> the webhook (held, so that its id is not reused), whether the status is
# declared, and the words when it is not
_verdicts: dict[tuple[int, str, int], tuple[Operation | None, bool, str | None]] = {}


def _verdict(hook: Operation | None, name: str, status: int) -> tuple[Operation | None, bool, str | None]:
    """_verdicts' entry for (hook, name, status), made and kept (the callers look there first)."""
    valid = 200 <= status < 300 if hook is None or not hook.responses else hook.response_for(status) is not None
    words = None
    if status < 500 and not valid:
        codes = ", ".join(hook.responses) if hook is not None and hook.responses else "2xx"
        words = f"the receiver answered {status}, which {name} does not declare (declared: {codes})"
    if len(_verdicts) >= 4096:  # (webhook, status) pairs: a few
        _verdicts.clear()
    verdict = _verdicts[(id(hook), name, status)] = hook, valid, words
    return verdict


def payload_of(body: Any) -> bytes:
    """`body` as the JSON bytes to send, compact: a small orjson result keeps a 4 KiB buffer, so it is copied."""
    try:
        payload = orjson.dumps(body)  # json_bytes(body), without its frame, on every delivery
    except TypeError:
        payload = json_bytes(body)
    return payload if len(payload) >= 4096 else memoryview(payload).tobytes()


def job(log: DeliveryLog, name: str, url: str, payload: bytes, hook: Operation | None, error: str | None = None,
        explicit: bool = True) -> Job:
    """A job numbered and timed now."""
    seq = log.next_seq
    log.next_seq = seq + 1
    return _new_job(Job, (seq, time.time(), name, url, payload, hook, error, log.epoch, explicit,
                          len(payload) + len(url) + JOB_OVERHEAD))


class Cancellable(Protocol):
    """A delivery in flight, or the task sending one: what a session that ends cancels."""

    def cancel(self) -> object: ...


class Turns(Protocol):
    """What a Sender tells the stub's Outbox (webhooks/outbox.py): it has a job ready."""

    def ready(self, sender: Sender) -> None: ...


class Sender:
    """One session's deliveries until the stub's `outbox` sends them; submit() never waits. Call on the loop."""

    def __init__(self, log: DeliveryLog, outbox: Turns, memory: Budget | None = None, cap: int = QUEUE_CAP) -> None:
        self.log = log
        self.outbox = outbox
        self.held: Ahead | None = None  # the bytes of the jobs waiting and flying, taken from the budget ahead
        if memory is not None:  # the log's lock: a delivery's bytes are handed to the log in one round trip
            self.held = Ahead(memory, KIND, log.held.lock if log.held is not None else None)
            memory.sheds(KIND, self.held.shed)  # only the spare goes: a job waiting is never dropped for room
        self.cap = cap
        self.queue: deque[Job] = deque()  # ready to go, oldest first
        self.later: dict[asyncio.TimerHandle, Job] = {}  # waiting out a rule's delay_ms
        self.flying: dict[Cancellable, Job] = {}  # being sent: each delivery, or the task sending it
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
        held = self.held
        if held is not None and not held.take(job.size):
            self._no_room(job)
            return
        if not delay_ms:
            self.queue.append(job)  # self._queue(job), without its frame: on every delivery
            if not self.in_turn:
                self.outbox.ready(self)
            return
        handle: asyncio.TimerHandle | None = None

        def due() -> None:
            if handle is not None and self.later.pop(handle, None) is not None:
                self._queue(job)

        handle = asyncio.get_running_loop().call_later(delay_ms / 1000, due)
        self.later[handle] = job

    def submit_to(self, urls: tuple[str, ...], name: str, payload: bytes, hook: Operation | None,
                  delay_ms: int = 0) -> None:
        """Submit a job of webhook `name` for each of `urls`, numbered and timed now (job()'s, without its frame)."""
        log = self.log
        held = self.held
        at = time.time()
        for url in urls:
            seq = log.next_seq
            log.next_seq = seq + 1
            size = len(payload) + len(url) + JOB_OVERHEAD
            job = _new_job(Job, (seq, at, name, url, payload, hook, None, log.epoch, True, size))
            if delay_ms or self.closed or len(self.queue) + len(self.later) >= self.cap:
                self.submit(job, delay_ms)  # waits out its delay, or is refused
            elif held is None or held.take(size):  # self.submit(job), without its frame: on every delivery
                self.started = True
                self.queue.append(job)
                if not self.in_turn:
                    self.outbox.ready(self)
            else:
                self.started = True
                self._no_room(job)

    def _no_room(self, job: Job) -> None:
        """`job` is not queued: the memory budget has no room for its bytes (counted lost)."""
        self.log.lost_memory += 1
        if self.held is not None:
            self.held.lost(job.size)

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

    def done(self, job: Job, sent: Sent | None) -> None:
        """`job` is over: its bytes go back; `sent` (None: it was cancelled) goes to the log."""
        if sent is None or self.closed:
            if self.held is not None:
                self.held.give(job.size)
            return
        self.log.add(sent, job.epoch, self.held, job.size)  # its bytes go back there, handed over to the log's

    def answered(self, job: Job, attempts: int, status: int) -> None:
        """`job` is over, its receiver having answered `status` (below 500) on attempt `attempts`: recorded (the usual
        end of a delivery: done(job, job.answered(attempts, status, None)), without the frames of either)."""
        # One unpacking: each field of a NamedTuple read by name is a lookup of its own (~4k instructions for these)
        seq, at, name, url, payload, hook, _, epoch, _, waited = job
        if self.closed:
            if self.held is not None:
                self.held.give(waited)
            return
        _, valid, words = _verdicts.get((id(hook), name, status)) or _verdict(hook, name, status)
        if "@" in url:
            url = shown_url(url)
        size = len(payload) + len(url) + len(name) + len(words or "") + SENT_OVERHEAD  # the Sent's size (Sent.size)
        self.log.add(_new_sent(Sent, (seq, at, name, url, payload, attempts, status, words, valid)), epoch, self.held,
                     waited, size)

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
        if self.held is not None:  # a reset: the bytes taken ahead go back too
            self.held.shed()

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
        for flying in list(self.flying):
            flying.cancel()  # that delivery only: its bytes go back, and its slot in the outbox
        return unsent
