"""A small HTTP/1.1 client for subscribed `http://` receivers: keep-alive connections kept per receiver, each request
written in one piece, only the answer's status read (issue 26: aiohttp's client cost a call 2-3x its CPU).

Sends what aiohttp's client sent (Host, User-Agent, Accept, Accept-Encoding, Content-Type, X-Plantstub-Webhook,
Content-Length) and fails as it did: `aiohttp.ClientConnectorError` when the receiver cannot be reached,
`aiohttp.ServerDisconnectedError` when it closes before answering, `asyncio.TimeoutError` past the timeout; an answer
that is not HTTP/1.x raises `UnreadableAnswer`. Nothing is ever sent twice by this client: a kept connection the
receiver closes before answering fails that attempt (the outbox counts it and tries again). Redirects are never
followed (a 3xx is an answer like any other). A connection idle for `IDLE_SECONDS` is closed, as aiohttp's was. Anything else (https, a password in the URL, callbacks,
whose addresses are guarded when resolved) goes through aiohttp's client (webhooks/outbox.py).
"""

from __future__ import annotations

import asyncio
from collections import deque
from urllib.parse import quote

import aiohttp
from aiohttp.client_reqrep import ConnectionKey
from yarl import URL

from plantstub._version import __version__
from plantstub.webhooks.sender import WEBHOOK_HEADER

_MOST_HEAD = 64 * 1024  # an answer's head longer than this is refused (aiohttp refuses long lines too)
_CACHED = 256  # request heads kept per (URL, name)
_MOST_LENGTH_DIGITS = 18  # a longer Content-Length is not believed (the connection is not reused)
IDLE_SECONDS = 15.0  # a kept connection unused this long is closed (aiohttp's keepalive_timeout)


class UnreadableAnswer(aiohttp.ClientPayloadError):
    """The receiver answered, but not in HTTP/1.x as this client reads it (the message says how)."""


def lean_target(url: str) -> URL | None:
    """`url` when this client sends to it (plain http, no user or password), else None."""
    parsed = URL(url)
    if parsed.scheme != "http" or parsed.raw_host is None or parsed.raw_user or parsed.raw_password:
        return None
    return parsed


