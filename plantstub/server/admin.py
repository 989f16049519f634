"""The admin API under /__plantstub/: thin adapters over Control. The route table comes first."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from aiohttp import web

from plantstub._json import BodyError, decode_json, json_bytes
from plantstub._version import __version__
from plantstub.contract.outgoing import error_body
from plantstub.errors import SubscriptionError
from plantstub.recording.call import Record, dumps_call
from plantstub.recording.filters import CallFilter, FilterError
from plantstub.recording.waiting import expectation_of, wait_for_calls_async
from plantstub.scenarios.load import ScenarioLoadError
from plantstub.server.admin_guard import AdminGuard
from plantstub.server.response import too_large
from plantstub.server.state import Control, NotStateful, UnknownScenario

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
CALLS_PER_CHUNK = 64
CHUNK_BYTES = 256 * 1024  # what one batch parses and writes while holding the GIL


ADMIN_PREFIX = "/__plantstub/"


def _dumps(value: object) -> str:
    return json_bytes(value).decode()
log = logging.getLogger("plantstub")


def _chunks(records: list[Record]) -> Iterator[list[Record]]:
    """Batches of at most CALLS_PER_CHUNK calls or about CHUNK_BYTES (one at least); one empty batch for none."""
    batch: list[Record] = []
    size = 0
    for record in records:
        if batch and (len(batch) >= CALLS_PER_CHUNK or size + record.size > CHUNK_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(record)
        size += record.size
    yield batch


def _render(records: list[Record], first: bool, last: bool) -> bytes:
    """A piece of the JSON list of calls: `[` before the first, `,` between, `]` after the last."""
    text = (b"[" if first else b",") + b",".join(dumps_call(r.view()) for r in records)
    return text + b"]" if last else text


def _routes(admin: _Admin) -> list[tuple[str, str, Handler]]:
    return [
        ("GET", "health", admin.health),
        ("GET", "scenarios", admin.scenarios),
        ("PUT", "scenario", admin.put_scenario),
        ("GET", "calls", admin.calls),
        ("DELETE", "calls", admin.delete_calls),
        ("POST", "reset", admin.reset),
        ("GET", "coverage", admin.coverage),
        ("GET", "state", admin.state),
        ("PUT", "state", admin.put_state),
        ("POST", "calls/wait", admin.wait_calls),
        ("POST", "rules", admin.post_rule),
        ("GET", "rules", admin.rules),
        ("DELETE", "rules", admin.delete_rules),
        ("DELETE", RULE, admin.delete_rule),
        ("GET", "webhooks", admin.webhooks),
        ("PUT", "webhooks", admin.put_webhooks),
        ("GET", "deliveries", admin.deliveries),
        ("DELETE", "deliveries", admin.delete_deliveries),
    ]


RULE = "rules/{id}"  # the one admin path with a parameter
SOURCE_HEADER = "X-Plantstub-Source"  # POST rules: where the rule was declared (`tests/test_x.py:12`)
_SOURCE = re.compile(r"[^\x20-\x7e]")


async def _json_body(request: web.BaseRequest, max_body: int, example: str) -> Any:
    """The request's JSON body; a web.Response (413 / 400) to send instead when there is none to read."""
    try:
        return json.loads(await request.read() or b"null")
    except web.HTTPRequestEntityTooLarge:
        return _error(413, too_large(max_body))
    except RecursionError:
        return _error(400, "body: nested too deeply to parse")
    except ValueError:
        return _error(400, f"body: not valid JSON; send {example}")


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(error_body(status, message), status=status, headers=headers)


