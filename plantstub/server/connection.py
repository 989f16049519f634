"""One client connection: aiohttp's RequestHandler with a read timeout, a recorded JSON Error record for
what aiohttp cannot parse, and connection errors logged once in a while instead of once per client.

The parser is fed one request at a time (the usual read, one whole request, at once; else a head up to
its blank line, then its body by Content-Length), which changes nothing of what it parses; it means a
request followed by bytes that cannot be parsed is still answered, and the request line of a request
that breaks is at hand.

This leans on RequestHandler's internals (`_messages`, `_request_count`, `_waiter`, `_ErrInfo`), as
aiohttp offers no hook for any of it; checked on aiohttp 3.9.5 and 3.14.5.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.hdrs import CONTENT_LENGTH
from aiohttp.http import HttpProcessingError, RawRequestMessage
from aiohttp.http_exceptions import LineTooLong
from aiohttp.streams import EMPTY_PAYLOAD, StreamReader
from aiohttp.web_protocol import RequestHandler, _ErrInfo

from plantstub.contract.outgoing import Outgoing, error_reply
from plantstub.server.response import ReadTimeout, closing, internal_error, not_received

log = logging.getLogger("plantstub")
Refuse = Callable[[str, str, Outgoing], None]  # method, target, answer: records the call
# A whole request answered at once (server/sessions.py's SessionRouter.quick): True answered, False not taken, else
# decided with its answer to come in aiohttp's handler loop (a pipeline.Later, kept as `later` for it)
Quick = Callable[[RawRequestMessage, StreamReader, asyncio.Transport], Any]
LINE_LIMIT = 8190  # aiohttp's limit on the request line and on each header (max_line_size, max_field_size)
HEAD_KEPT = LINE_LIMIT + 2  # bytes of a request's head kept to name one that breaks: a whole request line
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}")  # an HTTP method as RFC 9110 spells a token
_QUIET = (ConnectionError, HttpProcessingError, web.RequestPayloadError)  # a client's doing, not a bug


def _one_request(data: bytes, head_end: int) -> bool:
    """Whether `data` is one request whose Content-Length says its body is all the rest: then it is fed
    to the parser at once. A hint only: the parser reads the same bytes either way."""
    return data.find(b"\r\nContent-Length: %d\r\n" % (len(data) - head_end), 0, head_end) >= 0


class ErrorLog:
    """Errors of one kind written at most once per `interval` seconds: the first at once, then one line per
    interval saying how many more came, so a flood of bad clients writes a few lines, not one each."""

    def __init__(self, loop: asyncio.AbstractEventLoop, interval: float = 10.0) -> None:
        self._loop = loop
        self._interval = interval
        self._more: dict[str, int] = {}  # kinds in their quiet interval, and how many came in it

    def allow(self, kind: str, text: str) -> bool:
        """Whether an error of `kind` is to be written now; if not, it is counted for the summary."""
        if kind in self._more:
            self._more[kind] += 1
            return False
        self._more[kind] = 0
        self._loop.call_later(self._interval, self._summary, kind, text)
        return True

    def report(self, kind: str, text: str, exc_info: BaseException | None = None) -> None:
        if self.allow(kind, text):
            log.error("plantstub: %s", text, exc_info=exc_info)

    def _summary(self, kind: str, text: str) -> None:
        more = self._more.pop(kind, 0)
        if more:  # still coming: say how many, and stay quiet one more interval
            self._more[kind] = 0
            self._loop.call_later(self._interval, self._summary, kind, text)
            log.error("plantstub: %d more in the last %g s: %s", more, self._interval, text)

    def loop_handler(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """The event loop's exception handler: asyncio reports each refused accept here, with a traceback,
        thousands a second once the open-file limit is reached."""
        exc = context.get("exception")
        message = str(context.get("message") or "error in the event loop")
        if isinstance(exc, OSError) and "accept" in message:
            self.report("accept", f"cannot accept connections: {exc.strerror or exc} (the open-file limit, "
                                  "ulimit -n, is too low for this many connections; --read-timeout closes "
                                  "stalled ones)")
        elif isinstance(exc, OSError):  # a client's socket went wrong: one line, no traceback
            self.report(message, f"{message}: {exc.strerror or exc}")
        elif self.allow(message, message):
            loop.default_exception_handler(context)


class Connection(RequestHandler):
    """aiohttp's connection handler with --read-timeout: a request must arrive in full (head and body)
    within `read_timeout` of its first byte, else it gets a 408 and the connection closes; a connection
    idle that long between requests is closed. A request aiohttp cannot parse gets a JSON 400, recorded."""

    def __init__(self, manager: web.Server, *, loop: asyncio.AbstractEventLoop, read_timeout: float,
                 refuse: Refuse, errors: ErrorLog, quick: Quick | None = None, **kwargs: Any) -> None:
        # aiohttp's own keep-alive timer only backs ours up: it would close a half-sent request silently.
        super().__init__(manager, loop=loop, keepalive_timeout=2 * read_timeout + 1, **kwargs)
        self._read_timeout = read_timeout
        self._refuse = refuse
        self._errors = errors
        self._head = b""  # the start of the request arriving now (its request line, at least)
        self._last = b""  # the last bytes fed, for a blank line split across two reads
        self._open: StreamReader | None = None  # the body still arriving
        self._body_left = 0  # its bytes still to come, when it has a Content-Length
        self._reading = False  # a request has started and is not complete
        self._stopped = False  # a request broke or timed out: nothing more is parsed
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._lost: asyncio.Future[None] | None = None  # made when a delayed reply waits on the client's leaving
        self.stopping = False  # the stub is stopping: it closes the connection, not the client
        self._quick = quick
        self.later: Any = None  # a request quick() decided, for the handler (server/sessions.py) to answer in turn

    def lost(self) -> asyncio.Future[None]:
        """A future done once the client has closed the connection (a delayed reply stops waiting then)."""
        if self._lost is None:
            self._lost = self._loop.create_future()
            if self.transport is None:
                self._lost.set_result(None)
        return self._lost

    # -- the timer: one per connection, moved forward lazily ------------------------------------------
    def _arm(self) -> None:
        self._deadline = self._loop.time() + self._read_timeout
        if self._timer is None:
            self._timer = self._loop.call_at(self._deadline, self._on_deadline)

    def _on_deadline(self) -> None:
        self._timer = None
        if self.transport is None or self._stopped:
            return
        if self._loop.time() < self._deadline:  # moved forward since: wait until then
            self._timer = self._loop.call_at(self._deadline, self._on_deadline)
        elif self._reading:
            self._time_out()
        elif self._waiter is not None and not self._waiter.done() and not self._messages:
            self.force_close()  # idle for --read-timeout: clients reconnect, as they do after any close

    def _time_out(self) -> None:
        """The request did not arrive in full in time: the handler reading its body gets ReadTimeout (and
        answers 408), or a head still arriving gets a 408 here. Either way the connection then closes."""
        self._stopped = True
        text = not_received(self._read_timeout)
        if self._open is not None:
            self._open.set_exception(ReadTimeout(text))
            self._open.feed_eof()  # no lingering over a body that will not come
            self.keep_alive(False)
            return
        self._messages.append((_ErrInfo(status=408, exc=ReadTimeout(text), message=text), EMPTY_PAYLOAD))
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm()  # a connection that never sends a byte is idle too

    async def shutdown(self, timeout: float | None = 15.0) -> None:
        self.stopping = True
        await super().shutdown(timeout)

    def connection_lost(self, exc: BaseException | None) -> None:
        later, self.later = self.later, None
        if later is not None:  # decided at once, and the client left before the handler loop took it
            later.pipeline.gone(later)
        super().connection_lost(exc)
        if self._lost is not None and not self._lost.done():
            self._lost.set_result(None)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def log_access(self, request: web.BaseRequest, response: web.StreamResponse, time: Any) -> None:
        """Called once each answer is sent (aiohttp's access log hook, off here): idle from now on."""
        if request.method == "CONNECT":  # refused; what follows would be a tunnel: nothing to read after it
            self.force_close()
        elif not self._reading:
            self._arm()

    # -- feeding the parser a part of a request at a time ---------------------------------------------
    def data_received(self, data: bytes) -> None:
        if self._stopped:
            return
        if not data:  # aiohttp re-parsing what it held back (after each body read, a queue that was full)
            count = self._request_count
            RequestHandler.data_received(self, data)
            if self._request_count != count:
                self._fed(count)
            return
        if not self._reading and not self._last:  # the first byte of a request: its time starts
            self._reading = True
            end = data.find(b"\r\n\r\n") + 4
            if end >= 4 and (end == len(data) or _one_request(data, end)):
                # The usual read: one whole request and nothing after it, fed as it came. Inline, as it
                # runs for nearly every request; once it is answered, log_access() starts the idle time.
                count = self._request_count
                waiter = self._waiter
                idle = waiter is not None and not waiter.done() and not self._messages and self._quick is not None
                if idle:  # nothing in flight: the request may be answered here, at once, in its turn
                    self._waiter = None  # the parser's queue is read below before the handler loop wakes
                    try:
                        RequestHandler.data_received(self, data)
                    finally:
                        self._waiter = waiter
                    if self._request_count == count + 1 and len(self._messages) == 1:
                        message, payload = self._messages[0]
                        if payload.is_eof() and isinstance(message, RawRequestMessage):
                            self._reading = False
                            if self._at_once(message, payload):
                                return
                    if self._messages:
                        waiter.set_result(None)  # type: ignore[union-attr]  # idle: a waiter not done
                else:
                    RequestHandler.data_received(self, data)
                if self._request_count == count + 1 and self._messages:
                    message, payload = self._messages[-1]
                    if payload.is_eof() and isinstance(message, RawRequestMessage):
                        self._reading = False
                        return
                self._head = data[:HEAD_KEPT]
                self._fed(count)
                if self._reading and not self._stopped:  # a chunked body still to come, an upgrade
                    self._arm()
                return
            self._arm()
        elif not self._reading:
            self._reading = True
            self._arm()
        pos, size = 0, len(data)
        while pos < size:
            if self._body_left:
                end = min(size, pos + self._body_left)
                self._body_left -= end - pos
            else:  # a head, or a chunked body: up to the next blank line (a chunked body ends with one)
                end = self._blank_line_end(data, pos)
                if self._open is None:
                    self._keep_head(data if end - pos == size else data[pos:end])
            self._feed(data if end - pos == size else data[pos:end])
            if self._stopped:
                return
            pos = end

    def _at_once(self, message: RawRequestMessage, payload: StreamReader) -> bool:
        """Answer the one request in the queue here (SessionRouter.quick), without aiohttp's handler loop; True when
        it was (the queue is empty again), False when the loop is to take it (woken by the caller)."""
        taken = self._quick(message, payload, self.transport)  # type: ignore[misc, arg-type]  # idle: set, connected
        if taken is True:
            self._messages.popleft()
            self._manager.requests_count += 1  # type: ignore[union-attr]  # connected: a manager
            self._arm()  # idle from now on, as log_access() makes it after an answer aiohttp wrote
            # aiohttp's backup timer, told the connection is not idle (its handler loop tells it after each answer)
            self._next_keepalive_close_time = self._loop.time() + self._keepalive_timeout
            return True
        if taken is not False:  # decided: the handler loop answers it in its turn, with its body read already
            self.later = taken
        return False

    def _blank_line_end(self, data: bytes, pos: int) -> int:
        """Where the next `\r\n\r\n` in `data` ends (one begun in the previous read counts), else len(data)."""
        last = self._last
        if last:
            self._last = b""
            if pos == 0 and (found := (last + data[:3]).find(b"\r\n\r\n")) >= 0:
                return found + 4 - len(last)
        found = data.find(b"\r\n\r\n", pos)
        if found >= 0:
            return found + 4
        self._last = (last + data[pos:])[-3:]
        return len(data)

    def _keep_head(self, part: bytes) -> None:
        if not self._head:
            self._head = part[:HEAD_KEPT]  # no copy for a usual head: `part` is fed, and let go when complete
        elif len(self._head) < HEAD_KEPT:  # a head arriving in several reads
            self._head = (self._head + part[:HEAD_KEPT])[:HEAD_KEPT]

    def _feed(self, part: bytes) -> None:
        count = self._request_count
        RequestHandler.data_received(self, part)
        self._fed(count)

    def _fed(self, count: int) -> None:
        """After a part was fed: a request that ended, a body that is still to come, or a parser that failed."""
        if self._request_count != count:  # a head ended, or the parser failed
            message, payload = self._messages[-1] if self._messages else (None, EMPTY_PAYLOAD)
            if not isinstance(message, RawRequestMessage):
                self._broken()
                return
            if payload.is_eof():
                self._complete()
                return
            self._open = payload
            if not message.chunked:
                self._body_left = int(message.headers.get(CONTENT_LENGTH) or 0)
        elif self._open is not None and self._open.is_eof():
            self._complete()

    def _complete(self) -> None:
        """The request arrived in full: the timer now waits for the connection to go idle."""
        self._reading = False
        self._open = None
        self._body_left = 0
        self._head = b""
        self._last = b""
        self._arm()

    def _broken(self) -> None:
        """The parser failed: a body still arriving fails its reader (the pipeline answers 400); else the
        queued error is answered by handle_error. Nothing more is parsed on this connection."""
        self._stopped = True
        if self._open is not None:
            self._open.set_exception(web.RequestPayloadError("the body's framing is broken"))
            self._open.feed_eof()
            self._open = None

    # -- answers aiohttp gives on its own -------------------------------------------------------------
    def handle_error(self, request: Any, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        """A request aiohttp could not parse (400), or that did not arrive in time (408): a JSON Error
        record, recorded as a call. Anything else is a plantstub bug: a JSON 500."""
        if request.writer.output_size > 0:
            raise ConnectionError("response is sent already, cannot send the error")
        if not isinstance(exc, (HttpProcessingError, ReadTimeout)):
            self.log_exception("internal error on a connection", exc_info=exc)
            return closing(error_reply(status, internal_error(exc)))
        method, target = self._request_line()
        out = error_reply(status, self._why(status, exc, message))
        self._refuse(method, target, out)
        return closing(out)

    def _why(self, status: int, exc: BaseException, message: str | None) -> str:
        if isinstance(exc, ReadTimeout):
            return str(exc)
        if isinstance(exc, LineTooLong):
            if 0 <= self._head.find(b"\n") <= LINE_LIMIT + 1:
                return f"headers: a header is longer than {LINE_LIMIT} bytes"
            return f"request: the request line is longer than {LINE_LIMIT} bytes"
        if self._head.startswith(b"\x16\x03"):  # a TLS record: a ClientHello
            return "request: this is TLS (https://) on a plain HTTP port; use http://"
        reason = (message or str(exc) or HTTPStatus(status).phrase).strip().splitlines()[0]
        return f"request: cannot be parsed as HTTP/1.1: {reason[:200]}"

    def _request_line(self) -> tuple[str, str]:
        """The method and target of the request that broke, as far as they arrived; `""` for unknown."""
        method, _, rest = self._head.split(b"\n", 1)[0].rstrip(b"\r").partition(b" ")
        if not _TOKEN.fullmatch(method):
            return "", ""
        return method.decode("ascii"), rest.split(b" ", 1)[0].decode("utf-8", "replace")

    def log_exception(self, *args: Any, **kw: Any) -> None:
        """aiohttp's error log: what a client caused is not worth a traceback; the rest once in a while."""
        exc = kw.get("exc_info")
        if isinstance(exc, _QUIET):
            log.debug("plantstub: %s", exc)
            return
        text = str(args[0] % args[1:]) if args else "error on a connection"
        self._errors.report(text, text, exc if isinstance(exc, BaseException) else None)
