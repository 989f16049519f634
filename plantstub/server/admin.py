"""The admin API under /__plantstub/: thin adapters over one Session's control surface. The route table comes first."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from aiohttp import web

from plantstub._json import json_bytes
from plantstub._version import __version__
from plantstub.contract.outgoing import error_reply, problem
from plantstub.errors import SubscriptionError, UnknownScenario
from plantstub.recording.call import Record, dumps_call
from plantstub.recording.filters import CallFilter, FilterError
from plantstub.recording.waiting import expectation_of
from plantstub.scenarios.load import RuleOverBudget, ScenarioLoadError
from plantstub.server.admin_guard import AdminGuard
from plantstub.server.admin_json import error, read_json, reply
from plantstub.server.response import ReadTimeout, closing, internal_error, not_received, too_large
from plantstub.server.session import NotStateful, Session

if TYPE_CHECKING:
    from plantstub.server.table import Sessions

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
CALLS_PER_CHUNK = 64
CHUNK_BYTES = 256 * 1024  # what one batch parses and writes while holding the GIL


ADMIN_PREFIX = "/__plantstub/"
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
        ("DELETE", "webhooks", admin.delete_webhooks),
        ("GET", "deliveries", admin.deliveries),
        ("DELETE", "deliveries", admin.delete_deliveries),
    ]


RULE = "rules/{id}"  # the one admin path with a parameter
SOURCE_HEADER = "X-Plantstub-Source"  # POST rules: where the rule was declared (`tests/test_x.py:12`)
_SOURCE = re.compile(r"[^\x20-\x7e]")


class _Admin:
    """The admin routes of one session: each reads the request, calls the session's surface, writes JSON."""

    def __init__(self, session: Session, sessions: Sessions | None) -> None:
        self.session = session
        self.sessions = sessions  # the default session's admin API also counts the sidecar sessions
        self.max_body = session.runtime.settings.max_body

    async def _body(self, request: web.BaseRequest, example: str) -> Any:
        return await read_json(request, self.max_body, example)

    async def health(self, request: web.BaseRequest) -> web.Response:
        spec, problems = self.session.runtime.spec, self.session.problems()
        return reply({
            "status": "degraded" if problems else "ok",
            **({"problems": problems} if problems else {}),
            "version": __version__,
            "spec": {"title": spec.title, "version": spec.version, "operations": len(spec.operations),
                     **({"warnings": list(spec.warnings)} if spec.warnings else {})},
            "active": self.session.active,
            **({"sessions": len(self.sessions), "session_counts": self.sessions.counts()}
               if self.sessions is not None else {}),
            **self.session.figures(),
        }, status=503 if problems else 200)

    async def scenarios(self, request: web.BaseRequest) -> web.Response:
        return reply(self.session.scenario_listing())

    async def put_scenario(self, request: web.BaseRequest) -> web.Response:
        data = await self._body(request, '{"name": "SCENARIO"} or {"name": null}')
        if isinstance(data, web.Response):
            return data
        if not isinstance(data, dict) or "name" not in data or not isinstance(data["name"], (str, type(None))):
            return error(400, 'body: expected {"name": "SCENARIO"} (or {"name": null} for none)')
        try:
            self.session.use(data["name"])
        except UnknownScenario as exc:
            return error(404, f"body.name: {exc}")
        return reply({"active": self.session.active})

    async def calls(self, request: web.BaseRequest) -> web.StreamResponse:
        try:
            wanted = CallFilter.from_query(request.query)
        except FilterError as exc:
            return error(400, str(exc))
        found = wanted.apply(self.session.records())  # filters read the compact records: nothing parsed yet
        figures = self.session.figures()["journal"]
        response = web.StreamResponse(headers={
            "Content-Type": "application/json",
            "X-Plantstub-Recorded": str(figures["recorded"]),
            "X-Plantstub-Dropped": str(figures["dropped"]),
            "X-Plantstub-Dropped-Bytes": str(figures["dropped_bytes"]),
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
        return reply({"deleted": self.session.clear_calls()})

    async def reset(self, request: web.BaseRequest) -> web.Response:
        self.session.reset()
        return reply({"reset": True, "active": self.session.active})

    async def coverage(self, request: web.BaseRequest) -> web.Response:
        total = request.query.get("total")
        if total not in (None, "true", "false"):
            return error(400, f"query.total: {total[:40]!r} is not true or false")
        if total == "true" and self.sessions is not None:  # the default session, the live sessions and ended ones
            return reply(self.sessions.total_coverage())
        return reply(self.session.coverage())

    async def state(self, request: web.BaseRequest) -> web.Response:
        try:
            return reply(self.session.state)
        except NotStateful as exc:
            return error(409, str(exc))

    async def put_state(self, request: web.BaseRequest) -> web.Response:
        data = await self._body(request, '{"/plants": [{"id": 1, "name": "Fern"}]}')
        if isinstance(data, web.Response):
            return data
        try:
            problems = self.session.set_state(data)
        except NotStateful as exc:
            return error(409, str(exc))
        if problems:
            return error(400, "; ".join(f"{where}: {message}" for where, message in problems),
                         problems=[problem(where, message) for where, message in problems])
        return reply(self.session.state)

    async def webhooks(self, request: web.BaseRequest) -> web.Response:
        return reply(self.session.subscriptions)

    async def put_webhooks(self, request: web.BaseRequest) -> web.Response:
        usage = '{"WEBHOOK NAME or *": "http://URL", ...} ({} for none)'
        data = await self._body(request, usage)
        if isinstance(data, web.Response):
            return data
        if not isinstance(data, dict):
            return error(400, f"body: expected a mapping; send {usage}")
        try:
            self.session.replace_subscriptions(data)
        except SubscriptionError as exc:
            return error(400, str(exc))
        return reply(self.session.subscriptions)

    async def delete_webhooks(self, request: web.BaseRequest) -> web.Response:
        return reply(self.session.reset_subscriptions())

    async def deliveries(self, request: web.BaseRequest) -> web.Response:
        return reply([d.as_dict() for d in self.session.deliveries])

    async def delete_deliveries(self, request: web.BaseRequest) -> web.Response:
        return reply({"deleted": self.session.clear_deliveries()})

    # -- rules from code, waiting for calls ----------------------------------------------------
    async def post_rule(self, request: web.BaseRequest) -> web.Response:
        data = await self._body(request, '{"match": {...}, "reply": {...}}')
        if isinstance(data, web.Response):
            return data
        # A client declaring for a test (Stub.connect) names the test's line; it shows in GET rules.
        source = _SOURCE.sub("?", request.headers.get(SOURCE_HEADER, ""))[:200] or f"{request.method} {request.path}"
        try:
            rule_id = self.session.add_rule(data, source)
        except RuleOverBudget as exc:  # the rule is fine, the session has no room for it: 507, as a full store
            return error(507, f"body: {exc.message}", problems=[problem("body", exc.message)])
        except ScenarioLoadError as exc:
            # each problem apart as well, so a client can raise them as ScenarioError at its caller's line
            found = [problem(f"body.{e.path}" if e.path else "body", e.message) for e in exc.errors]
            return error(400, "; ".join(f"{p['at']}: {p['message']}" for p in found), problems=found)
        return reply({"id": rule_id}, status=201)

    async def rules(self, request: web.BaseRequest) -> web.Response:
        return reply({"rules": self.session.rules})

    async def delete_rules(self, request: web.BaseRequest) -> web.Response:
        return reply({"deleted": self.session.clear_rules()})

    async def delete_rule(self, request: web.BaseRequest) -> web.Response:
        rule_id = request.path.rsplit("/", 1)[1]
        if not self.session.remove_rule(rule_id):
            known = ", ".join(r["id"] for r in self.session.rules) or "none"
            return error(404, f"path: no rule {rule_id[:40]!r} (rules: {known})")
        return reply({"deleted": 1})

    async def wait_calls(self, request: web.BaseRequest) -> web.StreamResponse:
        data = await self._body(request, '{"n": 1, "timeout": 5, "path": "/plants"}')
        if isinstance(data, web.Response):
            return data
        if not isinstance(data, dict):
            return error(400, 'body: expected {"n": 1, "timeout": 5, ...filters}')
        filters = dict(data)
        n, timeout = filters.pop("n", 1), filters.pop("timeout", 5.0)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool):
            return error(400, f"body.timeout: {timeout!r} is not a number of seconds")
        try:
            expectation = expectation_of(filters, "body.")
            found, failure = await self.session.wait_for_calls(expectation, n, float(timeout))
        except (TypeError, ValueError) as exc:
            message = str(exc)
            return error(400, message if message.startswith("body.") else f"body.{message}")
        text = b'{"arrived":%s,"message":%s,"calls":[' % (b"false" if failure else b"true", json_bytes(failure))
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
            return error(500, internal_error(exc))

    return guarded


class AdminRoutes:
    """The admin API's own small router: path under ADMIN_PREFIX -> method -> handler (GET answers HEAD)."""

    def __init__(self, session: Session, sessions: Sessions | None = None) -> None:
        settings = session.runtime.settings
        self.guard = AdminGuard(settings.admin_token, settings.host)
        self.max_body = settings.max_body
        self.read_timeout = settings.read_timeout
        self.table: dict[str, dict[str, Handler]] = {}
        self.items: dict[str, dict[str, Handler]] = {}  # `sessions/{id}`: by the path up to the last `/`
        for method, name, handler in _routes(_Admin(session, sessions)):
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

    async def serve(self, request: web.BaseRequest, over_limit: bool) -> web.StreamResponse:
        """Answer an admin request (`over_limit`: its declared length is over --max-body)."""
        if over_limit:
            return closing(error_reply(413, too_large(self.max_body)))
        try:
            return await self.dispatch(request)
        except ReadTimeout:
            return closing(error_reply(408, not_received(self.read_timeout)))

    async def dispatch(self, request: web.BaseRequest) -> web.StreamResponse:
        """Answer an admin request; a path or method that does not exist gets a JSON 404 or 405."""
        refused = self.guard.refusal(request)
        if refused is not None:
            return error(*refused)
        methods = self.table.get(request.path)
        if methods is None and self.items:
            head, _, last = request.path.rpartition("/")
            methods = self.items.get(head + "/") if last else None
        if methods is None:
            return error(404, f"path: {request.path} is not an admin route (see GET {ADMIN_PREFIX}health)")
        handler = methods.get(request.method)
        if handler is None:
            allow = ", ".join(sorted(methods))
            return error(405, f"method: {request.method} is not allowed on {request.path} (allowed: {allow})",
                          {"Allow": allow})
        return await handler(request)
