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
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from aiohttp import ClientConnectionError, web
from multidict import CIMultiDict, CIMultiDictProxy

from plantstub._json import NO_BODY, is_json
from plantstub.config import Settings, build_settings
from plantstub.contract.model import Operation, Spec
from plantstub.contract.operations import preferred
from plantstub.contract.outgoing import Outgoing, error_reply
from plantstub.contract.requests import challenge
from plantstub.contract.schema import Violation
from plantstub.contract.webhooks import RequestValues
from plantstub.incoming import IncomingRequest
from plantstub.recording.call import Record
from plantstub.recording.requestlog import RequestLogger
from plantstub.scenarios.declared import DeclaredRule
from plantstub.scenarios.model import Fault
from plantstub.scenarios.replies import rule_reply, rule_webhooks
from plantstub.scenarios.select import select_rule
from plantstub.scenarios.watch import off_loop, watch
from plantstub.server.admin import ADMIN_PREFIX, AdminRoutes
from plantstub.server.cors import with_cors
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
from plantstub.server.state import Control, UnknownScenario
from plantstub.webhooks.dispatch import RuleWebhooks
from plantstub.webhooks.sender import WEBHOOK_HEADER

CONTROL_KEY = web.AppKey("control", Control)
WATCH_TASK = web.AppKey("watch_task", asyncio.Task)
SCENARIO_HEADER = "X-Plantstub-Scenario"
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


def _violation_reply(op: Operation, violations: Sequence[Violation]) -> Outgoing:
    unauthorized = [v for v in violations if v.status == 401]
    if unauthorized:
        return error_reply(401, "; ".join(map(str, unauthorized)), {"WWW-Authenticate": challenge(op)})
    return error_reply(400, "; ".join(map(str, violations)))


class _Outcome:
    """What the pipeline decided, filled in step by step and recorded at the end."""

    __slots__ = ("body", "created", "delay_ms", "errors", "fault", "hooks", "op", "out", "params", "rule", "scenario", "stub_errors")

    def __init__(self) -> None:
        self.out: Outgoing | None = None
        self.body: Any = None
        self.created: Any = None  # with --stateful, the record a create stored (its key assigned)
        self.errors: tuple[str, ...] = ()
        self.stub_errors: tuple[str, ...] = ()
        self.scenario: str | None = None
        self.rule: str | None = None
        self.fault: Fault | None = None
        self.delay_ms = 0
        self.op: Operation | None = None
        self.params: dict[str, Any] = {}
        self.hooks: RuleWebhooks | None = None  # the answering rule's `webhooks:`, when it has some

    def refuse(self, out: Outgoing) -> None:
        self.out = out
        self.errors = (out.body["message"],)


