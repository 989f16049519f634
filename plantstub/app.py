"""create_app(): the aiohttp Application, whose one catch-all handler runs the request pipeline."""

from __future__ import annotations

import logging
import time
from typing import Any

from aiohttp import web

from .admin import ADMIN_PREFIX, add_admin_routes, admin_not_found
from .config import Settings, build_settings
from .control import Control
from .incoming import NO_BODY, IncomingRequest, body_for_record
from .journal import Call, response_record
from .replies import Outgoing, error_reply
from .spec import Spec
from .validation import challenge

CONTROL_KEY = web.AppKey("control", Control)
log = logging.getLogger("plantstub")


def create_app(settings: Settings | None = None, *, spec: Spec | None = None, **options: Any) -> web.Application:
    """Build the stub as an aiohttp Application (for pytest-aiohttp's `aiohttp_server` and friends).

    :param settings: a complete Settings; when omitted, built from `options` and PLANTSTUB_* variables.
    :param spec: an already loaded Spec (saves loading it again).
    :param options: Settings fields, e.g. `spec="api.yaml"`, `scenarios="scenarios/"`, `max_body=1024`.
    """
    if settings is None:
        settings = build_settings(options)
    control = Control(settings, spec)
    app = web.Application(client_max_size=settings.max_body)
    app[CONTROL_KEY] = control
    add_admin_routes(app, control)
    app.router.add_route("*", "/{tail:.*}", _make_handler(control))
    app.on_cleanup.append(_close(control))
    return app


def _close(control: Control):
    async def close(app: web.Application) -> None:
        control.close()

    return close


def _violation_reply(op, violations) -> Outgoing:
    unauthorized = [v for v in violations if v.status == 401]
    if unauthorized:
        return error_reply(401, "; ".join(map(str, unauthorized)), {"WWW-Authenticate": challenge(op)})
    return error_reply(400, "; ".join(map(str, violations)))


def _sent_headers(out: Outgoing) -> dict[str, str]:
    if out.content_type and out.body is not NO_BODY:
        return {**out.headers, "Content-Type": out.content_type}
    return out.headers


def _to_response(out: Outgoing, head: bool) -> web.Response:
    if out.body is NO_BODY or head:
        response = web.Response(status=out.status, headers=out.headers)
        if out.content_type and out.body is not NO_BODY:
            response.content_type = out.content_type
        return response
    return web.Response(status=out.status, body=out.payload, headers=out.headers, content_type=out.content_type)


def _make_handler(control: Control):
    router = control.router
    journal = control.journal

    async def handle(request: web.Request) -> web.StreamResponse:
        method = request.method
        path = request.path
        if path.startswith(ADMIN_PREFIX):
            return admin_not_found(request)
        started = time.time()
        raw = b""
        body: Any = None
        errors: tuple[str, ...] = ()
        out: Outgoing | None = None
        query = {k: request.query.getall(k) for k in request.query.keys()} if request.query else {}
        try:
            route = router.route(method, request.rel_url.raw_path)
            raw = await request.read()
            if route.status == 404:
                out = error_reply(404, f"path: no path in the spec matches {path}")
                errors = (out.body["message"],)
            elif route.status == 405:
                allow = ", ".join(route.allow)
                out = error_reply(405, f"method: {method} is not allowed on {path} (allowed: {allow})", {"Allow": allow})
                errors = (out.body["message"],)
            else:
                op = route.operation
                incoming = IncomingRequest(method, path, query, request.headers, raw)
                violations, body = control.check_for(op).violations(incoming, route.path_params)
                if violations:
                    errors = tuple(map(str, violations))
                    out = _violation_reply(op, violations)
                else:
                    out = control.answers.default(op, body)
        except web.HTTPRequestEntityTooLarge:
            limit = control.settings.max_body
            out = error_reply(413, f"body: larger than the limit of {limit} bytes (--max-body)")
            errors = (out.body["message"],)
        except Exception as exc:  # a plantstub bug: answer in the Error shape, keep serving
            log.exception("plantstub: internal error on %s %s", method, path)
            out = error_reply(500, f"plantstub internal error: {type(exc).__name__}: {exc}")
            errors = (out.body["message"],)
        finally:
            # Record on every exit path: a crash or a fault must still reach the journal.
            if out is None:
                out = error_reply(499, "client went away before the answer")
            if body is None and raw:
                body = body_for_record(raw, request.content_type)
            journal.append(
                Call(
                    seq=journal.next_seq(),
                    time=started,
                    method=method,
                    path=path,
                    query={k: (v if len(v) > 1 else v[0]) for k, v in query.items()},
                    headers={k: v for k, v in request.headers.items()},
                    body=body,
                    valid=not errors,
                    errors=errors,
                    scenario=None,
                    rule=None,
                    response=response_record(out.status, _sent_headers(out), out.body),
                )
            )
        return _to_response(out, method == "HEAD")

    return handle
