"""The stub's Outbox: one set of workers and one bound on sockets for every session's deliveries (each session's
Sender takes its turn), retries, and the grace pending deliveries get when the stub stops or a session ends."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections import deque
from urllib.parse import quote

import aiohttp
from yarl import URL

from plantstub._version import __version__
from plantstub.contract.model import Operation
from plantstub.webhooks.deliveries import Sent
from plantstub.webhooks.lean import LeanClient, UnreadableAnswer, lean_target
from plantstub.webhooks.own import GuardedResolver, OwnAddress, OwnAddresses
from plantstub.webhooks.sender import WEBHOOK_HEADER, Job, Sender

WORKERS = 100  # deliveries in flight at once, all sessions together (so at most as many sockets)
TIMEOUT = 5.0  # seconds a receiver has for one attempt
ATTEMPTS = 3  # on a connection error, a timeout or a 5xx answer
BACKOFF = 0.2  # seconds before the second attempt; doubled before each later one
GRACE = 3.0  # seconds pending deliveries have to go out when the stub stops or their session ends
_POLL = 0.02  # seconds between looks while a grace runs
_TARGETS = 256  # subscribed URLs whose parse is kept


def declared(hook: Operation | None, status: int) -> bool:
    """Whether the receiver's answer is one the webhook declares (any 2xx when it declares none)."""
    if hook is None or not hook.responses:
        return 200 <= status < 300
    return hook.response_for(status) is not None


