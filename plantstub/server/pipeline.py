"""The request pipeline of one session: aiohttp's request -> IncomingRequest -> decide() -> aiohttp's response;
the call is recorded in `finally`, on every path."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from aiohttp import ClientConnectionError, web
from aiohttp.http import RawRequestMessage
from aiohttp.streams import EMPTY_PAYLOAD, StreamReader
from yarl import URL

from plantstub._json import NO_BODY, is_json
from plantstub.contract.model import Operation
from plantstub.contract.outgoing import Outgoing, error_reply
from plantstub.incoming import IncomingRequest, sent_method
from plantstub.recording.call import Record
from plantstub.recording.requestlog import RequestLogger
from plantstub.server.admin import ADMIN_PREFIX, AdminRoutes
from plantstub.server.cors import allow_origin
from plantstub.server.decide import UNANSWERED, Decision, decide, refusal, send_webhooks
from plantstub.server.response import (
    ReadTimeout,
    closing,
    internal_error,
    not_received,
    send_fault,
    sent_headers,
    to_response,
    too_large,
    unreadable,
)
from plantstub.server.runtime import Runtime
from plantstub.server.session import Session
from plantstub.server.wire import answer, at_once

Sent = web.BaseRequest | RawRequestMessage  # what a call is recorded from: both carry method, headers, raw_headers

log = logging.getLogger("plantstub")
_GONE = error_reply(499, "client went away before the answer")
_NO_HEADERS: dict[str, str] = {}  # a pending call's reply headers: none yet (never changed: Record.view copies)


class _Keeper:
    """Where every call goes once answered: the journal, coverage and the request log."""

    __slots__ = ("journal", "logger", "tally")

    def __init__(self, session: Session) -> None:
        self.journal = session.journal
        self.tally = session.tally
        self.logger = RequestLogger(session.runtime.settings.log_format)

    def keep(self, record: Record, epoch: int, body: Any, response_body: Any, op: Operation | None) -> None:
        if self.journal.append(record, epoch, body, response_body):
            self.tally.count(op, record.status)
        if self.logger.enabled:
            self.logger.log(record)


def make_refusal(session: Session) -> Callable[[str, str, Outgoing], None]:
    """Record a request the pipeline never saw: aiohttp could not parse it, or it did not arrive in full.

    Called with the method and the target as far as they were read (`""` when not even that), and the
    answer sent; the call has no headers, no body, and `errors` holds the answer's message.
    """
    keeper = _Keeper(session)

    def refuse(method: str, target: str, out: Outgoing) -> None:
        seq, epoch = keeper.journal.arrive()
        record = Record.of(
            seq, time.time(), method, target, "", (), b"", NO_BODY, False, (out.body["message"],),
            None, None, out.status, sent_headers(out), out.payload, True, None,
        )
        keeper.keep(record, epoch, NO_BODY, out.body, None)

    return refuse


def _aiohttp_answer(out: Outgoing, request: web.BaseRequest) -> web.StreamResponse:
    return to_response(out, request.method == "HEAD")


def incoming_of(request: web.BaseRequest, url: URL, path: str, raw: bytes, query: dict[str, list[str]],
                raw_query: str) -> IncomingRequest:
    """aiohttp's request as the pipeline reads it, at `url` (plantstub serves plain HTTP: the scheme is http)."""
    return IncomingRequest(sent_method(request.method), path, query, request.headers, raw, url.raw_path, raw_query)


def _query(url: URL) -> tuple[dict[str, list[str]], str]:
    """The query parameters of `url` and its query string as sent ("" when it holds none)."""
    if not url.raw_query_string:  # most calls carry none: aiohttp's MultiDict is not built for nothing
        return {}, ""
    query = {k: url.query.getall(k) for k in url.query}
    return query, url.raw_query_string if query else ""


def _arrived(request: web.BaseRequest) -> bytes | None:
    """The whole body when it came with the head (nearly every request), taken without waiting; None otherwise."""
    content = request.content
    if content.is_eof() and content.exception() is None:
        return content.read_nowait()
    return None


async def _continue(request: web.BaseRequest) -> None:
    """Answer `Expect: 100-continue` with `100 Continue` (curl sends it for bodies over 1 MiB): the client
    waits for a go-ahead before the body, which aiohttp's low-level server does not give on its own."""
    if request.version < (1, 1) or request.headers.get("Expect", "").lower() != "100-continue":
        return
    await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    request.writer.output_size = 0  # the answer proper has not started


