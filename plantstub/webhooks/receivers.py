"""The connections to subscribed `http://` receivers: kept alive per receiver (host, port), each delivery written without
waiting for the answer before it once the receiver has kept a connection open after an answer (HTTP/1.1 pipelining),
what one turn of the outbox sends to a connection written in one piece, only each answer's status read. No task and no
future a delivery: a connection's answers complete its deliveries in the order they were written, in `data_received`.

Why a client of our own beside aiohttp's, which the proxy, verify and callbacks use (issue 38: one client, unless the
second pays for itself by more than 10 % of a delivery's CPU). Instructions under callgrind, the stub's whole process,
`POST /plants` on `--spec plant-store-full` one call after another on one kept connection, an aiohttp receiver
subscribed, against the same call with none (`tests/benchmarks/feature_cost.py --instructions 600 --only webhook`; one
shared 2-core machine; counts do not move with its load):

    no subscriber                                                      251k a call
    aiohttp's client (a ClientSession, its kept connections)*         +510k a delivery   (the call 3.0x)
    this client before (one request at a time per connection, a task)  +171k             (1.59x)
    this client pipelined (no task, no future a delivery)              +100k             (1.40x)
    and the bytes held a chunk ahead, fewer frames (issue 41)           +75k             (1.29x)
    and handed to the log in one lock round trip, fewer frames still    +59k             (1.23x)

Under load (wrk, 32 connections, the stub at full speed) deliveries are first decided many at a time: what one turn of
the outbox sends to a receiver goes on one pipelining connection, filled before another is used, so a write carries
about 4 deliveries and a read about 4 answers there (it was one each, spread over every connection a first burst had
opened); under callgrind with 32 connections at once (`--connections 32`), 1.23x -> 1.20x (1.17x since).

(*: the subscribed URL given a user and password, which sends it through aiohttp's client), so aiohttp's client costs
five to seven times what this one does for a delivery (of which the memory budget's holds were 24k, the same for either,
and are ~8k since webhooks/ahead.py): the second client stays, and only here. It sends what aiohttp's client sent (Host,
User-Agent, Accept, Accept-Encoding, Content-Type, X-Plantstub-Webhook, Content-Length), and fails in the same words:
`FAILED_TO_CONNECT`, `DISCONNECTED`, a timeout, an answer that is not HTTP/1.x (`unreadable()`). Nothing is ever sent
twice by this client: a request written on a connection that closes (or times out) before answering it fails that
attempt (the outbox counts it and tries again). Redirects are never followed (a 3xx is an answer like any other). A
connection idle for `IDLE_SECONDS` is closed (noticed by its timer, at most one timeout late: no clock is read per
answer). Anything else (https, a password in the URL, callbacks, whose addresses are guarded when resolved) goes through
aiohttp's client (webhooks/outbox.py).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from typing import cast
from urllib.parse import quote

from yarl import URL

from plantstub._version import __version__
from plantstub.webhooks.sender import WEBHOOK_HEADER

_MOST_HEAD = 64 * 1024  # an answer's head longer than this is refused (aiohttp refuses long lines too)
_CACHED = 256  # request heads kept per (URL, name)
_MOST_LENGTH_DIGITS = 18  # a longer Content-Length is not believed (the connection is not reused)
IDLE_SECONDS = 15.0  # a kept connection unused this long is closed (aiohttp's keepalive_timeout)
DEPTH = 16  # requests written on one connection and not yet answered, at most (a receiver answers them in turn)
# The words of a failed attempt, as they were when aiohttp's client sent these deliveries (its exception's name).
FAILED_TO_CONNECT = "the receiver could not be reached (ClientConnectorError)"
DISCONNECTED = "the receiver could not be reached (ServerDisconnectedError)"

Key = tuple[str, int]  # a receiver: host and port
_UNKNOWN: tuple[int | None, int] = (None, -1)  # a head not seen before (_parsed() of it)


def unreadable(why: str) -> str:
    return f"the receiver's answer could not be read: {why}"


def timed_out(timeout: float) -> str:
    return f"the receiver did not answer within {timeout:g} s"


def receiver_url(url: str) -> URL | None:
    """`url` when this client sends to it (plain http, no user or password), else None."""
    parsed = URL(url)
    if parsed.scheme != "http" or parsed.raw_host is None or parsed.raw_user or parsed.raw_password:
        return None
    return parsed


class Exchange:
    """One request to a receiver: its bytes, by when it must be answered, and what becomes of it: `answered(status)`
    or `failed(why)`, called once (the outbox's delivery subclasses it)."""

    __slots__ = ("deadline", "link", "request")

    def __init__(self) -> None:
        self.request = b""
        self.deadline = 0.0
        self.link: _Link | None = None

    def answered(self, status: int) -> None:
        raise NotImplementedError

    def failed(self, why: str) -> None:
        raise NotImplementedError


class _Link(asyncio.Protocol):
    """One connection to a receiver: the exchanges written on it (or to be written once it is open), answered in
    order; each answer's head parsed, its body skipped."""

    def __init__(self, client: Receivers, key: Key) -> None:
        self.client = client
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.connecting: asyncio.Task[None] | None = None
        self.flights: deque[Exchange] = deque()  # written (or waiting for the connection), oldest first
        self.out: list[bytes] = []  # requests not written yet: written at the client's flush()
        self.buf = bytearray()
        self.skip = 0  # body bytes of the last answer still to skip
        self.pipelines = False  # the receiver kept this connection after an answer: requests go without waiting
        self.lost = False
        self.idle_since = 0.0
        # One timer a connection, moved forward lazily (not one per request): when it fires, the oldest request not
        # answered by its deadline fails those in flight, a connection idle for IDLE_SECONDS is closed, else it waits.
        self.timer: asyncio.TimerHandle | None = None
        self.timer_at = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a TCP connection's

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.client.drop(self, DISCONNECTED)

    def data_received(self, data: bytes) -> None:
        flights = self.flights
        if flights and not self.skip and not self.buf:  # the usual read: whole answers whose heads came before
            answers = self.client.answers
            pos, size = 0, len(data)
            while flights:
                end = data.find(b"\r\n\r\n", pos)
                status, length = answers.get(data[pos:end], _UNKNOWN) if end > pos else _UNKNOWN
                if status is None or status < 200:  # a head not seen before, or an interim answer: _read()'s
                    break
                if status in (204, 304):
                    length = 0
                if length < 0 or end + 4 + length > size:  # its body's end not known, or not all here
                    break
                pos = end + 4 + length
                flight = flights.popleft()
                self.pipelines = True
                if not flights:
                    self.idle_since = 0.0  # idle from now: the timer's next tick notes when
                flight.answered(status)
                if pos == size or self.lost:  # all read, or the answer's delivery closed it (a cancelled one)
                    return
            if pos:
                data = data[pos:]
        self._read(data)

    def _read(self, data: bytes) -> None:
        """What came, whatever it is: heads cut anywhere, several answers, bodies to skip, interim answers."""
        if self.skip:  # the rest of an answer's body
            if len(data) <= self.skip:
                self.skip -= len(data)
                return
            data = data[self.skip:]
            self.skip = 0
        buf = self.buf
        if buf:  # the start of a head came before
            buf += data
            data = bytes(buf)
            buf.clear()
        flights = self.flights
        answers = self.client.answers
        pos, size = 0, len(data)
        while flights:
            end = data.find(b"\r\n\r\n", pos)
            if end - pos > _MOST_HEAD or (end < 0 and size - pos > _MOST_HEAD):
                self.client.drop(self, DISCONNECTED, unreadable("its head is over 64 KiB"))
                return
            if end < 0:
                buf += data[pos:] if pos else data
                return
            head = data[pos:end]
            found = answers.get(head)  # self.client.parsed(head), without its frame: a receiver repeats its head
            status, length = found if found is not None else self.client.parsed(head)
            pos = end + 4
            if status is None:
                self.client.drop(self, DISCONNECTED, unreadable("it is not HTTP/1.x"))
                return
            if status < 200:
                continue  # an interim answer (100 Continue) is skipped
            flight = flights.popleft()
            if status in (204, 304):
                length = 0
            if length < 0:  # the body's end is not known, or the connection closes after it
                self.client.drop(self, DISCONNECTED, answered=(flight, status))
                return
            pos += length
            if pos > size:
                self.skip = pos - size
                pos = size
            self.pipelines = True
            if not flights:
                self.idle_since = 0.0  # idle from now: the timer's next tick notes when (no clock read per answer)
            flight.answered(status)
            if self.lost:  # the answer's delivery closed it (a cancelled one)
                return
        if pos < size:  # bytes nobody asked for
            self.client.drop(self, DISCONNECTED)


def _parsed(head: str) -> tuple[int | None, int]:
    """The status of an answer's head, and its body's length (-1: not known, or the connection closes after it)."""
    lines = head.split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code, _, _ = rest.partition(" ")
    if not version.startswith("HTTP/1.") or len(code) != 3 or not (code.isascii() and code.isdigit()) or code < "100":
        return None, -1
    length, keep = -1, version == "HTTP/1.1"
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            value = value.strip()
            known = value.isascii() and value.isdigit() and len(value) <= _MOST_LENGTH_DIGITS
            length = int(value) if known else -1
        elif name == "connection":
            keep = "close" not in value.lower() and (keep or "keep-alive" in value.lower())
        elif name == "transfer-encoding":
            keep = False  # a chunked body is not walked: the connection goes
    return int(code), length if keep else -1


class Receivers:
    """Connections per receiver, at most `most` open at once; `send()` queues a request on one, `flush()` writes what
    was queued, one write a connection."""

    def __init__(self, loop: asyncio.AbstractEventLoop, most: int, timeout: float) -> None:
        self.loop = loop
        # The loop's clock: time.monotonic itself when that is what loop.time() reads (asyncio's loops), sparing the
        # frame of BaseEventLoop.time() on every turn that sends.
        self.clock: Callable[[], float] = (time.monotonic if type(loop).time is asyncio.BaseEventLoop.time
                                           else loop.time)
        self.most = most
        self.timeout = timeout
        self.open = 0
        self._links: dict[Key, list[_Link]] = {}
        self._waiting: dict[Key, deque[Exchange]] = {}  # no connection could take them yet
        self._dirty: list[_Link] = []
        self._heads: dict[tuple[str, str], tuple[Key, bytes]] = {}
        self.answers: dict[bytes, tuple[int | None, int]] = {}  # an answer's head -> _parsed() (a receiver repeats it)

    def parsed(self, head: bytes) -> tuple[int | None, int]:
        """_parsed(head), remembered: a receiver sends the same head again and again (its Date changes each second)."""
        found = self.answers.get(head)
        if found is None:
            found = _parsed(head.decode("latin-1"))
            if len(self.answers) >= _CACHED:
                self.answers.clear()
            self.answers[head] = found
        return found

    def head(self, url: URL, raw: str, name: str) -> tuple[Key, bytes]:
        """The receiver of `url` (`raw`: as given) and the head of a delivery of webhook `name` to it, up to its
        Content-Length's value."""
        got = self._heads.get((raw, name))
        if got is None:
            host = url.raw_host or ""
            port = url.port or 80
            shown = f"[{host}]" if ":" in host else host
            if not url.is_default_port():
                shown += f":{port}"
            head = (
                f"POST {url.raw_path_qs} HTTP/1.1\r\nHost: {shown}\r\nUser-Agent: plantstub/{__version__}\r\n"
                "Accept: */*\r\nAccept-Encoding: gzip, deflate\r\nContent-Type: application/json\r\n"
                f"{WEBHOOK_HEADER}: {quote(name, safe='/{}$#.-_~:?=&')}\r\nContent-Length: "
            ).encode("latin-1")
            if len(self._heads) >= _CACHED:
                self._heads.clear()
            got = self._heads[(raw, name)] = ((host, port), head)
        return got

    def send(self, key: Key, exchange: Exchange, deadline: float) -> None:
        """Queue `exchange` on a connection to `key` (written at the next flush()), to be answered by `deadline` (the
        loop's time)."""
        exchange.deadline = deadline
        links = self._links.get(key)
        if links is not None:  # the usual: the first kept connection, idle or pipelining with room
            link = links[0]
            flights = link.flights
            if not flights or (link.pipelines and len(flights) < DEPTH):
                # self._put(link, exchange), without its frame: on every delivery
                exchange.link = link
                flights.append(exchange)
                out = link.out
                if not out:
                    self._dirty.append(link)
                out.append(exchange.request)
                if link.timer is None or link.timer_at > deadline:  # an idle connection's timer waits longer
                    if link.timer is not None:
                        link.timer.cancel()
                    self._arm(link, deadline)
                return
        chosen = self._link_for(key)
        if chosen is None:
            self._waiting.setdefault(key, deque()).append(exchange)
            return
        self._put(chosen, exchange)

    def _put(self, link: _Link, exchange: Exchange) -> None:
        exchange.link = link
        link.flights.append(exchange)
        if not link.out:
            self._dirty.append(link)
        link.out.append(exchange.request)
        if link.timer is None or link.timer_at > exchange.deadline:  # an idle connection's timer waits longer
            if link.timer is not None:
                link.timer.cancel()
            self._arm(link, exchange.deadline)

    def _link_for(self, key: Key) -> _Link | None:
        """A connection to `key` that pipelines and has room (what a turn sends goes out in one write, its answers come
        back together); else an idle one; else a new one (None: no room)."""
        idle: _Link | None = None
        for link in self._links.get(key, ()):
            if link.pipelines and len(link.flights) < DEPTH:
                return link
            if idle is None and not link.flights:
                idle = link
        if idle is not None:
            return idle
        while self.open >= self.most:
            if not self._close_one_idle():
                return None
        return self._connect(key)

    def flush(self) -> None:
        """Write what was queued: each connection's requests in one piece."""
        dirty, self._dirty = self._dirty, []
        for link in dirty:
            if link.transport is None or not link.out:
                continue  # still connecting: written once it is open
            out, link.out = link.out, []
            link.transport.write(out[0] if len(out) == 1 else b"".join(out))

    def _connect(self, key: Key) -> _Link:
        link = _Link(self, key)
        self._links.setdefault(key, []).append(link)
        self.open += 1
        link.connecting = self.loop.create_task(self._open(link))
        return link

    async def _open(self, link: _Link) -> None:
        try:
            await self.loop.create_connection(lambda: link, link.key[0], link.key[1])
        except OSError:
            link.connecting = None
            self.drop(link, FAILED_TO_CONNECT)
            return
        link.connecting = None
        if link.lost:  # dropped while it connected (a timeout, a cancelled delivery, the stub stopping)
            if link.transport is not None:
                link.transport.close()
            return
        self._dirty.append(link)
        self.flush()

    def _arm(self, link: _Link, at: float) -> None:
        link.timer, link.timer_at = self.loop.call_at(at, self._tick, link), at

    def _tick(self, link: _Link) -> None:
        """A connection's timer: its oldest request timed out, it was idle too long, or it is not due yet."""
        link.timer = None
        if link.lost:
            return
        now = self.loop.time()
        if link.flights:
            due = link.flights[0].deadline
            if now >= due:
                self.drop(link, timed_out(self.timeout))
                return
        else:
            if not link.idle_since:  # idle since the last answer, seen now: closed if still idle IDLE_SECONDS on
                link.idle_since = now
            due = link.idle_since + IDLE_SECONDS
            if now >= due:
                self.drop(link, DISCONNECTED)
                return
        self._arm(link, due)

    def forget(self, exchange: Exchange) -> None:
        """`exchange` is no longer wanted (its delivery was cancelled): its connection goes when nothing else is in
        flight there; else its answer, when it comes, is read and dropped."""
        link = exchange.link
        if link is None:
            for waiting in self._waiting.values():
                if exchange in waiting:
                    waiting.remove(exchange)
            return
        if all(flight is exchange for flight in link.flights):
            self.drop(link, DISCONNECTED)

    def drop(self, link: _Link, why: str, first: str | None = None,
             answered: tuple[Exchange, int] | None = None) -> None:
        """Close `link`: its exchanges not answered fail (the oldest with `first` when given, the others with `why`);
        `answered`, the last answer read on it, completes after the connection is gone."""
        if link.lost:
            return
        link.lost = True
        if link.timer is not None:
            link.timer.cancel()
            link.timer = None
        links = self._links.get(link.key)
        if links is not None and link in links:
            links.remove(link)
            if not links:
                del self._links[link.key]
        self.open -= 1
        if link.connecting is not None:
            link.connecting.cancel()
            link.connecting = None
        if link.transport is not None:
            link.transport.close()
        flights, link.flights = link.flights, deque()
        link.out = []
        if answered is not None:
            answered[0].answered(answered[1])
        for n, flight in enumerate(flights):
            flight.failed(first if n == 0 and first is not None else why)
        self._serve_waiting()

    def _serve_waiting(self) -> None:
        """Exchanges that found no connection get one now that one closed."""
        while self._waiting and self.open < self.most:
            key = next(iter(self._waiting))
            waiting = self._waiting[key]
            exchange = waiting.popleft()
            if not waiting:
                del self._waiting[key]
            link = self._link_for(key)
            if link is None:
                self._waiting.setdefault(key, deque()).appendleft(exchange)
                break
            self._put(link, exchange)
        if self._dirty:
            self.flush()

    def _close_one_idle(self) -> bool:
        for links in self._links.values():
            for link in links:
                if not link.flights:
                    self.drop(link, DISCONNECTED)
                    return True
        return False

    def close(self) -> None:
        """Close every connection (the stub stops: what was in flight was cancelled before)."""
        for links in list(self._links.values()):
            for link in list(links):
                self.drop(link, DISCONNECTED)
        self._waiting.clear()
