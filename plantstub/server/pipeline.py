"""The request pipeline of one session: aiohttp's request -> IncomingRequest -> decide() -> aiohttp's response;
the call is recorded in `finally`, on every path."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from aiohttp import ClientConnectionError, web
from multidict import CIMultiDict, CIMultiDictProxy

from plantstub._json import NO_BODY, is_json
from plantstub.contract.model import Operation
from plantstub.contract.outgoing import Outgoing, error_reply
from plantstub.incoming import IncomingRequest
from plantstub.recording.call import Record
from plantstub.recording.requestlog import RequestLogger
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
)
from plantstub.server.runtime import Runtime
from plantstub.server.session import Session

log = logging.getLogger("plantstub")
_NO_HEADERS = CIMultiDictProxy(CIMultiDict[str]())
_GONE = error_reply(499, "client went away before the answer")


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
        record = Record(
            seq, time.time(), method, target, {}, _NO_HEADERS, b"", NO_BODY, False, (out.body["message"],),
            None, None, out.status, sent_headers(out), out.payload, True, None,
        )
        keeper.keep(record, epoch, NO_BODY, out.body, None)

    return refuse


def _unreadable(request: web.BaseRequest) -> str:
    """Why aiohttp could not read a body: its Content-Encoding, or its chunked framing."""
    encoding = request.headers.get("Content-Encoding")
    if encoding:
        return f"body: cannot be read: it does not decode as its Content-Encoding ({encoding[:50]}) says"
    return "body: cannot be read: its chunked framing is broken"


def incoming_of(request: web.BaseRequest, raw: bytes, query: dict[str, list[str]]) -> IncomingRequest:
    """aiohttp's request as the pipeline reads it."""
    url = request.rel_url
    return IncomingRequest(request.method, request.path, query, request.headers, raw, url.raw_path,
                           url.raw_query_string, f"{request.scheme}://{request.host}")


class Pipeline:
    """One session's pipeline: route, read, decide, wait out a delay, send webhooks, answer, record."""

    def __init__(self, runtime: Runtime, session: Session) -> None:
        self.runtime = runtime
        self.session = session
        self.journal = session.journal
        self.keeper = _Keeper(session)
        self.max_body = runtime.settings.max_body
        self.read_timeout = runtime.settings.read_timeout

    async def handle(self, request: web.BaseRequest, over_limit: bool) -> web.StreamResponse:
        """Answer one request of the spec's API (`over_limit`: its declared length is over --max-body)."""
        started = time.time()
        seq, epoch = self.journal.arrive()  # numbered on arrival: a late answer still belongs to this epoch
        active = self.session.active  # and attributed on arrival, before the body is read
        # Most calls carry no query string: do not build aiohttp's MultiDict for nothing.
        query = {k: request.query.getall(k) for k in request.query} if request.query_string else {}
        decision, raw = UNANSWERED, b""
        try:
            if not request.path.startswith("/"):  # CONNECT host:443, OPTIONS *: no path to route
                decision = refusal(400, f"request: the target {request.raw_path!r} is not a path such as /plants "
                                        "(plantstub is not a proxy)")
                return closing(decision.out)  # type: ignore[arg-type]  # a refusal has its answer
            if over_limit:
                raise web.HTTPRequestEntityTooLarge(max_size=self.max_body, actual_size=request.content_length or 0)
            raw = await request.read()
            incoming = incoming_of(request, raw, query)
            decision = decide(self.runtime, self.session, incoming, active)
            return await self._send(request, incoming, decision)
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
            self._record(seq, epoch, started, request, query, raw, decision)

    async def _send(self, request: web.BaseRequest, incoming: IncomingRequest, decision: Decision) -> web.StreamResponse:
        if decision.delay_ms:
            await asyncio.sleep(decision.delay_ms / 1000)
        if decision.sends:
            send_webhooks(self.session, incoming, decision)
        if decision.fault is not None:
            return await send_fault(request, decision.fault, decision.out)
        assert decision.out is not None  # decide() always decides
        return to_response(decision.out, request.method == "HEAD")

    def _failed(self, request: web.BaseRequest, decision: Decision,
                exc: BaseException) -> tuple[Decision, web.StreamResponse | None]:
        """The answer to a request that could not be read (None: the client left), as recorded."""
        if isinstance(exc, ReadTimeout):  # the body did not arrive within --read-timeout
            out = error_reply(408, not_received(self.read_timeout))
        elif isinstance(exc, web.HTTPRequestEntityTooLarge):
            out = error_reply(413, too_large(self.max_body))
        elif isinstance(exc, web.RequestPayloadError):  # a broken chunked encoding, gzip that does not inflate
            out = error_reply(400, _unreadable(request))
        else:
            out = error_reply(499, "request: the client closed the connection before sending the whole body")
            return decision.refused(out), None
        return decision.refused(out), closing(out)

    def _record(self, seq: int, epoch: int, started: float, request: web.BaseRequest, query: dict[str, list[str]],
                raw: bytes, decision: Decision) -> None:
        out = decision.out or _GONE
        fault = decision.fault
        status = out.status if fault is None or fault.sends_status else None
        path = request.path if request.path.startswith("/") else request.raw_path
        # Kept as bytes; a body read from anything but JSON text (a form) is kept as read too.
        parsed = decision.body if decision.body is not None and not is_json(request.content_type) else NO_BODY
        record = Record(
            seq, started, request.method, path,
            {k: (v if len(v) > 1 else v[0]) for k, v in query.items()}, request.headers,
            raw, parsed, not decision.errors, decision.errors, decision.scenario, decision.rule,
            # a copy: orjson's bytes keep their whole 4 KiB buffer, 100x what a small answer needs
            status, sent_headers(out), memoryview(out.payload).tobytes(), is_json(out.content_type),
            None if fault is None else fault.value, decision.stub_errors,
        )
        response_body = None if out.body is NO_BODY else out.body
        self.keeper.keep(record, epoch, NO_BODY if decision.body is None else decision.body, response_body, decision.op)