async def _wait_out(request: web.BaseRequest, delay_ms: int) -> bool:
    """Wait out a reply's delay; False as soon as the client closes the connection (then nobody is waiting)."""
    lost = getattr(request.protocol, "lost", None)  # server/connection.py's; aiohttp's own handler has none
    if lost is None:  # create_app() in the user's own server: a client that left is seen once the delay is over
        await asyncio.sleep(delay_ms / 1000)
        return request.transport is not None
    closed = lost()
    if not closed.done():
        await asyncio.wait((closed,), timeout=delay_ms / 1000)
    return not closed.done()


def _unsent(request: web.BaseRequest, delay_ms: int) -> str:
    """Why a delayed reply never went out: the stub stopping (closing its connections), or the client leaving."""
    stopping = getattr(request.protocol, "stopping", False) or request.transport is not None
    why = "the stub stopped" if stopping else "the client closed the connection"
    return f"request: {why} before the reply delayed {delay_ms} ms (delay_ms) was sent; no answer went out"


class Later(NamedTuple):
    """A request decided at once (`Pipeline.quick`) whose answer must wait (a delay, a fault, an answer aiohttp
    writes): aiohttp's handler loop takes it from here (`Pipeline.handle(request, later=...)`), in its turn."""

    pipeline: Pipeline
    seq: int
    epoch: int
    started: float
    path: str
    raw_query: str
    raw: bytes
    incoming: IncomingRequest
    decision: Decision
    origin: str | None  # --cors: the Origin to allow, else None
    message: RawRequestMessage


