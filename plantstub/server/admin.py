"""The admin API under /__plantstub/: thin adapters over one Session's control surface. The route table comes first."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from plantstub._json import json_bytes
from plantstub._version import __version__
from plantstub.contract.outgoing import Outgoing, problem
from plantstub.errors import SubscriptionError, UnknownScenario
from plantstub.incoming import IncomingRequest
from plantstub.recording.call import Call, Record
from plantstub.recording.call_json import dumps_call
from plantstub.recording.filters import CallFilter, FilterError
from plantstub.recording.waiting import WaitError, WaitOverBudget, expectation_of
from plantstub.scenarios.load import RuleOverBudget, ScenarioLoadError
from plantstub.server.admin_guard import AdminGuard
from plantstub.server.admin_json import error, read_json, reply
from plantstub.server.answer import Streamed, streamed
from plantstub.server.limits import seed_key_problem
from plantstub.server.page import PageRoutes
from plantstub.server.prefixes import ADMIN_PREFIX
from plantstub.server.response import internal_error
from plantstub.server.session import NotStateful, Session
from plantstub.webhooks.deliveries import Sent

if TYPE_CHECKING:
    from plantstub.server.table import Sessions

AdminAnswer = Outgoing | Streamed
Handler = Callable[[IncomingRequest], Awaitable[AdminAnswer]]
_T = TypeVar("_T")


log = logging.getLogger("plantstub")


def _listed(items: Iterable[_T], dump: Callable[[_T], bytes]) -> Iterator[bytes]:
    """A JSON list, as pieces: `[`, each item dumped (with `,` between), `]`."""
    yield b"["
    for i, item in enumerate(items):
        yield dump(item) if i == 0 else b"," + dump(item)
    yield b"]"


def _state_pieces(state: dict[str, list[bytes]]) -> Iterator[bytes]:
    """The store's state, `{"/plants": [...], ...}`, one record (its JSON, as held) at a time."""
    yield b"{"
    for i, (path, records) in enumerate(state.items()):
        yield (b"," if i else b"") + json_bytes(path) + b":"
        yield from _listed(records, bytes)
    yield b"}"


def _rules_pieces(rules: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    yield b'{"rules":'
    yield from _listed(rules, json_bytes)
    yield b"}"


def _wait_pieces(found: list[Call], failure: str | None) -> Iterator[bytes]:
    """`POST calls/wait`'s answer: whether the calls arrived, the failure text, the matching calls."""
    yield b'{"arrived":%s,"message":%s,"calls":' % (b"false" if failure else b"true", json_bytes(failure))
    yield from _listed(found, dumps_call)
    yield b"}"


def _call_json(record: Record) -> bytes:
    return dumps_call(record.view())


def _delivery_json(sent: Sent) -> bytes:
    return json_bytes(sent.delivery().as_dict())  # its body parsed here, off the event loop


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
        ("GET", RULE, admin.rule),
        ("DELETE", RULE, admin.delete_rule),
        ("GET", "webhooks", admin.webhooks),
        ("PUT", "webhooks", admin.put_webhooks),
        ("DELETE", "webhooks", admin.delete_webhooks),
        ("GET", "deliveries", admin.deliveries),
        ("DELETE", "deliveries", admin.delete_deliveries),
        *PageRoutes(admin.session).routes(),  # the live page (GET /__plantstub/), calls/rows, calls/{id}
        ("POST", "record/save", admin.save_record),
    ]


RULE = "rules/{id}"  # the one admin path with a parameter
SHOWN_IDS = 10  # DELETE rules/ID of no rule: the ids its 404 names, at most
SOURCE_HEADER = "X-Plantstub-Source"  # POST rules: where the rule was declared (`tests/test_x.py:12`)
_SOURCE = re.compile(r"[^\x20-\x7e]")


