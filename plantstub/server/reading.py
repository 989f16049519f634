"""The reading side of plantstub's connections (server/connection.py's `Connection` serves and writes): bytes fed to
aiohttp's request parser (server/parser.py), --read-timeout's one timer, and what cannot be parsed or did not arrive.

- --read-timeout: a request must arrive in full within it of its first byte (else a 408, and the connection closes);
  a connection idle that long between requests is closed.
- The parser is fed one request at a time (the usual read, one whole request, at once; else a head up to its blank
  line, then its body by Content-Length), which changes nothing of what it parses: a request followed by bytes that
  cannot be parsed is still answered, and the request line of one that breaks is at hand.
"""

from __future__ import annotations

import asyncio
from collections import deque

from aiohttp.http import HttpProcessingError, RawRequestMessage
from aiohttp.streams import StreamReader

from plantstub.contract.outgoing import Outgoing, error_reply
from plantstub.server.framing import Closed, blank_line_end, kept_head, one_request
from plantstub.server.parser import BrokenBody, Flow, request_parser
from plantstub.server.response import ReadTimeout, not_received
from plantstub.server.unread import TLS_ON_PLAIN, Broken, request_line, unparsable

Item = tuple[RawRequestMessage, StreamReader] | Broken  # a request parsed, or one that could not be


class Reading(asyncio.Protocol):
    """A connection's reading side: each request parsed is handed to `_start()` when its turn has come, else queued;
    one that cannot be read to `_arrived()` (both the serving side's, server/connection.py)."""

    __slots__ = ("_body_left", "_busy", "_deadline", "_ending", "_flow", "_head", "_last", "_loop", "_open",
                 "_parser", "_paused", "_queue", "_read_timeout", "_reading", "_timer", "transport")

    def __init__(self, loop: asyncio.AbstractEventLoop, read_timeout: float) -> None:
        self._loop = loop
        self._read_timeout = read_timeout
        self.transport: asyncio.Transport | None = None
        self._flow = Flow(loop, self.data_received)
        self._parser = request_parser(self._flow, loop)
        self._queue: deque[Item] = deque()  # parsed requests waiting for their turn
        self._busy: asyncio.Task[None] | None = None  # the request being served in a task
        self._paused = False  # the client is not reading: nothing more is read or answered
        self._ending = False  # the last answer is written: nothing more is parsed or answered
        self._head = b""  # the start of the request arriving now (its request line, at least)
        self._last = b""  # the last bytes fed, for a blank line split across two reads
        self._open: StreamReader | None = None  # the body still arriving
        self._body_left = 0  # its bytes still to come, when it has a Content-Length
        self._reading = False  # a request has started and is not complete
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None

    def _start(self, item: Item) -> None:
        """Serve `item` now (the serving side's)."""
        raise NotImplementedError

    def _arrived(self, item: Item) -> None:
        """Serve `item` in its turn (the serving side's)."""
        raise NotImplementedError

    # -- the timer: one per connection, moved forward lazily ---------------------------------------------
    def _arm(self) -> None:
        self._deadline = self._loop.time() + self._read_timeout
        if self._timer is None:
            self._timer = self._loop.call_at(self._deadline, self._on_deadline)

    def _on_deadline(self) -> None:
        self._timer = None
        if self.transport is None or self._ending:
            return
        if self._loop.time() < self._deadline:  # moved forward since: wait until then
            self._timer = self._loop.call_at(self._deadline, self._on_deadline)
        elif self._reading:
            self._time_out()
        elif self._busy is None and not self._queue:
            self.transport.close()  # idle for --read-timeout: clients reconnect, as they do after any close

    def _time_out(self) -> None:
        """The request did not arrive in full in time: a body still arriving fails its reader (which answers 408), or
        a head still arriving is answered 408 in its turn. Either way the connection then closes."""
        text = not_received(self._read_timeout)
        self._reading = False
        if self._open is not None:
            self._open.set_exception(ReadTimeout(text))
            return
        self._broken(error_reply(408, text))

    # -- reading: the parser fed a part of a request at a time -------------------------------------------
    def data_received(self, data: bytes) -> None:
        if self._ending:
            return
        if not data:  # the parser taking up what it held back (a body reader read what it had)
            self._feed(data)
            return
        if not self._reading and not self._last:  # the first byte of a request
            if data[:2] == b"\x16\x03":  # a TLS record: nothing to wait for, whichever parser would wait for a line
                self._head = data
                self._broken(error_reply(400, TLS_ON_PLAIN))
                return
            end = data.find(b"\r\n\r\n") + 4
            if end >= 4 and (end == len(data) or one_request(data, end)):
                # The usual read: one whole request and nothing after it, fed as it came; once answered, the
                # connection's idle time starts (_write()).
                self._head = data
                self._feed(data)
                return
            self._reading = True  # its time starts
            self._head = b""
            self._arm()
        elif not self._reading:
            self._reading = True
            self._arm()
        pos, size = 0, len(data)
        while pos < size and not self._ending:
            if not self._reading:  # a request starts behind one this read completed: its time starts now
                if isinstance(self._parser, Closed):  # nothing more is read on this connection (a 400, an upgrade)
                    break
                self._reading = True
                self._arm()
            if self._body_left:
                end = min(size, pos + self._body_left)
                self._body_left -= end - pos
            else:  # a head, or a chunked body: up to the next blank line (a chunked body ends with one)
                end, self._last = blank_line_end(self._last, data, pos)
                if self._open is None:
                    self._head = kept_head(self._head, data if end - pos == size else data[pos:end])
            self._feed(data if end - pos == size else data[pos:end])
            pos = end

    def _feed(self, part: bytes) -> None:
        try:
            messages, upgraded, _ = self._parser.feed_data(part)
        except HttpProcessingError as exc:
            self._unparsable(exc)
            return
        for message, payload in messages:
            if payload.is_eof():
                if self._reading:
                    self._complete()
            else:  # its body still to come
                self._open = payload
                if not message.chunked:
                    self._body_left = int(message.headers.get("Content-Length") or 0)
            if self._busy is None and not self._queue and not self._paused:  # its turn: served now
                self._start((message, payload))
            else:
                self._queue.append((message, payload))
        if not messages and self._open is not None and self._open.is_eof():
            self._complete()
        if upgraded:  # CONNECT or a protocol switch: answered (then the connection ends), nothing more is parsed
            self._stop_reading()

    def _complete(self) -> None:
        """A request arrived in full (its answer, once written, starts the idle time)."""
        self._reading = False
        self._open = None
        self._body_left = 0
        self._head = b""
        self._last = b""

    def _unparsable(self, exc: HttpProcessingError) -> None:
        """The parser failed: a body still arriving fails its reader (answered 400 by its task); else the request that
        broke is answered 400 in its turn. Nothing more is parsed on this connection."""
        if self._open is not None:
            self._open.set_exception(BrokenBody("the body's framing is broken"))
            self._stop_reading()
            return
        self._broken(error_reply(400, unparsable(exc, self._head)))

    def _broken(self, out: Outgoing) -> None:
        method, target = request_line(self._head)
        self._reading = False
        self._last = b""
        self._arrived(Broken(method, target, out))
        self._stop_reading()

    def _stop_reading(self) -> None:
        self._parser = Closed()
        self._body_left = 0