class _Admin:
    def __init__(self, control: Control) -> None:
        self.control = control

    async def health(self, request: web.BaseRequest) -> web.Response:
        spec, journal, hooks = self.control.spec, self.control.journal, self.control.webhooks
        problems = journal.problems() + hooks.log.problems(hooks.sender.cap)
        return web.json_response({
            "status": "degraded" if problems else "ok",
            **({"problems": problems} if problems else {}),
            "version": __version__,
            "spec": {"title": spec.title, "version": spec.version, "operations": len(spec.operations),
                     **({"warnings": list(spec.warnings)} if spec.warnings else {})},
            "active": self.control.active,
            **({"sessions": len(sessions)} if (sessions := self.control.sessions) is not None else {}),
            "journal": {
                "calls": journal.kept, "bytes": journal.kept_bytes, "recorded": journal.recorded,
                "dropped": journal.dropped, "dropped_bytes": journal.dropped_bytes,
                "max_calls": journal.size, "max_bytes": journal.max_bytes, "file_lost": journal.lost,
            },
            "webhooks": {"subscriptions": len(hooks.subscriptions.urls), "delivered": hooks.log.recorded,
                         "pending": hooks.sender.pending, "lost": hooks.log.lost,
                         "dropped": hooks.log.dropped},
        }, status=503 if problems else 200)

    async def scenarios(self, request: web.BaseRequest) -> web.Response:
        c = self.control
        return web.json_response({
            "active": c.active,
            "folder": str(c.scenarios_dir) if c.scenarios_dir else None,
            "scenarios": [
                {"name": s.name, "description": s.description, "file": s.file, "rules": len(s.rules),
                 "validate_requests": s.validate_requests, "builtin": c.builtins.get(s.name) is s,
                 "missing": s.name in c.missing}  # --watch: kept, as last loaded, while its file is gone
                for s in sorted(c.scenarios.values(), key=lambda s: s.name)
            ],
            "errors": [str(e) for e in c.load_errors],
            "builtins_left_out": c.unfit_builtins,  # built-ins that do not fit this spec, and why
        })

    async def put_scenario(self, request: web.BaseRequest) -> web.Response:
        try:
            data = json.loads(await request.read() or b"null")
        except web.HTTPRequestEntityTooLarge:
            return _error(413, too_large(self.control.settings.max_body))
        except (ValueError, RecursionError):
            return _error(400, 'body: not valid JSON; send {"name": "SCENARIO"} or {"name": null}')
        if not isinstance(data, dict) or "name" not in data or not isinstance(data["name"], (str, type(None))):
            return _error(400, 'body: expected {"name": "SCENARIO"} (or {"name": null} for none)')
        try:
            self.control.use(data["name"])
        except UnknownScenario as exc:
            return _error(404, f"body.name: {exc}")
        return web.json_response({"active": self.control.active})

    async def calls(self, request: web.BaseRequest) -> web.StreamResponse:
        try:
            wanted = CallFilter.from_query(request.query)
        except FilterError as exc:
            return _error(400, str(exc))
        journal = self.control.journal
        found = wanted.apply(journal.records())  # filters read the compact records: nothing parsed yet
        response = web.StreamResponse(headers={
            "Content-Type": "application/json",
            "X-Plantstub-Recorded": str(journal.recorded),
            "X-Plantstub-Dropped": str(journal.dropped),
            "X-Plantstub-Dropped-Bytes": str(journal.dropped_bytes),
        })
        await response.prepare(request)
        if request.method == "HEAD":  # the headers only: a body here would corrupt a kept-alive connection
            await response.write_eof()
            return response
        # Bodies are parsed and written in batches, off the event loop: reading 64 MiB of calls must not
        # stall the traffic being recorded meanwhile.
        chunks = list(_chunks(found))
        for i, chunk in enumerate(chunks):
            text = await asyncio.to_thread(_render, chunk, i == 0, i == len(chunks) - 1)
            await response.write(text)
        await response.write_eof()
        return response

    async def delete_calls(self, request: web.BaseRequest) -> web.Response:
        count = self.control.journal.kept
        self.control.journal.clear()
        self.control.coverage.clear()
        return web.json_response({"deleted": count})

    async def reset(self, request: web.BaseRequest) -> web.Response:
        self.control.reset()
        return web.json_response({"reset": True, "active": self.control.active})

    async def coverage(self, request: web.BaseRequest) -> web.Response:
        total = request.query.get("total")
        if total not in (None, "true", "false"):
            return _error(400, f"query.total: {total[:40]!r} is not true or false")
        sessions = self.control.sessions
        if total == "true" and sessions is not None:  # the default session, the live sessions and ended ones
            return web.json_response(sessions.total_coverage())
        return web.json_response(self.control.coverage_report())

    async def state(self, request: web.BaseRequest) -> web.Response:
        try:
            return web.json_response(self.control.state())
        except NotStateful as exc:
            return _error(409, str(exc))

    async def put_state(self, request: web.BaseRequest) -> web.Response:
        try:
            # The request bodies' parser: the same depth on every Python (json.loads stops where the stack does).
            data = decode_json(await request.read() or b"null")
        except web.HTTPRequestEntityTooLarge:
            return _error(413, too_large(self.control.settings.max_body))
        except BodyError as exc:
            if str(exc) == "nested too deeply to parse":
                return _error(400, "body: nested too deeply to parse")
            return _error(400, 'body: not valid JSON; send {"/plants": [{"id": 1, "name": "Fern"}]}')
        try:
            problems = self.control.set_state(data)
        except NotStateful as exc:
            return _error(409, str(exc))
        if problems:
            message = "; ".join(f"{where}: {message}" for where, message in problems)
            return web.json_response({**error_body(400, message), "problems": [
                {"at": where, "message": message} for where, message in problems]}, status=400)
        return web.json_response(self.control.state())

    async def webhooks(self, request: web.BaseRequest) -> web.Response:
        return web.json_response(self.control.webhooks.subscriptions.urls)

    async def put_webhooks(self, request: web.BaseRequest) -> web.Response:
        usage = 'send {"WEBHOOK NAME or *": "http://URL", ...} ({} for none)'
        try:
            data = json.loads(await request.read() or b"null")
        except web.HTTPRequestEntityTooLarge:
            return _error(413, too_large(self.control.settings.max_body))
        except (ValueError, RecursionError):
            return _error(400, f"body: not valid JSON; {usage}")
        if not isinstance(data, dict):
            return _error(400, f"body: expected a mapping; {usage}")
        try:
            self.control.webhooks.subscriptions.replace(data)
        except SubscriptionError as exc:
            return _error(400, str(exc))
        return web.json_response(self.control.webhooks.subscriptions.urls)

    async def deliveries(self, request: web.BaseRequest) -> web.Response:
        return web.json_response([d.as_dict() for d in self.control.webhooks.log.snapshot()], dumps=_dumps)

    async def delete_deliveries(self, request: web.BaseRequest) -> web.Response:
        return web.json_response({"deleted": self.control.webhooks.log.clear()})


    # -- rules from code, waiting for calls ----------------------------------------------------
    async def post_rule(self, request: web.BaseRequest) -> web.Response:
        data = await _json_body(request, self.control.settings.max_body, '{"match": {...}, "reply": {...}}')
        if isinstance(data, web.Response):
            return data
        # A client declaring for a test (Stub.connect) names the test's line; it shows in GET rules.
        source = _SOURCE.sub("?", request.headers.get(SOURCE_HEADER, ""))[:200] or f"{request.method} {request.path}"
        try:
            declared = self.control.add_rule(data, source)
        except ScenarioLoadError as exc:
            body = error_body(400, "; ".join(f"body.{e.path}: {e.message}" if e.path else f"body: {e.message}"
                                             for e in exc.errors))
            # each problem apart as well, so a client can raise them as ScenarioError at its caller's line
            body["problems"] = [{"path": e.path, "message": e.message} for e in exc.errors]
            return web.json_response(body, status=400)
        return web.json_response({"id": declared.id}, status=201)

    async def rules(self, request: web.BaseRequest) -> web.Response:
        return web.json_response({"rules": self.control.declared.listing()})

    async def delete_rules(self, request: web.BaseRequest) -> web.Response:
        return web.json_response({"deleted": self.control.declared.clear()})

    async def delete_rule(self, request: web.BaseRequest) -> web.Response:
        rule_id = request.path.rsplit("/", 1)[1]
        if not self.control.declared.remove(rule_id):
            known = ", ".join(self.control.declared.rules) or "none"
            return _error(404, f"path: no rule {rule_id[:40]!r} (rules: {known})")
        return web.json_response({"deleted": 1})

    async def wait_calls(self, request: web.BaseRequest) -> web.StreamResponse:
        data = await _json_body(request, self.control.settings.max_body, '{"n": 1, "timeout": 5, "path": "/plants"}')
        if isinstance(data, web.Response):
            return data
        if not isinstance(data, dict):
            return _error(400, 'body: expected {"n": 1, "timeout": 5, ...filters}')
        filters = dict(data)
        n, timeout = filters.pop("n", 1), filters.pop("timeout", 5.0)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool):
            return _error(400, f"body.timeout: {timeout!r} is not a number of seconds")
        try:
            expectation = expectation_of(filters, "body.")
            found, failure = await wait_for_calls_async(self.control.journal, expectation, n, float(timeout))
        except (TypeError, ValueError) as exc:
            message = str(exc)
            return _error(400, message if message.startswith("body.") else f"body.{message}")
        text = b'{"arrived":%s,"message":%s,"calls":[' % (b"false" if failure else b"true", json.dumps(failure).encode())
        return web.Response(body=text + b",".join(dumps_call(c) for c in found) + b"]}", content_type="application/json")


