"""The stub under aiohttp's own server: `create_app()`, the aiohttp Application for those who run the stub in their own
loop, and the handler aiohttp's low-level server runs when plantstub's own connections cannot be used
(server/parser.py). aiohttp's request becomes the front's (server/front.py), and the Answer an aiohttp response;
--watch for both."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import ClientConnectionError, web

from plantstub.config import Settings, build_settings, keyword_name
from plantstub.contract.model import Spec
from plantstub.contract.outgoing import error_reply
from plantstub.scenarios.model import Fault
from plantstub.server.answer import Answer, Streamed, chunks
from plantstub.server.cors import allow_origin
from plantstub.server.front import Front
from plantstub.server.reload import start_watch, stop_watch
from plantstub.server.response import FORBIDDEN, internal_error, sent_headers, unreadable
from plantstub.server.runtime import load
from plantstub.server.table import Sessions
from plantstub.server.wire import MALFORMED

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
SESSIONS_KEY = web.AppKey("sessions", Sessions)
WATCH_TASK = web.AppKey("watch_task", asyncio.Task)


def create_app(settings: Settings | None = None, **options: Any) -> web.Application:
    """Build the stub as an aiohttp Application (for pytest-aiohttp's `aiohttp_server` and friends).

    :param settings: a complete Settings; when omitted, built from `options` and PLANTSTUB_* variables.
    :param options: Settings fields, e.g. `spec="api.yaml"`, `scenarios="scenarios/"`, `max_body=1024`;
        `spec` may also be an already loaded Spec.
    """
    loaded = options.pop("spec") if isinstance(options.get("spec"), Spec) else None
    if settings is None:
        settings = build_settings(options, explicit_name=keyword_name)
    sessions = Sessions(load(settings, loaded))
    app = web.Application(client_max_size=settings.max_body)
    app[SESSIONS_KEY] = sessions
    # One catch-all route: the front routes by session, the admin API and the spec.
    app.router.add_route("*", "/{tail:.*}", aiohttp_handler(Front(sessions)))
    app.on_cleanup.append(_close(sessions))
    app.on_startup.append(_start_watch)  # start_watch() decides whether there is anything to watch
    app.on_cleanup.append(_stop_watch)
    return app


class _Client:
    """A client under aiohttp's own server: whether it left is seen only when asked (its request's transport)."""

    __slots__ = ("_request",)
    stopping = False

    def __init__(self, request: web.BaseRequest) -> None:
        self._request = request

    def lost(self) -> None:
        return None

    def left(self) -> bool:
        return self._request.transport is None


def aiohttp_handler(front: Front, go_ahead: bool = False) -> Handler:
    """The front as one aiohttp handler. `go_ahead`: answer `Expect: 100-continue` itself (aiohttp's low-level server
    does not; an Application's router does)."""

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        pending = front.open(request.method, request.raw_path, request.headers, request.raw_headers, request.scheme,
                             request.rel_url)
        if isinstance(pending, Answer):
            return await respond(request, pending)
        refused = pending.over(request.content_length)  # refused at once, before the client sends it
        if refused is not None:
            return await respond(request, refused)
        if go_ahead and request.version >= (1, 1) and request.headers.get("Expect", "").lower() == "100-continue":
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        try:
            raw = await pending.read(request.content)
        except web.RequestPayloadError:  # a broken chunked encoding, gzip that does not inflate
            return await respond(request, pending.refuse(error_reply(400, unreadable(request.headers))))
        except (ConnectionError, ClientConnectionError, asyncio.IncompleteReadError):
            pending.left()  # the client left mid-body: recorded, nothing to answer
            raise asyncio.CancelledError from None  # ends the handler quietly; an error, aiohttp logs and answers 500
        if isinstance(raw, Answer):  # over --max-body
            return await respond(request, raw)
        served = pending.serve(raw, _Client(request))
        return await respond(request, served if isinstance(served, Answer) else await served)

    return handle


async def respond(request: web.BaseRequest, answer: Answer) -> web.StreamResponse:
    """`answer` as aiohttp's response to `request` (HEAD: its headers only)."""
    out = answer.out
    if out is None:  # the client left: nothing may be written now; cancelling ends the handler quietly
        raise asyncio.CancelledError
    if answer.fault is not None and answer.fault is not Fault.MALFORMED_BODY:
        _misbehave(request, answer.fault)
    head = request.method == "HEAD"
    if isinstance(out, Streamed):
        streamed = web.StreamResponse(status=out.status, headers=out.headers)
        await streamed.prepare(request)
        if not head:
            async for chunk in chunks(out):
                await streamed.write(chunk)
        await streamed.write_eof()
        return streamed
    if answer.fault is Fault.MALFORMED_BODY:  # valid HTTP, broken JSON: the client's parser, not its socket, copes
        return web.Response(status=out.status, body=MALFORMED, content_type="application/json")
    headers = sent_headers(out)
    pairs = list(headers.items()) if answer.origin is None else allow_origin(answer.origin, headers)
    pairs.extend(out.more)
    if FORBIDDEN.search("".join(f"{name}{value}" for name, value in pairs)) is not None:
        out = error_reply(500, internal_error(ValueError("an answer's header holds a line break or a control "
                                                         "character")))
        pairs = list(sent_headers(out).items())
    bodiless = head or out.status in (204, 304) or not out.payload
    response = web.Response(status=out.status, body=None if bodiless else out.payload, headers=pairs)
    if answer.close:
        response.force_close()
    return response


def _misbehave(request: web.BaseRequest, fault: Fault) -> None:
    """A reply's fault on the socket; nothing may be written after it (cancelling ends the handler quietly)."""
    transport = request.transport
    if transport is not None:
        if fault is Fault.CONNECTION_RESET:
            sock = transport.get_extra_info("socket")
            if sock is not None:  # SO_LINGER 0: close() sends RST instead of FIN
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        else:  # empty_reply: FIN without a byte of response
            transport.close()
    raise asyncio.CancelledError


async def _start_watch(app: web.Application) -> None:
    task = start_watch(app[SESSIONS_KEY])
    if task is not None:
        app[WATCH_TASK] = task


async def _stop_watch(app: web.Application) -> None:
    await stop_watch(app.get(WATCH_TASK))


def _close(sessions: Sessions) -> Callable[[web.Application], Awaitable[None]]:
    async def close(app: web.Application) -> None:
        await sessions.close()

    return close
