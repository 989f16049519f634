"""The door of an HTTPS stub: each new connection's first byte is looked at (not read) before TLS starts. A TLS
handshake goes on to plantstub's connection, bounded by --read-timeout; plain HTTP sent to the HTTPS port gets a
plain-text-framed JSON 400 saying so, recorded, instead of a handshake that fails without a word.

What comes with the handshake's end is served by plantstub's connection as it comes, before start_tls() returns:
the TLS transport is taken from asyncio's TLS protocol (a private name of the standard library, on the Pythons it was
proven on: `_PROVEN`), since a client's close_notify in the same read starts TLS's shutdown at once."""

from __future__ import annotations

import asyncio
import socket
import ssl
import sys
from collections.abc import Callable

from plantstub.contract.outgoing import error_reply
from plantstub.server.front import Front
from plantstub.server.wire import answer_bytes

PLAIN_HTTP = "request: this is plain HTTP on an HTTPS port; use https://"
_HEAD_KEPT = 8192  # bytes of a plain request read to name it
# The Pythons whose asyncio TLS protocol _secure() reaches into (its one private name here), floor included, ceiling
# not: proven on 3.10 to 3.13. Elsewhere requests that come with the handshake's end wait for start_tls() to return,
# and are not answered when the client's close_notify came with them.
_PROVEN = ((3, 10), (3, 14))


class TlsDoor(asyncio.Protocol):
    """A connection to an HTTPS stub until its first byte is known: then TLS and `make()`'s protocol, or the 400."""

    def __init__(self, make: Callable[[], asyncio.Protocol], context: ssl.SSLContext, front: Front,
                 timeout: float, doors: set[TlsDoor]) -> None:
        self._make = make
        self._doors = doors  # the doors open now, aborted when the stub stops
        self._context = context
        self._front = front
        self._timeout = timeout
        self._transport: asyncio.Transport | None = None
        self._task: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)  # a stream server's
        self._transport = transport
        self._doors.add(self)
        # Nothing is read before the first byte is known: TLS reads it itself. Paused in the loop's next turn: before
        # Python 3.11 the transport starts reading after this method, in a callback of its own already queued.
        asyncio.get_running_loop().call_soon(self._begin, transport)

    def _begin(self, transport: asyncio.Transport) -> None:
        if self._transport is None:  # gone already
            return
        transport.pause_reading()
        self._task = asyncio.get_running_loop().create_task(self._open(transport))

    def data_received(self, data: bytes) -> None:  # never, while reading is paused: what TLS needs would be lost
        if self._transport is not None:
            self._transport.abort()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._transport = None
        self._doors.discard(self)

    def abort(self) -> None:
        """The stub stops: a connection still at its door is cut."""
        if self._task is not None:
            self._task.cancel()
        if self._transport is not None:
            self._transport.abort()

    async def _open(self, transport: asyncio.Transport) -> None:
        try:
            await self._through(transport)
        finally:
            self._doors.discard(self)

    async def _through(self, transport: asyncio.Transport) -> None:
        loop = asyncio.get_running_loop()
        try:
            first = await asyncio.wait_for(_peek(loop, transport), self._timeout)
        except (OSError, asyncio.TimeoutError):  # nothing came within --read-timeout, or the client left
            transport.abort()
            return
        if not first:
            transport.close()
            return
        if first != b"\x16":  # not a TLS handshake record: most likely a plain HTTP request
            plain = _PlainHttp(self._front, self._timeout)
            transport.set_protocol(plain)
            plain.connection_made(transport)
            transport.resume_reading()
            return
        early = _Early(transport, self._make)  # what arrives with the handshake's end, before start_tls() returns
        try:
            secure = await loop.start_tls(transport, early, self._context, server_side=True,
                                          ssl_handshake_timeout=self._timeout)
        except (OSError, ssl.SSLError, asyncio.TimeoutError, ConnectionError):  # a handshake that failed or stalled
            transport.abort()
            return
        if secure is None:  # the client left during the handshake
            transport.abort()
            return
        early.hand_over(secure)