class _Admin:
    """The admin routes of one session: each reads the request, calls the session's surface, writes JSON."""

    def __init__(self, session: Session, sessions: Sessions | None) -> None:
        self.session = session
        self.sessions = sessions  # the default session's admin API also counts the sidecar sessions

    async def _body(self, request: IncomingRequest, example: str) -> Any:
        return await read_json(request, example)

    async def health(self, request: IncomingRequest) -> Outgoing:
        spec, problems = self.session.runtime.spec, self.session.problems()
        return reply({
            "status": "degraded" if problems else "ok",
            **({"problems": problems} if problems else {}),
            "version": __version__,
            "spec": {"title": spec.title, "version": spec.version, "operations": len(spec.operations),
                     **({"warnings": list(spec.warnings)} if spec.warnings else {})},
            "active": self.session.active,
            "seed": self.session.runtime.seed,  # of dynamic answers; this session's draws are in "dynamic"
            **({"sessions": len(self.sessions), "session_counts": self.sessions.counts()}
               if self.sessions is not None else {}),
            **self.session.figures(),
        }, status=503 if problems else 200)

    async def scenarios(self, request: IncomingRequest) -> Outgoing:
        return reply(self.session.scenario_listing())

    async def put_scenario(self, request: IncomingRequest) -> Outgoing:
        data = await self._body(request, '{"name": "SCENARIO"} or {"name": null}')
        if isinstance(data, Outgoing):
            return data
        if not isinstance(data, dict) or "name" not in data or not isinstance(data["name"], (str, type(None))):
            return error(400, 'body: expected {"name": "SCENARIO"} (or {"name": null} for none)')
        try:
            self.session.use(data["name"])
        except UnknownScenario as exc:
            return error(404, f"body.name: {exc}")
        return reply({"active": self.session.active})

    async def calls(self, request: IncomingRequest) -> AdminAnswer:
        shape = _first(request.query, "format") or "json"
        if shape not in ("json", "har"):
            return error(400, f"query.format: {shape[:40]!r} is not json or har")
        try:
            wanted = CallFilter.from_query({k: v[-1] for k, v in request.query.items() if k != "format" and v})
        except FilterError as exc:
            return error(400, str(exc))
        found = wanted.apply(self.session.records())  # filters read the compact records: nothing parsed yet
        if shape == "har":  # the same calls as HAR 1.2, their URLs as this client reaches the stub
            base = f"{request.scheme}://{request.host}{request.path.partition(ADMIN_PREFIX)[0]}"
            from plantstub.proxy.har import har_pieces  # the HAR writer (and the recorder's files): when asked for

            return await streamed(har_pieces(found, base, self.session.runtime.settings.record_secrets != "keep"))
        figures = self.session.figures()["journal"]
        return await streamed(_listed(found, _call_json), {
            "X-Plantstub-Recorded": str(figures["recorded"]),
            "X-Plantstub-Dropped": str(figures["dropped"]),
            "X-Plantstub-Dropped-Bytes": str(figures["dropped_bytes"]),
        })

    async def delete_calls(self, request: IncomingRequest) -> Outgoing:
        return reply({"deleted": self.session.clear_calls()})

    async def reset(self, request: IncomingRequest) -> Outgoing:
        data = await self._body(request, 'nothing, or {"seed_key": "tests/test_shop.py::test_checkout"}')
        if isinstance(data, Outgoing):
            return data
        if data is not None and (not isinstance(data, dict) or set(data) - {"seed_key"}):
            return error(400, 'body: expected nothing, or {"seed_key": "KEY"} (dynamic answers drawn from the seed '
                              'and KEY from now on)')
        seed_key = data.get("seed_key") if data else None
        problem = None if seed_key is None else seed_key_problem(seed_key, "body.seed_key")
        if problem is not None:
            return error(400, problem)
        self.session.reset(seed_key)
        return reply({"reset": True, "active": self.session.active})

    async def save_record(self, request: IncomingRequest) -> Outgoing:
        try:
            saved = await self.session.save_recording()
        except OSError as exc:
            return error(503, f"record: cannot write to {self.session.runtime.settings.record}: {exc.strerror or exc}; "
                              "what was recorded is kept for the next save")
        if saved is None:
            return error(409, "record: this stub records nothing; start it with --proxy URL --record DIR")
        return reply(saved.answer())

    async def coverage(self, request: IncomingRequest) -> Outgoing:
        total = _first(request.query, "total")
        if total not in (None, "true", "false"):
            return error(400, f"query.total: {total[:40]!r} is not true or false")
        if total == "true" and self.sessions is not None:  # the default session, the live sessions and ended ones
            return reply(self.sessions.total_coverage())
        return reply(self.session.coverage())

    async def state(self, request: IncomingRequest) -> AdminAnswer:
        try:
            state = self.session.state_json()  # the records as the store holds them, as JSON: nothing to parse
        except NotStateful as exc:
            return error(409, str(exc))
        return await streamed(_state_pieces(state))

    async def put_state(self, request: IncomingRequest) -> AdminAnswer:
        data = await self._body(request, '{"/plants": [{"id": 1, "name": "Fern"}]}')
        if isinstance(data, Outgoing):
            return data
        try:  # checked off the loop (a state of 30 MB: a tenth of a second); kept on it
            problems = await asyncio.to_thread(self.session.state_problems, data)
            # the memory budget may still have no room for it: then nothing changes either
            problems = problems or self.session.set_state(data, checked=True)
        except NotStateful as exc:
            return error(409, str(exc))
        if problems:
            return error(400, "; ".join(f"{where}: {message}" for where, message in problems),
                         problems=[problem(where, message) for where, message in problems])
        return await streamed(_state_pieces(self.session.state_json()))

    async def webhooks(self, request: IncomingRequest) -> Outgoing:
        return reply(self.session.subscriptions)

    async def put_webhooks(self, request: IncomingRequest) -> Outgoing:
        usage = '{"WEBHOOK NAME or *": "http://URL", ...} ({} for none)'
        data = await self._body(request, usage)
        if isinstance(data, Outgoing):
            return data
        if not isinstance(data, dict):
            return error(400, f"body: expected a mapping; send {usage}")
        try:
            self.session.replace_subscriptions(data)
        except SubscriptionError as exc:
            return error(400, str(exc))
        return reply(self.session.subscriptions)

    async def delete_webhooks(self, request: IncomingRequest) -> Outgoing:
        return reply(self.session.reset_subscriptions())

    async def deliveries(self, request: IncomingRequest) -> AdminAnswer:
        return await streamed(_listed(self.session.sent(), _delivery_json))

    async def delete_deliveries(self, request: IncomingRequest) -> Outgoing:
        return reply({"deleted": self.session.clear_deliveries()})

    # -- rules from code, waiting for calls ----------------------------------------------------
    async def post_rule(self, request: IncomingRequest) -> Outgoing:
        data = await self._body(request, '{"match": {...}, "reply": {...}}')
        if isinstance(data, Outgoing):
            return data
        # A client declaring for a test (Stub.connect) names the test's line; it shows in GET rules.
        source = _SOURCE.sub("?", request.headers.get(SOURCE_HEADER, ""))[:200] or f"{request.method} {request.path}"
        try:  # checking a big rule takes a while: in a thread, so the loop serves meanwhile
            checked = await asyncio.to_thread(self.session.check_rule, data, source)
            rule_id = self.session.keep_rule(checked, data, source)
        except RuleOverBudget as exc:  # the rule is fine, the session has no room for it: 507, as a full store
            return error(507, f"body: {exc.message}", problems=[problem("body", exc.message)])
        except ScenarioLoadError as exc:
            # each problem apart as well, so a client can raise them as ScenarioError at its caller's line
            found = [problem(f"body.{e.path}" if e.path else "body", e.message) for e in exc.errors]
            return error(400, "; ".join(f"{p['at']}: {p['message']}" for p in found), problems=found)
        return reply({"id": rule_id}, status=201)

    async def rules(self, request: IncomingRequest) -> AdminAnswer:
        return await streamed(_rules_pieces(self.session.rule_entries()))

    async def delete_rules(self, request: IncomingRequest) -> Outgoing:
        return reply({"deleted": self.session.clear_rules()})

    async def rule(self, request: IncomingRequest) -> Outgoing:
        rule_id = request.path.rsplit("/", 1)[1]
        entry = self.session.rule_entry(rule_id)
        return self._no_rule(rule_id) if entry is None else reply(entry)

    async def delete_rule(self, request: IncomingRequest) -> Outgoing:
        rule_id = request.path.rsplit("/", 1)[1]
        if not self.session.remove_rule(rule_id):
            return self._no_rule(rule_id)
        return reply({"deleted": 1})

    def _no_rule(self, rule_id: str) -> Outgoing:
        ids = self.session.rule_ids()  # ids only: listing the rules copies every one
        known = ", ".join(ids[:SHOWN_IDS]) + (f" and {len(ids) - SHOWN_IDS:,} more" if len(ids) > SHOWN_IDS else "")
        return error(404, f"path: no rule {rule_id[:40]!r} (rules: {known or 'none'})")

    async def wait_calls(self, request: IncomingRequest) -> AdminAnswer:
        data = await self._body(request, '{"n": 1, "timeout": 5, "path": "/plants"}')
        if isinstance(data, Outgoing):
            return data
        if not isinstance(data, dict):
            return error(400, 'body: expected {"n": 1, "timeout": 5, ...filters}')
        filters = dict(data)
        n, timeout = filters.pop("n", 1), filters.pop("timeout", 5.0)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool):
            return error(400, f"body.timeout: {timeout!r} is not a number of seconds")
        try:
            expectation = expectation_of(filters, "body.")
            found, failure = await self.session.wait_for_calls(expectation, n, timeout)
        except WaitOverBudget as exc:  # the session's memory has no room for one more wait: 507, as a full store
            return error(507, f"body: {exc}", problems=[problem("body", str(exc))])
        except WaitError as exc:  # the filters' patterns took too long: judging calls would stall the stub
            return error(422, f"body: {exc}")
        except (TypeError, ValueError) as exc:
            message = str(exc)
            return error(400, message if message.startswith("body.") else f"body.{message}")
        return await streamed(_wait_pieces(found, failure))