class Pipeline:
    """One session's pipeline: route, read, decide, wait out a delay, send webhooks, answer, record; a request
    under ADMIN_PREFIX goes to the admin routes instead."""

    def __init__(self, runtime: Runtime, session: Session, admin: AdminRoutes, lean: bool = False) -> None:
        self.runtime = runtime
        # The lean server's common answers go out in one write (server/wire.py); an Application's as its Responses.
        self.respond = answer if lean else _aiohttp_answer
        self.session = session
        self.admin = admin
        self.journal = session.journal
        self.keeper = _Keeper(session)
        self.max_body = runtime.settings.max_body
        self.read_timeout = runtime.settings.read_timeout

    def quick(self, message: RawRequestMessage, url: URL | None, target: str, payload: StreamReader, transport: Any,
              origin: str | None) -> Later | bool:
        """Answer a request that arrived whole at once, with no task, no aiohttp request and no Response: decide,
        write the answer in one piece, record (server/connection.py calls it from data_received). False: not taken,
        nothing done (the admin API, a body over --max-body); a Later: decided, its answer to come in aiohttp's
        handler loop (a delay, a fault, an answer that is not the usual one). `origin`: --cors's, to allow. `url`:
        the target read by yarl, None for a plain `target` (no query, no percent-escape: its own path)."""
        path = target if url is None else url.path
        if path.startswith(ADMIN_PREFIX) or payload.total_bytes > self.max_body or not path.startswith("/"):
            return False
        raw = b"" if payload is EMPTY_PAYLOAD else payload.read_nowait()  # arrived whole (server/connection.py)
        started = time.time()
        seq, epoch = self.journal.arrive()
        query, raw_query = ({}, "") if url is None else _query(url)
        raw_path = target if url is None else url.raw_path
        incoming = IncomingRequest(sent_method(message.method), path, query, message.headers, raw, raw_path, raw_query)
        try:
            decision = decide(self.runtime, self.session, incoming, self.session.active)
        except Exception as exc:  # a plantstub bug: answered in the Error shape below, the stub keeps serving
            log.exception("plantstub: internal error on %s %s", message.method, message.path)
            decision = UNANSWERED.crashed(internal_error(exc))
        if not decision.delay_ms and decision.fault is None and not decision.forward:  # --proxy: in the handler loop
            data = at_once(decision.out, origin)  # type: ignore[arg-type]  # decided
            if data is not None:
                try:
                    if decision.sends:
                        send_webhooks(self.session, incoming, decision)
                except Exception as exc:  # as handle() answers a plantstub bug
                    log.exception("plantstub: internal error on %s %s", message.method, message.path)
                    decision = decision.crashed(internal_error(exc))
                    data = at_once(decision.out, None)  # type: ignore[arg-type]  # crashed() answers
            if data is not None:  # recorded first: a client that has its answer finds its call in the journal
                self._record(seq, epoch, started, message, path, raw_query, raw, decision)
                transport.write(data)
                return True
        return Later(self, seq, epoch, started, path, raw_query, raw, incoming, decision, origin, message)

    def gone(self, later: Later) -> None:
        """Record a request `quick` decided whose client left before the handler loop took it: nothing went out."""
        decision = later.decision.unsent("request: the client closed the connection before the reply was sent; no "
                                         "answer went out")
        self._record(later.seq, later.epoch, later.started, later.message, later.path, later.raw_query, later.raw,
                     decision)

    async def finish(self, request: web.BaseRequest, later: Later) -> web.StreamResponse:
        """The answer to a request `quick` decided, written by aiohttp (with --cors's headers for its origin)."""
        response = await self.handle(request, later=later)
        if later.origin is not None:
            allow_origin(request, response)
        return response

    async def handle(self, request: web.BaseRequest, url: URL | None = None,
                     later: Later | None = None) -> web.StreamResponse:
        """Answer one request (an aiohttp handler); `url`: its target within a session's prefix (server/sessions.py),
        which saves a clone of the request; `later`: decided already (`quick`), to be answered now."""
        if later is None:
            # A body declared over the limit is refused at once, before the client sends it (or while it does).
            declared = request.content_length
            over_limit = declared is not None and declared > self.max_body
            if not over_limit and "Expect" in request.headers:
                await _continue(request)
            url = request.rel_url if url is None else url
            path = url.path
            if path.startswith(ADMIN_PREFIX):
                return await self.admin.serve(request, over_limit)
            started = time.time()
            seq, epoch = self.journal.arrive()  # numbered on arrival: a late answer still belongs to this epoch
            active = self.session.active  # and attributed on arrival, before the body is read
            query, raw_query = _query(url)
            decision, raw = UNANSWERED, b""
        else:
            seq, epoch, started, path, raw_query, raw, incoming, decision = later[1:9]
        # The steps, each a plain function: read, decide (server/decide.py), answer; errors become answers below.
        try:
            if later is None:
                if not path.startswith("/"):  # CONNECT host:443, OPTIONS *: no path to route
                    path = request.raw_path
                    decision = refusal(400, f"request: the target {path!r} is not a path such as /plants "
                                            "(plantstub is not a proxy)")
                    return closing(decision.out)  # type: ignore[arg-type]  # a refusal has its answer
                if over_limit:
                    raise web.HTTPRequestEntityTooLarge(max_size=self.max_body,
                                                        actual_size=request.content_length or 0)
                arrived = _arrived(request)
                if arrived is None:
                    raw = await request.read()
                elif len(arrived) > self.max_body:  # a chunked body (no Content-Length), read whole: as read() does
                    raise web.HTTPRequestEntityTooLarge(max_size=self.max_body, actual_size=len(arrived))
                else:
                    raw = arrived
                incoming = incoming_of(request, url, path, raw, query, raw_query)  # type: ignore[arg-type]  # set
                decision = decide(self.runtime, self.session, incoming, active)
            if decision.forward:  # --proxy: the real service answers (plantstub/proxy/forward.py)
                decision, forwarded = await self._forwarded(request, incoming, decision)
                return forwarded
            if decision.delay_ms or decision.fault is not None:
                if decision.delay_ms:  # listed at once, answered in place once the delay is over
                    self._pend(seq, epoch, started, request, path, raw_query, raw, decision)
                    try:
                        left = not await _wait_out(request, decision.delay_ms)
                    except asyncio.CancelledError:  # the stub stopping, or aiohttp's handler_cancellation
                        decision = decision.unsent(_unsent(request, decision.delay_ms))
                        raise
                    if left:
                        decision = decision.unsent(_unsent(request, decision.delay_ms))
                        raise asyncio.CancelledError  # nothing may be written now: end the handler quietly
                return await self._misbehave(request, incoming, decision)
            if decision.sends:
                send_webhooks(self.session, incoming, decision)
            return self.respond(decision.out, request)  # type: ignore[arg-type]  # decided
        except (ConnectionError, ClientConnectionError, asyncio.IncompleteReadError,
                web.HTTPRequestEntityTooLarge, web.RequestPayloadError) as exc:
            decision, response = self._failed(request, decision, exc)
            if response is None:  # the client left mid-request: record it, no traceback, nothing to answer
                raise
            return response
        except Exception as exc:  # a plantstub bug: answer in the Error shape, keep serving
            log.exception("plantstub: internal error on %s %s", request.method, request.path)
            decision = decision.crashed(internal_error(exc))
            return to_response(decision.out, False)  # type: ignore[arg-type]  # crashed() answers
        finally:
            # Record on every exit path: a fault, a crash or a client that left must still reach the journal.
            self._record(seq, epoch, started, request, path, raw_query, raw, decision)

    async def _forwarded(self, request: web.BaseRequest, incoming: IncomingRequest,
                         decision: Decision) -> tuple[Decision, web.StreamResponse]:
        """The real service's answer to a request nothing else answered, and the decision recording it."""
        assert self.runtime.forwarder is not None and decision.op is not None  # decide() forwards only then
        out, upstream, response = await self.runtime.forwarder.forward(request, incoming,
                                                                       self.runtime.served[decision.op])
        return decision._replace(out=out, upstream=upstream), response

    async def _misbehave(self, request: web.BaseRequest, incoming: IncomingRequest,
                         decision: Decision) -> web.StreamResponse:
        """Answer after a reply's `delay_ms` (waited out already), or not as HTTP says (a reply's `fault`)."""
        if decision.sends:
            send_webhooks(self.session, incoming, decision)
        if decision.fault is not None:
            return await send_fault(request, decision.fault, decision.out)
        assert decision.out is not None  # decide() always decides
        return self.respond(decision.out, request)

    def _failed(self, request: web.BaseRequest, decision: Decision,
                exc: BaseException) -> tuple[Decision, web.StreamResponse | None]:
        """The answer to a request that could not be read (None: the client left), as recorded."""
        if isinstance(exc, ReadTimeout):  # the body did not arrive within --read-timeout
            out = error_reply(408, not_received(self.read_timeout))
        elif isinstance(exc, web.HTTPRequestEntityTooLarge):
            out = error_reply(413, too_large(self.max_body))
        elif isinstance(exc, web.RequestPayloadError):  # a broken chunked encoding, gzip that does not inflate
            out = error_reply(400, unreadable(request))
        else:
            out = error_reply(499, "request: the client closed the connection before sending the whole body")
            return decision.refused(out), None
        return decision.refused(out), closing(out)

    def _pend(self, seq: int, epoch: int, started: float, request: web.BaseRequest, path: str,
              raw_query: str, raw: bytes, decision: Decision) -> None:
        """List a call whose reply is delayed: the request and its verdict now, with no response (`pending`)."""
        record = self._record_of(seq, started, request, path, raw_query, raw, decision, None, _NO_HEADERS, b"", False,
                                 None)
        self.journal.pend(record, epoch, NO_BODY if decision.body is None else decision.body)

    def _record(self, seq: int, epoch: int, started: float, request: Sent, path: str,
                raw_query: str, raw: bytes, decision: Decision) -> None:
        out = decision.out or _GONE
        fault = decision.fault
        status = out.status if fault is None or fault.sends_status else None
        # a copy of the payload: orjson's bytes keep their whole 4 KiB buffer, 100x what a small answer needs
        record = self._record_of(seq, started, request, path, raw_query, raw, decision, status, sent_headers(out),
                                 memoryview(out.payload).tobytes(), is_json(out.content_type),
                                 None if fault is None else fault.value)
        response_body = None if out.body is NO_BODY else out.body
        self.keeper.keep(record, epoch, NO_BODY if decision.body is None else decision.body, response_body, decision.op)

    @staticmethod
    def _record_of(seq: int, started: float, request: Sent, path: str, raw_query: str,
                   raw: bytes, decision: Decision, status: int | None, headers: dict[str, str], payload: bytes,
                   payload_json: bool, fault: str | None) -> Record:
        """The call as the journal keeps it: the request as sent, its verdict, and what was answered (if yet)."""
        # Kept as bytes; a body read from anything but JSON text (a form) is kept as read too.
        parsed = decision.body if decision.body is not None and not is_json(request.headers.get("Content-Type")) else NO_BODY
        return Record.of(
            seq, started, sent_method(request.method), path, raw_query,
            request.raw_headers, raw, parsed, not decision.errors, decision.errors, decision.scenario, decision.rule,
            status, headers, payload, payload_json, fault, decision.stub_errors, decision.upstream,
        )