async def _peek(loop: asyncio.AbstractEventLoop, transport: asyncio.Transport) -> bytes:
    """The connection's first byte, left unread (b"": the client closed it). Watched on a copy of its descriptor: the
    loop lends the transport's own to nobody else."""
    fd = transport.get_extra_info("socket").fileno()
    with socket.socket(fileno=socket.dup(fd)) as sock:
        ready: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(sock.fileno(), readable)
        try:
            await ready
        finally:
            loop.remove_reader(sock.fileno())
        return sock.recv(1, socket.MSG_PEEK)


class _Early(asyncio.Protocol):
    """The protocol of a TLS connection until its own takes over: it keeps what came meanwhile and hands it over."""

    def __init__(self, raw: asyncio.Transport, make: Callable[[], asyncio.Protocol]) -> None:
        self._raw = raw  # the TCP transport under TLS
        self._make = make
        self._data: list[bytes] = []
        self._eof = False
        self._lost: tuple[Exception | None] | None = None
        self._handed = False

    def data_received(self, data: bytes) -> None:
        self._data.append(data)
        self._take_over()

    def eof_received(self) -> None:
        self._eof = True
        self._take_over()

    def _take_over(self) -> None:
        """What came with the handshake's end is served now by the connection's own protocol, before start_tls()
        returns: the client's close_notify may come in the same read, and asyncio's TLS shuts down as soon as it has
        read it (answers written after that are dropped)."""
        secure = _secure(self._raw)
        if secure is not None:
            self.hand_over(secure)

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = (exc,)

    def hand_over(self, transport: asyncio.Transport) -> None:
        """The connection's own protocol takes `transport` (TLS's) and what came before it did (once)."""
        if self._handed:
            return
        self._handed = True
        protocol = self._make()
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        for data in self._data:
            protocol.data_received(data)
        if self._eof:
            protocol.eof_received()
        if self._lost is not None:
            protocol.connection_lost(self._lost[0])


def _secure(raw: asyncio.Transport) -> asyncio.Transport | None:
    """The TLS transport over `raw` before start_tls() returns it (asyncio's TLS protocol makes it when it is made);
    None on a Python not proven (_PROVEN), or when it is not found there."""
    if not _PROVEN[0] <= sys.version_info[:2] < _PROVEN[1]:
        return None
    secure = getattr(raw.get_protocol(), "_app_transport", None)
    return secure if isinstance(secure, asyncio.Transport) else None


class _PlainHttp(asyncio.Protocol):
    """Plain HTTP on the HTTPS port: the request's head read (as far as 8 KiB, or what came within --read-timeout),
    recorded, answered 400, closed."""

    def __init__(self, front: Front, timeout: float) -> None:
        self._front = front
        self._timeout = timeout
        self._head = b""
        self._transport: asyncio.Transport | None = None
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._timer = asyncio.get_running_loop().call_later(self._timeout, self._answer)  # never held open for good

    def data_received(self, data: bytes) -> None:
        if self._transport is None:
            return
        self._head += data
        if b"\r\n\r\n" in self._head or len(self._head) >= _HEAD_KEPT:
            self._answer()

    def _answer(self) -> None:
        transport = self._transport
        if transport is None:
            return
        if self._timer is not None:
            self._timer.cancel()
        line = self._head.split(b"\r\n", 1)[0].decode("latin-1")
        method, _, rest = line.partition(" ")
        target = rest.split(" ", 1)[0]
        out = error_reply(400, PLAIN_HTTP)
        self._front.refuse_unread(method if method.isalpha() and len(method) <= 32 else "", target[:1000], out)
        transport.write(answer_bytes(out, None, method == "HEAD", "close"))
        transport.close()
        self._transport = None

    def connection_lost(self, exc: BaseException | None) -> None:
        self._transport = None
        if self._timer is not None:
            self._timer.cancel()
