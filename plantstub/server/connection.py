"""One client connection, owned by plantstub: bytes parsed by aiohttp's request parser (server/parser.py), each
request served by the front (server/front.py) in the order it came, its answer written by server/wire.py.

- A request whose body came with its head is answered there and then, in `data_received`; one whose answer waits (a
  delay, the real service, the admin API) or whose body is still coming is served in a task, and the requests behind
  it wait their turn.
- Reading, --read-timeout and what cannot be parsed: server/reading.py.
- Backpressure: while the client does not read what was written (the transport's buffer is full), nothing more is
  read or answered.
- Plain HTTP: answers made in one turn of the event loop are written together at its end (`Batch`; over TLS each
  goes at once), in the order they were made, each connection's in one piece, flushed at once past 64 KiB
  (backpressure) and before anything else reaches the socket (a 100 Continue, a streamed answer, a fault, a close,
  the client's end).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Protocol, cast

from aiohttp.http import HttpVersion11, RawRequestMessage
from aiohttp.streams import EMPTY_PAYLOAD, StreamReader

from plantstub.contract.outgoing import error_reply
from plantstub.scenarios.model import Fault
from plantstub.server.answer import Answer, Streamed, chunks
from plantstub.server.batch import Batch
from plantstub.server.framing import Closed
from plantstub.server.front import Front, Pending
from plantstub.server.parser import BrokenBody
from plantstub.server.reading import Item, Reading
from plantstub.server.response import ReadTimeout, internal_error, unreadable
from plantstub.server.unread import Broken
from plantstub.server.wire import CONTINUE, chunk, misbehave, streamed_head, written

log = logging.getLogger("plantstub")


FLUSH_AT = 2**16  # an answer held past this is written at once: the transport's high-water mark then pauses reading


class Listening(Protocol):
    """What a connection reads of the socket it was accepted on (server/runner.py's Listener)."""

    front: Front
    loop: asyncio.AbstractEventLoop
    batch: Batch
    read_timeout: float
    scheme: str
    connections: set[Connection]


class Connection(Reading):
    """One client's connection to the stub (see the module's docstring; its reading side is server/reading.py's)."""

    __slots__ = ("_drained", "_front", "_left", "_out", "_scheme", "_server", "stopping")

    def __init__(self, server: Listening) -> None:
        super().__init__(server.loop, server.read_timeout)
        self._server = server
        self._front = server.front
        self._scheme = server.scheme
        self._drained: asyncio.Future[None] | None = None
        self._left: asyncio.Future[None] | None = None  # made when an answer waits on the client's leaving
        self._out = b""  # answers made this turn, not yet written (Batch)
        self.stopping = False  # the stub is stopping: it closes the connection, not the client

    # -- the connection's life ---------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a stream server's
        self._flow.connection_made(transport)  # TCP_NODELAY, and the transport the parser's readers pause
        self._server.connections.add(self)
        self._arm()  # a connection that never sends a byte is idle too

    def connection_lost(self, exc: BaseException | None) -> None:
        if self.transport is not None:  # closed by us too: Python 3.10's TLS transport warns at collection otherwise
            self.transport.close()
        self.transport = None
        self._flow.connection_lost(exc)
        self._server.connections.discard(self)
        self._server.batch.forget(self)
        # The parser and its protocol point back here: let them go now rather than at the next collection.
        self._flow.release()
        self._parser = Closed()
        self._head = self._last = self._out = b""
        if self._open is not None:  # a body still arriving: its reader learns the client left
            self._open.set_exception(ConnectionResetError("the client closed the connection"))
        if self._left is not None and not self._left.done():
            self._left.set_result(None)
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._queue.clear()

    def eof_received(self) -> None:
        """The client sent all it will (a half-close): what is held for the end of the turn goes out now, before the
        transport closes (as asyncio does when this returns None) and the connection is gone by the turn's end."""
        self.flush()

    def left(self) -> bool:
        """Whether the client has closed the connection."""
        return self.transport is None

    def lost(self) -> asyncio.Future[None]:
        """A future done once the client has closed the connection (an answer that waits stops waiting then)."""
        if self._left is None:
            self._left = self._loop.create_future()
            if self.transport is None:
                self._left.set_result(None)
        return self._left

    def pause_writing(self) -> None:
        """The client does not read what was written: stop reading and answering until it does."""
        self._paused = True
        if self.transport is not None:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        self._paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        if self.transport is not None and not self._ending:
            self.transport.resume_reading()
        self._next()

    async def _drain(self) -> None:
        if self._paused and self.transport is not None:
            self._drained = self._loop.create_future()
            await self._drained

    @property
    def busy(self) -> asyncio.Task[None] | None:
        """The task serving a request now, if one is."""
        return self._busy

    def close(self, abort: bool = False) -> None:
        """End the connection as the stub stops (`abort`: at once, for TLS, whose close would wait for the
        client's close_notify, which a kept-alive client never sends)."""
        if self.transport is not None:
            self.flush()  # what was made goes as far as it can, as when each answer was written at once
            if abort:
                self.transport.abort()
            else:
                self.transport.close()

    # -- serving, one request at a time, in the order they came ------------------------------------------
    def _arrived(self, item: Item) -> None:
        if self._busy is None and not self._queue and not self._paused:
            self._start(item)
        else:
            self._queue.append(item)

    def _next(self) -> None:
        while self._queue and self._busy is None and not self._paused and not self._ending:
            self._start(self._queue.popleft())

    def _start(self, item: Item) -> None:
        """Serve `item` now: answered at once, or in a task that answers it in its turn."""
        transport = self.transport
        if transport is None or self._ending:
            return
        try:
            if isinstance(item, Broken):
                self._front.refuse_unread(item.method, item.target, item.out)
                self._write(Answer(item.out, close=True), None)
                return
            message, payload = item
            pending = self._front.open(message.method, message.path, message.headers, message.raw_headers, self._scheme,
                                       message.url)
            if isinstance(pending, Answer):
                self._write(pending, message)
                return
            if payload is EMPTY_PAYLOAD:
                raw = b""
            elif payload.is_eof() and payload.exception() is None:
                raw = payload.read_nowait(-1)  # it came with its head (nearly always)
                refused = pending.over(len(raw))  # a chunked body, read whole
                if refused is not None:
                    self._write(refused, message)
                    return
            else:
                declared = message.headers.get("Content-Length")
                refused = pending.over(int(declared) if declared is not None and declared.isdigit() else None)
                if refused is not None:  # refused at once, before the client sends it
                    self._write(refused, message)
                    return
                if message.headers.get("Expect", "").lower() == "100-continue" and message.version >= HttpVersion11:
                    self.flush()
                    transport.write(CONTINUE)  # the client waits for a go-ahead before the body
                self._busy = self._loop.create_task(self._read_then_serve(pending, message, payload))
                return
            served = pending.serve(raw, self)
            if isinstance(served, Answer):
                self._write(served, message)
            else:
                self._busy = self._loop.create_task(self._finish(served, message))
        except Exception as exc:  # a plantstub bug: a JSON 500, and this connection ends; the stub keeps serving
            log.exception("plantstub: internal error on a connection")
            self._write(Answer(error_reply(500, internal_error(exc)), close=True), None)

    async def _read_then_serve(self, pending: Pending, message: RawRequestMessage, payload: StreamReader) -> None:
        try:
            raw = await pending.read(payload)
            if isinstance(raw, Answer):  # over --max-body
                answer = raw
            else:
                served = pending.serve(raw, self)
                answer = served if isinstance(served, Answer) else await served
        except ReadTimeout as exc:
            answer = pending.refuse(error_reply(408, str(exc)))
        except BrokenBody:  # a broken chunked encoding, gzip that does not inflate
            answer = pending.refuse(error_reply(400, unreadable(message.headers)))
        except ConnectionError:  # the client left mid-body: recorded, nothing to answer
            pending.left()
            answer = Answer(None)
        except Exception as exc:  # a plantstub bug: a JSON 500, and this connection ends; the stub keeps serving
            log.exception("plantstub: internal error on %s %s", message.method, message.path)
            answer = Answer(error_reply(500, internal_error(exc)), close=True)
        await self._answered(answer, message)

    async def _finish(self, served: Awaitable[Answer], message: RawRequestMessage) -> None:
        try:
            answer = await served
        except Exception as exc:  # a plantstub bug: a JSON 500, and this connection ends; the stub keeps serving
            log.exception("plantstub: internal error on %s %s", message.method, message.path)
            answer = Answer(error_reply(500, internal_error(exc)), close=True)
        await self._answered(answer, message)

    async def _answered(self, answer: Answer, message: RawRequestMessage) -> None:
        try:
            if isinstance(answer.out, Streamed):
                await self._stream(answer, answer.out, message)
            else:
                self._write(answer, message)
        finally:
            self._busy = None
        self._next()

    # -- writing: the bytes are server/wire.py's ---------------------------------------------------------
    def _write(self, answer: Answer, message: RawRequestMessage | None) -> None:
        transport = self.transport
        if transport is None or answer.out is None:
            return
        data, ending = written(answer, message, self.stopping)
        if isinstance(data, Fault):  # the reply misbehaves on the socket: nothing is written after it
            self._ending = True
            self.flush()
            misbehave(transport, data)
            return
        if self._out or (not ending and self._server.batch.holds(self)):
            self._out += data
        else:
            transport.write(data)
        if ending:
            self._end()
            return
        if len(self._out) > FLUSH_AT:
            self.flush()
        if not self._reading:
            self._arm()  # idle from now on

    def flush(self) -> None:
        """Write the answers held for the end of the turn (Batch), now."""
        if self._out and self.transport is not None:
            self.transport.write(self._out)
        self._out = b""

    def _end(self) -> None:
        """The last answer is written: the connection closes once it has gone out."""
        self._ending = True
        self._queue.clear()
        if self.transport is not None:
            self.flush()
            self.transport.close()

    async def _stream(self, answer: Answer, out: Streamed, message: RawRequestMessage) -> None:
        """A streamed admin answer: its head, then its body chunk by chunk as each is made, waiting while the client
        does not read."""
        transport = self.transport
        if transport is None:
            return
        data, chunked, ending = streamed_head(answer, out, message, self.stopping)
        self._ending = self._ending or ending
        self.flush()
        transport.write(data)
        if message.method != "HEAD":
            try:
                async for part in chunks(out):
                    if self.transport is None:
                        return
                    self.transport.write(chunk(part) if chunked else part)
                    await self._drain()
            except Exception:  # half an answer is sent: no 500 can follow it, so the connection is cut
                log.exception("plantstub: internal error on admin route %s %s", message.method, message.path)
                if self.transport is not None:
                    self.transport.abort()
                return
            if chunked and self.transport is not None:
                self.transport.write(chunk(b""))
        if self._ending:
            self._end()
        elif not self._reading:
            self._arm()