def _decide(
    control: Control, request: web.BaseRequest, raw: bytes, query: dict[str, list[str]], active: str | None, done: _Outcome
) -> None:
    """Steps 1-5 of the pipeline, without I/O: fills `done`. `active` is the scenario when the request arrived."""
    method, path = request.method, request.path
    route = control.router.route(method, request.rel_url.raw_path)
    if route.status == 404:
        return done.refuse(error_reply(404, f"path: no path in the spec matches {path}"))
    if route.status == 405:
        allow = ", ".join(route.allow)
        return done.refuse(
            error_reply(405, f"method: {method} is not allowed on {path} (allowed: {allow})", {"Allow": allow})
        )
    op = done.op = route.operation
    if op is None:  # the router found one whenever it says 200
        return done.refuse(error_reply(404, f"path: no path in the spec matches {path}"))
    served = control.served[op]
    done.params = route.path_params
    name = request.headers.get(SCENARIO_HEADER) or active
    scenario = None
    if name is not None:
        try:
            scenario = control.scenario(name)
        except UnknownScenario as exc:
            return done.refuse(error_reply(400, f"headers.{SCENARIO_HEADER}: {exc}"))
        done.scenario = scenario.name
    incoming = IncomingRequest(method, path, query, request.headers, raw)
    violations, done.body = served.check.violations(incoming, route.path_params)
    if violations:
        done.errors = tuple(map(str, violations))
        if scenario is None or scenario.validate_requests:
            done.out = _violation_reply(op, violations)
            return None
    prefer = request.headers.get("Prefer")
    if prefer:
        out, problem = preferred(served, prefer, done.body)
        if out is not None and problem is not None:
            return done.refuse(out)
        if out is not None:
            done.out = out
            return None
    if control.declared.rules:  # rules from code come first
        declared = control.declared.select(incoming, done.body)
        if declared is not None:
            return _declared_answer(control, op, declared, incoming, done)
    if scenario is not None:
        chosen = select_rule(control.indexes[scenario.name], control.counters, incoming, done.body)
        if chosen is not None:
            rule, at = chosen
            reply = rule.replies[at]
            done.rule = rule.label if len(rule.replies) == 1 else f"{rule.label}.replies[{at}]"
            done.delay_ms = reply.delay_ms
            if rule.webhooks is not None:
                done.hooks = rule_webhooks(rule, incoming, done.body, control.indexes[scenario.name].templates)
            done.out, done.fault = rule_reply(reply, incoming, done.body, control.indexes[scenario.name].templates)
            if not rule.off_contract and reply.fault is None and done.out.body is not NO_BODY:
                broken = control.contract.rendered_violations(op, reply, done.out.body)
                if broken:  # the scenario's fault, not the consumer's: recorded apart from `errors`
                    where = f"{scenario.file}:{reply.line}"
                    done.stub_errors = tuple(
                        f"scenario {scenario.name!r} {done.rule} ({where}) sent a reply that breaks the contract: {v}"
                        for v in broken
                    )
            return None
    store = control.store
    if store is not None:  # --stateful: the records answer where the default answer would
        action = control.actions.get(op)
        if action is not None:
            done.out = store.answer(action, route.path_params, query, done.body)
            done.created = store.created
            if done.out is not None:
                return None
    done.out = served.default(done.body)
    return None


def _declared_answer(
    control: Control, op: Operation, chosen: tuple[DeclaredRule, int], incoming: IncomingRequest, done: _Outcome
) -> None:
    """The answer of a rule from code, as a scenario rule's (a templated body checked once rendered)."""
    declared, at = chosen
    rule = declared.rule
    reply = rule.replies[at]
    done.rule = declared.label(at)
    done.delay_ms = reply.delay_ms
    if rule.webhooks is not None:
        done.hooks = rule_webhooks(rule, incoming, done.body, control.declared.templates)
    done.out, done.fault = rule_reply(reply, incoming, done.body, control.declared.templates)
    if not rule.off_contract and reply.fault is None and done.out.body is not NO_BODY:
        broken = control.contract.rendered_violations(op, reply, done.out.body)
        done.stub_errors = tuple(
            f"rule {done.rule} ({declared.source}) sent a reply that breaks the contract: {v}" for v in broken
        )


def created_record(done: _Outcome) -> Any:
    """What the default trigger sends: the record the store created (--stateful), else the validated request body."""
    return done.created if done.created is not None else done.body


def _send_webhooks(control: Control, request: web.BaseRequest, query: dict[str, list[str]], done: _Outcome) -> None:
    """Queue the webhooks and callbacks a 2xx answer sends; they go out after it, never delaying it."""
    assert done.op is not None and done.out is not None
    if WEBHOOK_HEADER in request.headers:  # a delivery of this stub's own, subscribed back to it: no endless loop
        return
    values = RequestValues(str(request.url), request.method, request.headers, query, done.params, done.body)
    control.webhooks.answered(done.op, done.out.status, created_record(done), values, done.hooks)


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
        done = _Outcome()
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
            _decide(control, request, raw, query, active, done)
            if done.delay_ms:
                await asyncio.sleep(done.delay_ms / 1000)
            if (done.hooks is not None or done.op in watched) and done.fault is None:
                _send_webhooks(control, request, query, done)
            if done.fault is not None:
                return await send_fault(request, done.fault, done.out)
            assert done.out is not None  # _decide() always decides
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