def _own_address(exc: BaseException) -> OwnAddress | None:
    """The OwnAddress behind an aiohttp connection error, if that is what it is."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OwnAddress):
            return seen
        seen = seen.__cause__ or getattr(seen, "os_error", None)
    return None


def _own_message(what: str) -> str:
    return (f"not sent: {what} where this stub listens; a callback URL taken from a request never targets the "
            "stub itself (subscribe the URL to send webhooks there)")


class Outbox:
    """Sends the jobs of every session's Sender in the background of the stub's event loop: `workers` at once,
    the senders taking turns, so neither sockets nor tasks grow with the number of sessions."""

    def __init__(self, workers: int = WORKERS, timeout: float = TIMEOUT, attempts: int = ATTEMPTS,
                 backoff: float = BACKOFF) -> None:
        self.workers = workers
        self.timeout = timeout
        self.attempts = attempts
        self.backoff = backoff
        self.own = OwnAddresses()  # where the stub listens, once it does
        self.unsent_at_end = 0  # deliveries of ended sessions not sent within the grace
        self._turns: deque[Sender] = deque()  # senders with jobs waiting, in turn
        self._jobs: asyncio.Semaphore | None = None  # one per job queued (a few more once some were dropped)
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False  # close() cancels the workers
        self._http: dict[bool, aiohttp.ClientSession] = {}  # explicit URL? -> its HTTP session
        self._resolver: GuardedResolver | None = None  # the callbacks' (a connector does not close one it is given)
        self._lean = LeanClient(workers)  # subscribed http:// receivers: kept connections, one write a delivery
        self._targets: dict[str, URL | None] = {}  # subscribed URL -> lean_target()

    def ready(self, sender: Sender) -> None:
        """`sender` queued one more job. Call on the loop."""
        if self._jobs is None:
            self._jobs = asyncio.Semaphore(0)
            self._stopping = False
            loop = asyncio.get_running_loop()
            self._tasks = [loop.create_task(self._work()) for _ in range(self.workers)]
        if not sender.in_turn:
            sender.in_turn = True
            self._turns.append(sender)
        self._jobs.release()

    def _next(self) -> tuple[Sender, Job] | None:
        while self._turns:
            sender = self._turns.popleft()
            job = sender.next_job()
            if sender.queue:
                self._turns.append(sender)
            else:
                sender.in_turn = False
            if job is not None:
                return sender, job
        return None

    async def _work(self) -> None:
        """One worker: a delivery at a time, sent in the worker's own task (no task a delivery). A session that ends
        cancels the deliveries it has in flight (Sender.abandon): that cancels this delivery only, not the worker."""
        assert self._jobs is not None
        me = asyncio.current_task()
        assert me is not None  # a task of its own (ready())
        while True:
            await self._jobs.acquire()
            taken = self._next()
            if taken is None:  # its job was dropped (a reset, an ended session)
                continue
            sender, job = taken
            sender.flying[me] = job
            try:
                sent = await self.deliver(job)
            except asyncio.CancelledError:
                sender.flying.pop(me, None)
                sender.done(job, None)
                if self._stopping or not sender.closed:  # this worker is stopped: so is its delivery
                    raise
                if sys.version_info >= (3, 11):  # the session's cancel was this delivery's alone
                    me.uncancel()
                continue
            sender.flying.pop(me, None)
            sender.done(job, sent)

    async def deliver(self, job: Job) -> Sent:
        """Send `job`, retrying a connection error, a timeout or a 5xx with growing pauses; what happened."""
        if job.error is not None:
            return job.sent(0, None, job.error, False)
        try:
            return await self._send(job)
        except Exception as exc:  # noqa: BLE001 - a URL aiohttp refuses must not stop a worker for good
            return job.sent(1, None, f"plantstub could not send it ({type(exc).__name__})", False)

    async def _send(self, job: Job) -> Sent:
        lean = self._lean_target(job.url) if job.explicit else None
        url = URL(job.url) if lean is None else lean
        if not job.explicit and url.host is not None and self.own.reaches(url.host, url.port or 0):
            return job.sent(0, None, _own_message(f"{url.host}:{url.port} is"), False)
        http = self._session(job.explicit) if lean is None else None
        headers = None if http is None else {
            "Content-Type": "application/json", WEBHOOK_HEADER: quote(job.name, safe="/{}$#.-_~:?=&")}
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
                if http is None:
                    status = await self._lean.post(url, job.url, job.name, job.payload, self.timeout)
                else:
                    async with http.post(job.url, data=job.payload, headers=headers, allow_redirects=False) as answer:
                        status = answer.status
            except asyncio.TimeoutError:
                error = f"the receiver did not answer within {self.timeout:g} s"
                continue
            except UnreadableAnswer as exc:
                error = f"the receiver's answer could not be read: {exc}"
                continue
            except (aiohttp.ClientError, OSError) as exc:
                own = _own_address(exc)
                if own is not None:
                    return job.sent(0, None, _own_message(f"{url.host}:{url.port} resolves to {own.args[0]},"), False)
                error = f"the receiver could not be reached ({type(exc).__name__})"
                continue
            if status < 500:
                break
            error = f"the receiver answered {status}" + (f" on each of {attempt} attempts" if attempt > 1 else "")
        valid = status is not None and declared(job.hook, status)
        if status is not None and status < 500 and not valid:
            codes = ", ".join(job.hook.responses) if job.hook is not None and job.hook.responses else "2xx"
            error = f"the receiver answered {status}, which {job.name} does not declare (declared: {codes})"
        return job.sent(attempt, status, error, valid)

    def _lean_target(self, url: str) -> URL | None:
        """lean_target(url), parsed once per subscribed URL (there are a few)."""
        try:
            return self._targets[url]
        except KeyError:
            if len(self._targets) >= _TARGETS:
                self._targets.clear()
            target = self._targets[url] = lean_target(url)
            return target

    def _session(self, explicit: bool) -> aiohttp.ClientSession:
        """The HTTP session for subscribed URLs (explicit) or for callbacks (own addresses left out when resolved);
        each connector holds at most `workers` sockets, and only `workers` deliveries are ever in flight."""
        http = self._http.get(explicit)
        if http is None:
            if not explicit:
                self._resolver = GuardedResolver(self.own)
            connector = aiohttp.TCPConnector(limit=self.workers, resolver=None if explicit else self._resolver)
            http = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=self.timeout),
                                         headers={"User-Agent": f"plantstub/{__version__}"})
            self._http[explicit] = http
        return http

    async def drain(self, senders: list[Sender], grace: float = GRACE) -> int:
        """Let what `senders` have pending go out within `grace` seconds (delays not waited out), then stop them;
        how many deliveries were still not sent."""
        for sender in senders:
            sender.hurry()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while any(sender.pending for sender in senders) and loop.time() < deadline:
            await asyncio.sleep(_POLL)
        unsent = sum(sender.abandon() for sender in senders)
        await asyncio.sleep(0)  # the cancelled deliveries end, and give their bytes back
        return unsent

    async def close(self) -> None:
        """Stop the workers and close the HTTP sessions (the stub stops; drain() first)."""
        self._stopping = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        self._jobs = None
        self._turns.clear()
        self._lean.close()
        for http in self._http.values():
            await http.close()
        self._http = {}
        if self._resolver is not None:
            await self._resolver.close()
            self._resolver = None
