"""Sending webhooks and callbacks off the request path: a bounded queue, a few workers, retries."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp

from plantstub._json import json_bytes
from plantstub._version import __version__
from plantstub.contract.model import Operation
from plantstub.webhooks.deliveries import Delivery, DeliveryLog, now

QUEUE_CAP = 1000  # deliveries waiting at once; beyond it they are counted as lost (health `problems`)
WORKERS = 100  # deliveries in flight at once (aiohttp's connection limit): 500 a second to a receiver answering in 200 ms
TIMEOUT = 5.0  # seconds a receiver has for one attempt
ATTEMPTS = 3  # on a connection error, a timeout or a 5xx answer
BACKOFF = 0.2  # seconds before the second attempt; doubled before each later one
WEBHOOK_HEADER = "X-Plantstub-Webhook"  # on every delivery: its name (and how the stub knows its own deliveries)


@dataclass(slots=True)
class Job:
    """A delivery to make: numbered and timed when it is decided, recorded when it is done."""

    seq: int
    time: str
    name: str
    url: str
    body: Any
    hook: Operation | None  # what the receiver may answer; None when not known
    error: str | None = None  # set when it cannot be sent at all (a callback URL the request lacks)
    epoch: int = 0  # the delivery log's epoch when it was decided


def declared(hook: Operation | None, status: int) -> bool:
    """Whether the receiver's answer is one the webhook declares (any 2xx when it declares none)."""
    if hook is None or not hook.responses:
        return 200 <= status < 300
    return hook.response_for(status) is not None


class Sender:
    """Delivers jobs in the background of the stub's event loop; submit() never waits."""

    def __init__(self, log: DeliveryLog, cap: int = QUEUE_CAP, workers: int = WORKERS, timeout: float = TIMEOUT,
                 attempts: int = ATTEMPTS, backoff: float = BACKOFF) -> None:
        self.log = log
        self.cap = cap
        self.workers = workers
        self.timeout = timeout
        self.attempts = attempts
        self.backoff = backoff
        self.queue: asyncio.Queue[Job] | None = None
        self.tasks: list[asyncio.Task[None]] = []
        self.later: set[asyncio.TimerHandle] = set()
        self.session: aiohttp.ClientSession | None = None
        self.busy = 0

    def submit(self, job: Job, delay_ms: int = 0) -> None:
        """Queue `job` (after `delay_ms`); when the queue is full it is counted as lost. Call on the loop."""
        if delay_ms and len(self.later) >= self.cap:  # waiting deliveries hold bodies too: the same cap
            self.log.lost += 1
            return
        if delay_ms:
            loop = asyncio.get_running_loop()
            handle: asyncio.TimerHandle | None = None

            def put() -> None:
                if handle is not None:
                    self.later.discard(handle)
                self._put(job)

            handle = loop.call_later(delay_ms / 1000, put)
            self.later.add(handle)
            return
        self._put(job)

    def _put(self, job: Job) -> None:
        if self.queue is None:
            self.queue = asyncio.Queue(self.cap)
            loop = asyncio.get_running_loop()
            self.tasks = [loop.create_task(self._work()) for _ in range(self.workers)]
        try:
            self.queue.put_nowait(job)
        except asyncio.QueueFull:
            self.log.lost += 1

    @property
    def pending(self) -> int:
        """Deliveries decided but not yet recorded."""
        return (self.queue.qsize() if self.queue is not None else 0) + self.busy + len(self.later)

    async def _work(self) -> None:
        assert self.queue is not None
        while True:
            job = await self.queue.get()
            if job.epoch != self.log.epoch:  # decided before a reset: not sent to a test that has ended
                continue
            self.busy += 1
            try:
                delivery = await self.deliver(job)
            except Exception as exc:  # noqa: BLE001 - a URL aiohttp refuses must not stop this worker for good
                delivery = Delivery(job.seq, job.time, job.name, job.url, job.body, 1, None,
                                    f"plantstub could not send it ({type(exc).__name__})", False)
            finally:
                self.busy -= 1
            self.log.add(delivery, job.epoch)

    async def deliver(self, job: Job) -> Delivery:
        """Send `job`, retrying a connection error, a timeout or a 5xx with growing pauses; what happened."""
        if job.error is not None:
            return Delivery(job.seq, job.time, job.name, job.url, job.body, 0, None, job.error, False)
        if self.session is None:
            self.session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                headers={"User-Agent": f"plantstub/{__version__}"},
            )
        payload = json_bytes(job.body)
        headers = {"Content-Type": "application/json", WEBHOOK_HEADER: quote(job.name, safe="/{}$#.-_~:?=&")}
        status: int | None = None
        error: str | None = None
        attempt = 0
        for attempt in range(1, self.attempts + 1):
            if attempt > 1:
                await asyncio.sleep(self.backoff * 2 ** (attempt - 2))
            status, error = None, None
            try:
                # Never follow a redirect: plantstub sends only to the URL it was given.
                # Only the status matters: the answer's body is never read (a receiver cannot fill our memory).
                async with self.session.post(job.url, data=payload, headers=headers, allow_redirects=False) as answer:
                    status = answer.status
            except asyncio.TimeoutError:
                error = f"the receiver did not answer within {self.timeout:g} s"
                continue
            except (aiohttp.ClientError, OSError) as exc:
                error = f"the receiver could not be reached ({type(exc).__name__})"
                continue
            if status < 500:
                break
            error = f"the receiver answered {status}" + (f" on each of {attempt} attempts" if attempt > 1 else "")
        valid = status is not None and declared(job.hook, status)
        if status is not None and status < 500 and not valid:
            codes = ", ".join(job.hook.responses) if job.hook is not None and job.hook.responses else "2xx"
            error = f"the receiver answered {status}, which {job.name} does not declare (declared: {codes})"
        return Delivery(job.seq, job.time, job.name, job.url, job.body, attempt, status, error, valid)

    async def close(self) -> None:
        """Stop the workers (what is still queued is not sent) and close the HTTP session."""
        for handle in self.later:
            handle.cancel()
        self.later.clear()
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.tasks = []
        self.queue = None
        if self.session is not None:
            await self.session.close()
            self.session = None


def job(log: DeliveryLog, name: str, url: str, body: Any, hook: Operation | None, error: str | None = None) -> Job:
    """A job numbered and timed now."""
    _, at = now()
    return Job(log.number(), at, name, url, body, hook, error, log.epoch)