def _logged(handler: Handler) -> Handler:
    """An admin handler whose unexpected errors are logged with their traceback and answered in JSON."""

    async def guarded(request: web.BaseRequest) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPException:
            raise
        except (ConnectionError, asyncio.IncompleteReadError):  # the client left: nothing to answer, no bug
            raise
        except Exception as exc:
            log.exception("plantstub: internal error on admin route %s %s", request.method, request.path)
            return _error(500, f"plantstub internal error (a bug in plantstub): {type(exc).__name__}: {exc}")

    return guarded


class AdminRoutes:
    """The admin API's own small router: path under ADMIN_PREFIX -> method -> handler (GET answers HEAD)."""

    def __init__(self, control: Control) -> None:
        self.guard = AdminGuard(control.settings.admin_token, control.settings.host)
        self.table: dict[str, dict[str, Handler]] = {}
        self.items: dict[str, dict[str, Handler]] = {}  # `sessions/{id}`: by the path up to the last `/`
        for method, name, handler in _routes(_Admin(control)):
            self.add(method, name, handler)

    def add(self, method: str, name: str, handler: Handler) -> None:
        """Route `method` on ADMIN_PREFIX + `name`; a name ending in `/{id}` takes any last segment."""
        if name.endswith("/{id}"):
            methods = self.items.setdefault(ADMIN_PREFIX + name[: -len("{id}")], {})
        else:
            methods = self.table.setdefault(ADMIN_PREFIX + name, {})
        methods[method] = _logged(handler)
        if method == "GET":
            methods["HEAD"] = methods["GET"]  # for probes

    async def dispatch(self, request: web.BaseRequest) -> web.StreamResponse:
        """Answer an admin request; a path or method that does not exist gets a JSON 404 or 405."""
        refused = self.guard.refusal(request)
        if refused is not None:
            return _error(*refused)
        methods = self.table.get(request.path)
        if methods is None and self.items:
            head, _, last = request.path.rpartition("/")
            methods = self.items.get(head + "/") if last else None
        if methods is None:
            return _error(404, f"path: {request.path} is not an admin route (see GET {ADMIN_PREFIX}health)")
        handler = methods.get(request.method)
        if handler is None:
            allow = ", ".join(sorted(methods))
            return _error(405, f"method: {request.method} is not allowed on {request.path} (allowed: {allow})",
                          {"Allow": allow})
        return await handler(request)
