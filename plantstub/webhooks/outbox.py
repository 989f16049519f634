"""The stub's Outbox: one set of workers and one bound on sockets for every session's deliveries (each session's
Sender takes its turn), retries, and the grace pending deliveries get when the stub stops or a session ends."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from urllib.parse import quote

import aiohttp
from yarl import URL

from plantstub._version import __version__
from plantstub.webhooks.deliveries import Sent
from plantstub.webhooks.own import GuardedResolver, OwnAddress, OwnAddresses
from plantstub.webhooks.receivers import Exchange, Key, Receivers, receiver_url, timed_out
from plantstub.webhooks.sender import WEBHOOK_HEADER, Job, Sender

WORKERS = 100  # deliveries in flight at once, all sessions together (so at most as many sockets)
TIMEOUT = 5.0  # seconds a receiver has for one attempt
ATTEMPTS = 3  # on a connection error, a timeout or a 5xx answer
BACKOFF = 0.2  # seconds before the second attempt; doubled before each later one
GRACE = 3.0  # seconds pending deliveries have to go out when the stub stops or their session ends
_POLL = 0.02  # seconds between looks while a grace runs
_UNROUTED: tuple[Key, bytes] = (("", -1), b"")  # a subscribed URL not seen yet (_route())
_TARGETS = 256  # subscribed URLs (and webhook names) whose route is kept


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


class _Delivery(Exchange):
    """A job being sent to a subscribed http:// receiver over webhooks/receivers.py's connections: its attempts, each
    answer or failure completing it, or a pause before the next attempt. No task of its own."""

    __slots__ = ("attempt", "cancelled", "job", "key", "outbox", "pause", "sender")

    def __init__(self, outbox: Outbox, sender: Sender, job: Job, key: Key, request: bytes) -> None:
        self.request = request  # its deadline is set when it is sent (Receivers.send())
        self.link = None
        self.outbox = outbox
        self.sender = sender
        self.job = job
        self.key = key
        self.attempt = 1
        self.cancelled = False
        self.pause: asyncio.TimerHandle | None = None

    def answered(self, status: int) -> None:
        if self.cancelled:
            return
        if status < 500:  # the usual: recorded at once (the frames of landed() and landed_job() spared)
            job, sender, outbox = self.job, self.sender, self.outbox
            sender.flying.pop(self, None)
            outbox._flying -= 1
            sender.answered(job, self.attempt, status)
            if outbox._turns and outbox._pumping is None:
                outbox._pumping = outbox.loop.call_soon(outbox._pump)
            return
        if self.attempt < self.outbox.attempts:
            self._again()
            return
        error = None
        if status >= 500:
            error = f"the receiver answered {status}" + (f" on each of {self.attempt} attempts" if self.attempt > 1
                                                         else "")
        self.outbox.landed(self, self.job.answered(self.attempt, status, error))

    def failed(self, why: str) -> None:
        if self.cancelled:
            return
        if self.attempt < self.outbox.attempts:
            self._again()
        else:
            self.outbox.landed(self, self.job.sent(self.attempt, None, why, False))

    def _again(self) -> None:
        """Try again after a pause that doubles each time (the slot in flight is kept meanwhile)."""
        self.link = None
        outbox = self.outbox
        if outbox.closing:  # the stub stops: nothing more is sent (nor recorded)
            outbox.landed(self, None)
            return
        self.pause = outbox.loop.call_later(outbox.backoff * 2 ** (self.attempt - 1), self._resend)
        self.attempt += 1

    def _resend(self) -> None:
        self.pause = None
        if self.outbox.closing:
            self.outbox.landed(self, None)
            return
        receivers = self.outbox.receivers
        receivers.send(self.key, self, receivers.loop.time() + receivers.timeout)
        receivers.flush()

    def cancel(self) -> None:
        """The session ended: nothing more is sent or recorded (its bytes go back now)."""
        if self.cancelled:
            return
        self.cancelled = True
        if self.pause is not None:
            self.pause.cancel()
        self.outbox.receivers.forget(self)
        self.outbox.landed(self, None)


class Outbox:
    """Sends the jobs of every session's Sender in the background of the stub's event loop: at most `workers` in
    flight at once, the senders taking turns, so neither sockets nor tasks grow with the number of sessions. What is
    queued while the loop runs one turn is sent at the end of it (`_pump`), a receiver's deliveries in one write."""

    def __init__(self, workers: int = WORKERS, timeout: float = TIMEOUT, attempts: int = ATTEMPTS,
                 backoff: float = BACKOFF) -> None:
        self.workers = workers
        self.timeout = timeout
        self.attempts = attempts
        self.backoff = backoff
        self.own = OwnAddresses()  # where the stub listens, once it does
        self.unsent_at_end = 0  # deliveries of ended sessions not sent within the grace
        self._turns: deque[Sender] = deque()  # senders with jobs waiting, in turn
        self._flying = 0  # deliveries in flight (at most `workers`)
        self._pumping: asyncio.Handle | None = None  # the pump, once per turn of the loop while jobs wait
        self._tasks: set[asyncio.Task[None]] = set()  # deliveries through aiohttp's client
        self._http: dict[bool, aiohttp.ClientSession] = {}  # explicit URL? -> its HTTP session
        self._resolver: GuardedResolver | None = None  # the callbacks' (a connector does not close one it is given)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._receivers: Receivers | None = None  # subscribed http:// receivers: kept, pipelined connections
        self._routes: dict[tuple[str, str], tuple[Key, bytes] | None] = {}  # (subscribed URL, name) -> _route()
        self.closing = False  # close() runs: a failed attempt is not tried again
        # Set by the server when it holds a turn's answers to write them together (server/connection.py's Batch):
        # defer(pump) -> True when answers wait, then the pump runs once they are written, so a delivery never goes
        # out before the answer that set it off.
        self.defer: Callable[[Callable[[], None]], bool] | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        return loop

    @property
    def receivers(self) -> Receivers:
        receivers = self._receivers
        if receivers is None:
            receivers = self._receivers = Receivers(self.loop, self.workers, self.timeout)
        return receivers

    def ready(self, sender: Sender) -> None:
        """`sender` queued one more job: it goes out at the end of this turn of the loop. Call on the loop."""
        self.closing = False
        if not sender.in_turn:
            sender.in_turn = True
            self._turns.append(sender)
        if self._pumping is None:
            self._pumping = (self._loop or self.loop).call_soon(self._pump)

    def _pump(self) -> None:
        """Start what waits, in turn, while fewer than `workers` are in flight; what goes to the receivers' connections
        is written once, at the end."""
        defer = self.defer
        if defer is not None and defer(self._pump):  # this turn's answers first (_pumping stays set meanwhile)
            return
        self._pumping = None
        receivers = None
        routes = self._routes
        turns = self._turns
        deadline = 0.0
        while self._flying < self.workers and turns:
            sender = turns.popleft()  # self._next(), without its frames: each sender's oldest job, in turn
            queue = sender.queue
            if not queue:
                sender.in_turn = False
                continue
            job = queue.popleft()
            if queue:
                turns.append(sender)
            else:
                sender.in_turn = False
            self._flying += 1
            if job.error is not None:
                self.landed_job(sender, job, job.sent(0, None, job.error, False))
                continue
            route = routes.get((job.url, job.name), _UNROUTED) if job.explicit else None
            if route is _UNROUTED:
                try:
                    route = self._route(job.url, job.name)
                except Exception as exc:  # noqa: BLE001 - a URL yarl refuses must not stop the others
                    why = f"plantstub could not send it ({type(exc).__name__})"
                    self.landed_job(sender, job, job.sent(1, None, why, False))
                    continue
            if route is not None:
                key, head = route
                payload = job.payload
                delivery = _Delivery(self, sender, job, key, b"%s%d\r\n\r\n%s" % (head, len(payload), payload))
                sender.flying[delivery] = job
                if receivers is None:
                    receivers = self._receivers or self.receivers
                    deadline = receivers.clock() + self.timeout  # the same for what this turn sends
                receivers.send(key, delivery, deadline)
                continue
            task = self.loop.create_task(self._through_aiohttp(sender, job))
            sender.flying[task] = job
            self._tasks.add(task)
        if receivers is not None:
            receivers.flush()

    def _route(self, url: str, name: str) -> tuple[Key, bytes] | None:
        """How a subscribed URL is sent to: the receiver and the head of webhook `name`'s deliveries when this module's
        connections take it, else None (aiohttp's client); kept for the few subscribed URLs."""
        parsed = receiver_url(url)
        route = None if parsed is None else self.receivers.head(parsed, url, name)
        if len(self._routes) >= _TARGETS:
            self._routes.clear()
        self._routes[(url, name)] = route
        return route

    def landed(self, delivery: _Delivery, sent: Sent | None) -> None:
        """`delivery` is over: `sent` is what is recorded (None: it was cancelled)."""
        delivery.sender.flying.pop(delivery, None)
        self.landed_job(delivery.sender, delivery.job, sent)

    def landed_job(self, sender: Sender, job: Job, sent: Sent | None) -> None:
        self._flying -= 1
        sender.done(job, sent)
        if self._turns and self._pumping is None:
            self._pumping = self.loop.call_soon(self._pump)

    async def _through_aiohttp(self, sender: Sender, job: Job) -> None:
        """A delivery aiohttp's client sends (a callback, https, a password in the URL), in a task of its own: a session
        that ends cancels it (Sender.abandon), and it is not recorded then."""
        me = asyncio.current_task()
        assert me is not None  # a task of its own (_pump())
        sent: Sent | None = None
        try:
            sent = await self.deliver(job)
        finally:
            sender.flying.pop(me, None)
            self._tasks.discard(me)
            self.landed_job(sender, job, sent)

    async def deliver(self, job: Job) -> Sent:
        """Send `job` through aiohttp's client, retrying a connection error, a timeout or a 5xx with growing pauses;
        what happened."""
        try:
            return await self._send(job)
        except Exception as exc:  # noqa: BLE001 - a URL aiohttp refuses must not stop the others
            return job.sent(1, None, f"plantstub could not send it ({type(exc).__name__})", False)

    async def _send(self, job: Job) -> Sent:
        url = URL(job.url)
        if not job.explicit and url.host is not None and self.own.reaches(url.host, url.port or 0):
            return job.sent(0, None, _own_message(f"{url.host}:{url.port} is"), False)
        http = self._session(job.explicit)
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
                async with http.post(job.url, data=job.payload, headers=headers, allow_redirects=False) as answer:
                    status = answer.status
            except asyncio.TimeoutError:
                error = timed_out(self.timeout)
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
        if status is None:
            return job.sent(attempt, None, error, False)
        return job.answered(attempt, status, error)

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
        """Stop sending and close the connections and HTTP sessions (the stub stops; drain() first)."""
        self.closing = True
        if self._pumping is not None:
            self._pumping.cancel()
            self._pumping = None
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for sender in self._turns:
            sender.in_turn = False
        self._turns.clear()
        if self._receivers is not None:
            self._receivers.close()
        for http in self._http.values():
            await http.close()
        self._http = {}
        if self._resolver is not None:
            await self._resolver.close()
            self._resolver = None
