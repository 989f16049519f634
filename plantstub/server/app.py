"""create_app(): the aiohttp Application, whose one catch-all handler runs the request pipeline.

route -> read body -> pick scenario -> validate -> Prefer / rule / store (--stateful) / default answer -> send; the call
is recorded in `finally`, on every path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import ClientConnectionError, web
from multidict import CIMultiDict, CIMultiDictProxy

from plantstub._json import NO_BODY, is_json
from plantstub.config import Settings, build_settings
from plantstub.contract.model import Operation, Spec
from plantstub.contract.outgoing import Outgoing, error_reply
from plantstub.recording.call import Record
from plantstub.recording.requestlog import RequestLogger
from plantstub.scenarios.watch import off_loop, watch
from plantstub.server.admin import ADMIN_PREFIX, AdminRoutes
from plantstub.server.cors import with_cors
from plantstub.server.decide import Outcome, decide, send_webhooks
from plantstub.server.response import (
    ReadTimeout,
    closing,
    not_received,
    send_fault,
    sent_headers,
    to_response,
    too_large,
)
from plantstub.server.sessions import SessionRouter
from plantstub.server.state import Control

CONTROL_KEY = web.AppKey("control", Control)
WATCH_TASK = web.AppKey("watch_task", asyncio.Task)
log = logging.getLogger("plantstub")


def create_app(settings: Settings | None = None, **options: Any) -> web.Application:
    """Build the stub as an aiohttp Application (for pytest-aiohttp's `aiohttp_server` and friends).

    :param settings: a complete Settings; when omitted, built from `options` and PLANTSTUB_* variables.
    :param options: Settings fields, e.g. `spec="api.yaml"`, `scenarios="scenarios/"`, `max_body=1024`;
        `spec` may also be an already loaded Spec.
    """
    loaded = options.pop("spec") if isinstance(options.get("spec"), Spec) else None
    if settings is None:
        settings = build_settings(options)
    control = Control(settings, loaded)
    app = web.Application(client_max_size=settings.max_body)
    app[CONTROL_KEY] = control
    # One catch-all route: the pipeline routes by the spec, and the admin API has its own small router.
    app.router.add_route("*", "/{tail:.*}", make_handler(control))
    app.on_cleanup.append(_close(control))
    app.on_startup.append(_start_watch)  # start_watch() decides whether there is anything to watch
    app.on_cleanup.append(_stop_watch)
    return app


async def _start_watch(app: web.Application) -> None:
    task = start_watch(app[CONTROL_KEY])
    if task is not None:
        app[WATCH_TASK] = task


def start_watch(control: Control) -> asyncio.Task[None] | None:
    """--watch: reload the scenarios folder when its files change, in a task of the running loop.

    The folder loads in a thread; the result is swapped in on the loop, so requests keep being answered
    during a reload and never see half of one."""
    snapshot = control.snapshot
    if not control.settings.watch or snapshot is None:
        return None

    async def reload(changed: list[str]) -> None:
        loaded = await off_loop(control.load_folder)
        for line in control.install(loaded):
            print(f"plantstub: {line}", file=sys.stderr, flush=True)

    return asyncio.get_running_loop().create_task(watch(snapshot, reload))


async def _stop_watch(app: web.Application) -> None:
    await stop_watch(app.get(WATCH_TASK))


async def stop_watch(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _close(control: Control) -> Callable[[web.Application], Awaitable[None]]:
    async def close(app: web.Application) -> None:
        await control.webhooks.close()
        if control.sessions is not None:
            await control.sessions.close()
        control.close()

    return close


async def _continue(request: web.BaseRequest) -> None:
    """Answer `Expect: 100-continue` with `100 Continue` (curl sends it for bodies over 1 MiB): the client
    waits for a go-ahead before the body, which aiohttp's low-level server does not give on its own."""
    if request.version < (1, 1) or request.headers.get("Expect", "").lower() != "100-continue":
        return
    await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    request.writer.output_size = 0  # the answer proper has not started


def _unreadable(request: web.BaseRequest) -> str:
    """Why aiohttp could not read a body: its Content-Encoding, or its chunked framing."""
    encoding = request.headers.get("Content-Encoding")
    if encoding:
        return f"body: cannot be read: it does not decode as its Content-Encoding ({encoding[:50]}) says"
    return "body: cannot be read: its chunked framing is broken"


class _Keeper:
    """Where every call goes once answered: the journal, coverage and the request log."""

    __slots__ = ("control", "journal", "logger")

    def __init__(self, control: Control) -> None:
        self.control = control
        self.journal = control.journal
        self.logger = RequestLogger(control.settings.log_format)

    def keep(self, record: Record, epoch: int, body: Any, response_body: Any, op: Operation | None) -> None:
        if self.journal.append(record, epoch, body, response_body):
            self.control.coverage.count(op, record.status)
        if self.logger.enabled:
            self.logger.log(record)


def make_refusal(control: Control) -> Callable[[str, str, Outgoing], None]:
    """Record a request the pipeline never saw: aiohttp could not parse it, or it did not arrive in full.

    Called with the method and the target as far as they were read (`""` when not even that), and the
    answer sent; the call has no headers, no body, and `errors` holds the answer's message.
    """
    keeper = _Keeper(control)
    no_headers = CIMultiDictProxy(CIMultiDict[str]())

    def refuse(method: str, target: str, out: Outgoing) -> None:
        seq, epoch = keeper.journal.arrive()
        record = Record(
            seq, time.time(), method, target, {}, no_headers, b"", NO_BODY, False, (out.body["message"],),
            None, None, out.status, sent_headers(out), out.payload, True, None,
        )
        keeper.keep(record, epoch, NO_BODY, out.body, None)

    return refuse


def make_handler(control: Control) -> Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]:
    """The request pipeline as one aiohttp handler (for an Application's route or a low-level Server)."""
    journal = control.journal
    keeper = _Keeper(control)
    admin = AdminRoutes(control)
    max_body = control.settings.max_body
    read_timeout = control.settings.read_timeout
    watched = control.webhooks.watched  # operations whose answers may send webhooks or callbacks

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        # A body declared over the limit is refused at once, before the client sends it (or while it does).
        declared = request.content_length
        over_limit = declared is not None and declared > max_body
        if not over_limit and "Expect" in request.headers:
            await _continue(request)
        path = request.path
        if path.startswith(ADMIN_PREFIX):
            if over_limit:
                return closing(error_reply(413, too_large(max_body)))
            try:
                return await admin.dispatch(request)
            except ReadTimeout:
                return closing(error_reply(408, not_received(read_timeout)))
        started = time.time()
        seq, epoch = journal.arrive()  # numbered on arrival: a late answer still belongs to this epoch
        active = control.active  # and attributed on arrival, before the body is read
        raw = b""
        done = Outcome()
        # Most calls carry no query string: do not build aiohttp's MultiDict for nothing.
        query = {k: request.query.getall(k) for k in request.query} if request.query_string else {}
        try:
            if not path.startswith("/"):  # CONNECT host:443, OPTIONS *: no path to route
                path = request.raw_path
                out = error_reply(400, f"request: the target {path!r} is not a path such as /plants (plantstub is "
                                       "not a proxy)")
                done.refuse(out)
                return closing(out)
            if over_limit:
                raise web.HTTPRequestEntityTooLarge(max_size=max_body, actual_size=declared or 0)
            raw = await request.read()
            decide(control, request, raw, query, active, done)
            if done.delay_ms:
                await asyncio.sleep(done.delay_ms / 1000)
            if (done.hooks is not None or done.op in watched) and done.fault is None:
                send_webhooks(control, request, query, done)
            if done.fault is not None:
                return await send_fault(request, done.fault, done.out)
            assert done.out is not None  # decide() always decides
            return to_response(done.out, request.method == "HEAD")
        except ReadTimeout:  # the body did not arrive within --read-timeout
            out = error_reply(408, not_received(read_timeout))
            done.refuse(out)
            return closing(out)
        except (ConnectionError, ClientConnectionError, asyncio.IncompleteReadError):
            # The client left mid-request: record it, no traceback, nothing to answer.
            done.refuse(error_reply(499, "request: the client closed the connection before sending the whole body"))
            raise
        except web.HTTPRequestEntityTooLarge:
            out = error_reply(413, too_large(max_body))
            done.refuse(out)
            return closing(out)
        except web.RequestPayloadError:  # a broken chunked encoding, gzip that does not inflate
            out = error_reply(400, _unreadable(request))
            done.refuse(out)
            return closing(out)
        except Exception as exc:  # a plantstub bug: answer in the Error shape, keep serving
            log.exception("plantstub: internal error on %s %s", request.method, path)
            # Recorded as the stub's own error: the request may well be valid, and the consumer is not to blame.
            message = f"plantstub internal error (a bug in plantstub, not in the client): {type(exc).__name__}: {exc}"
            done.out, done.fault = error_reply(500, message), None
            done.stub_errors = (message,)
            return to_response(done.out, False)
        finally:
            # Record on every exit path: a fault, a crash or a client that left must still reach the journal.
            out = done.out or error_reply(499, "client went away before the answer")
            fault = done.fault
            status = out.status if fault is None or fault.sends_status else None
            # Kept as bytes; a body read from anything but JSON text (a form) is kept as read too.
            parsed = done.body if done.body is not None and not is_json(request.content_type) else NO_BODY
            record = Record(
                seq, started, request.method, path,
                {k: (v if len(v) > 1 else v[0]) for k, v in query.items()}, request.headers,
                raw, parsed, not done.errors, done.errors, done.scenario, done.rule,
                # a copy: orjson's bytes keep their whole 4 KiB buffer, 100x what a small answer needs
                status, sent_headers(out), memoryview(out.payload).tobytes(), is_json(out.content_type),
                None if fault is None else fault.value, done.stub_errors,
            )
            response_body = None if out.body is NO_BODY else out.body
            keeper.keep(record, epoch, NO_BODY if done.body is None else done.body, response_body, done.op)

    # --cors: preflights answered and answers readable by pages of any origin (the admin API excepted)
    served = with_cors(handle, control.router, ADMIN_PREFIX) if control.settings.cors else handle
    if control.sessions is None:  # a session's own pipeline
        return served
    sessions = SessionRouter(control, make_handler)  # before CORS: a session's answers get its own
    for method, name, route in sessions.admin_routes():
        admin.add(method, name, route)
    return sessions.wrap(served)