class _Link(asyncio.Protocol):
    """One keep-alive connection to a receiver: one request at a time, its answer's head parsed, its body skipped."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[int] | None = None
        self.left = -1  # body bytes still to skip; -1: the end is not known (the connection is not reused)
        self.lost = False
        self.key = ("", 0)
        self.counted = True  # in LeanClient.open
        self.idle = False  # kept unused, in LeanClient's idle table
        # One timer a connection, moved forward lazily (not one per request): when it fires, an answer not in by
        # `due` fails its request, a connection kept unused until `due` is closed, else it waits until `due`.
        self.due = 0.0
        self.timer: asyncio.TimerHandle | None = None
        self.timer_at = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a TCP transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._fail(aiohttp.ServerDisconnectedError())

    def _fail(self, exc: BaseException) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def data_received(self, data: bytes) -> None:
        if self.waiter is None:  # the rest of an answer's body, or bytes nobody asked for
            if 0 <= len(data) <= self.left:
                self.left -= len(data)
                return
            self.left = -1
            self.close()
            return
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end > _MOST_HEAD or (end < 0 and len(self.buf) > _MOST_HEAD):
                self._fail(UnreadableAnswer("its head is over 64 KiB"))
                self.close()
                return
            if end < 0:
                return
            head = bytes(self.buf[:end]).decode("latin-1")
            del self.buf[: end + 4]
            status, left = _parsed(head)
            if status is None:
                self._fail(UnreadableAnswer("it is not HTTP/1.x"))
                self.close()
                return
            if status >= 200:
                break  # an interim answer (100 Continue) is skipped
        left = 0 if status in (204, 304) else left
        if left >= 0:
            left -= len(self.buf)
        self.buf.clear()
        self.left = left
        waiter, self.waiter = self.waiter, None
        if not waiter.done():
            waiter.set_result(status)

    def close(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.close()


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


class LeanClient:
    """Keep-alive connections per receiver (host, port), at most `most` open at once."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.open = 0
        self._idle: dict[tuple[str, int], deque[_Link]] = {}
        self._heads: dict[tuple[str, str], tuple[tuple[str, int], bytes]] = {}

    def _head(self, url: URL, raw: str, name: str) -> tuple[tuple[str, int], bytes]:
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

    async def post(self, url: URL, raw: str, name: str, payload: bytes, timeout: float) -> int:
        """POST `payload` to `url` (`raw`: as given), once; the receiver's status."""
        key, head = self._head(url, raw, name)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        data = b"%s%d\r\n\r\n%s" % (head, len(payload), payload)
        link = self._take(key)
        if link is None:
            link = await self._connect(key, deadline - loop.time())
        return await self._exchange(link, data, deadline, loop)

    async def _exchange(self, link: _Link, data: bytes, deadline: float, loop: asyncio.AbstractEventLoop) -> int:
        waiter: asyncio.Future[int] = loop.create_future()
        link.waiter = waiter
        link.due = deadline
        if link.timer is None or link.timer_at > deadline:
            if link.timer is not None:
                link.timer.cancel()
            link.timer, link.timer_at = loop.call_at(deadline, self._tick, link), deadline
        assert link.transport is not None
        link.transport.write(data)
        try:
            status = await waiter
        except BaseException:
            link.waiter = None
            self._drop(link)
            raise
        if link.left == 0 and not link.lost:
            self._idle.setdefault(link.key, deque()).append(link)
            link.idle = True
            link.due = loop.time() + IDLE_SECONDS  # the timer, due earlier, waits on until then
        else:
            self._drop(link)
        return status

    def _tick(self, link: _Link) -> None:
        """A connection's timer: its request timed out, it was kept unused too long, or it is not due yet."""
        link.timer = None
        if link.lost:
            return
        loop = asyncio.get_running_loop()
        if loop.time() < link.due:
            link.timer, link.timer_at = loop.call_at(link.due, self._tick, link), link.due
        elif link.waiter is not None:
            _expire(link.waiter)  # _exchange() then drops the connection
        elif link.idle:
            self._drop(link)

    def _take(self, key: tuple[str, int]) -> _Link | None:
        while idle := self._idle.get(key):
            link = idle[-1]
            self._unidle(link)
            if not link.lost and link.left == 0:
                return link
            self._drop(link)
        return None

    def _unidle(self, link: _Link) -> None:
        """Take `link` out of the idle table (its receiver's entry goes with its last one)."""
        link.idle = False
        idle = self._idle.get(link.key)
        if idle is not None and link in idle:
            idle.remove(link)
            if not idle:
                del self._idle[link.key]

    async def _connect(self, key: tuple[str, int], timeout: float) -> _Link:
        while self.open >= self.most and self._close_one_idle():
            pass
        loop = asyncio.get_running_loop()
        try:
            _, link = await asyncio.wait_for(loop.create_connection(_Link, key[0], key[1]), max(timeout, 0))
        except OSError as exc:
            raise aiohttp.ClientConnectorError(ConnectionKey(key[0], key[1], False, True, None, None, None), exc) from exc
        link.key = key
        self.open += 1
        return link

    def _close_one_idle(self) -> bool:
        idle = next(iter(self._idle.values()), None)
        if not idle:
            return False
        self._drop(idle[0])
        return True

    def _drop(self, link: _Link) -> None:
        self._unidle(link)
        if link.timer is not None:
            link.timer.cancel()
            link.timer = None
        if link.counted:
            link.counted = False
            self.open -= 1
        link.close()

    def close(self) -> None:
        for idle in list(self._idle.values()):
            for link in list(idle):
                self._drop(link)


def _expire(waiter: asyncio.Future[int]) -> None:
    if not waiter.done():
        waiter.set_exception(asyncio.TimeoutError())