def _first(query: Mapping[str, list[str]], name: str) -> str | None:
    """The first value of query parameter `name`, None when it was not sent."""
    values = query.get(name)
    return values[0] if values else None


def _logged(handler: Handler) -> Handler:
    """An admin handler whose unexpected errors are logged with their traceback and answered in JSON."""

    async def guarded(request: IncomingRequest) -> AdminAnswer:
        try:
            return await handler(request)
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

    def _route(self, method: str, path: str, headers: Mapping[str, str]) -> Handler | Outgoing:
        """The handler of an admin request, or the answer refusing it (the guard, a route or method there is not)."""
        refused = self.guard.refusal(method, path, headers)
        if refused is not None:
            return error(*refused)
        methods = self.table.get(path)
        if methods is None and self.items:
            head, _, last = path.rpartition("/")
            methods = self.items.get(head + "/") if last else None
        if methods is None:
            return error(404, f"path: {path} is not an admin route (see GET {ADMIN_PREFIX}health)")
        handler = methods.get(method)
        if handler is None:
            allow = ", ".join(sorted(methods))
            return error(405, f"method: {method} is not allowed on {path} (allowed: {allow})", {"Allow": allow})
        return handler

    def refused(self, method: str, path: str, headers: Mapping[str, str]) -> Outgoing | None:
        """The answer refusing an admin request before it is served, or None when it would be served."""
        route = self._route(method, path, headers)
        return route if isinstance(route, Outgoing) else None

    async def serve(self, request: IncomingRequest) -> AdminAnswer:
        """Answer an admin request; a path or method that does not exist gets a JSON 404 or 405."""
        route = self._route(request.method, request.path, request.headers)
        return route if isinstance(route, Outgoing) else await route(request)
