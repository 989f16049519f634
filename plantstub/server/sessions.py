"""Sessions over HTTP: a request under `/__session/{id}` or with `X-Plantstub-Session: {id}` goes to that
session's own pipeline (its Session), the prefix taken off; the admin routes that list, open and end them."""

from __future__ import annotations

import inspect
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.http import HttpVersion11, RawRequestMessage
from aiohttp.streams import StreamReader
from yarl import URL

from plantstub.recording.call import iso_time
from plantstub.server.admin import AdminRoutes
from plantstub.server.admin_guard import AdminGuard
from plantstub.server.admin_json import error, read_json, reply
from plantstub.server.cors import is_preflight, preflight
from plantstub.server.pipeline import Later, Pipeline
from plantstub.server.prefixes import SESSION_HEADER, SESSION_PREFIX
from plantstub.server.session import Session, seed_key_problem
from plantstub.server.table import SessionLimit, Sessions

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
ID_RULE = "1 to 64 letters, digits, '_' or '-'"
ADMIN = "/__plantstub/"
SESSIONS_ROUTE = ADMIN + "sessions"
SHOWN = 80


def _shown(value: str) -> str:
    return repr(value if len(value) <= SHOWN else value[:SHOWN] + "…")


def _joined(path: str, query: str) -> URL:
    """The target with a doubled slash at its start read as one: a session's URL (and the fixture's) ends with '/',
    so `url + "/plants"` sends `/__session/ID//plants`. Only there: `/plants//1` stays what it is."""
    return URL.build(path=path[1:] if path.startswith("//") else path, query_string=query, encoded=True)


def pipeline_of(handler: Handler) -> Pipeline | None:
    """The Pipeline whose `handle` `handler` is (through --cors's wrapper), or None."""
    pipeline = getattr(inspect.unwrap(handler), "__self__", None)
    return pipeline if isinstance(pipeline, Pipeline) else None


def new_id() -> str:
    """A fresh session id: 16 URL-safe characters."""
    return secrets.token_urlsafe(12)


class SessionRouter:
    """Sends each session's requests to its own pipeline, built by `make_handler` once per session."""

    def __init__(self, sessions: Sessions, make_handler: Callable[[Session], Handler]) -> None:
        settings = sessions.runtime.settings
        self.sessions = sessions
        self.make_handler = make_handler
        self.guard = AdminGuard(settings.admin_token, settings.host)
        self.max_body = settings.max_body
        self._cors = settings.cors
        # A session's admin routes, to refuse a call it would refuse before the session opens (never serving one)
        self._admin = AdminRoutes(sessions.default)
        # A live session's handler, and its Pipeline for quick() (None: not one, so not answered at once)
        self._handlers: dict[str, tuple[Session, Handler, Pipeline | None]] = {}
        self._default: Pipeline | None = None  # the default session's, for quick() (set by wrap())
        sessions.when_ended(self._forget)  # an ended session's pipeline (and its journal) goes with it

    def wrap(self, handler: Handler, lean: bool = False) -> Handler:
        """`handler` for the default session; a session's requests to their own (one prefix or header check). `lean`:
        for aiohttp's low-level server, which awaits what it is given (an Application's router wants a coroutine)."""

        def route(request: web.BaseRequest) -> Awaitable[web.StreamResponse]:  # no coroutine of its own: no await
            if request.rel_url.raw_path.startswith("//"):
                request = request.clone(rel_url=_joined(request.rel_url.raw_path, request.rel_url.raw_query_string))
            named = request.headers.get(SESSION_HEADER)
            if named is not None and not request.rel_url.raw_path.startswith(SESSION_PREFIX):
                if request.rel_url.raw_path.startswith(SESSIONS_ROUTE):  # opening or ending the session it names:
                    return handler(request)  # the default's admin routes, on the replica a balancer hashes it to
                return self._live(named, request) or self.dispatch(request, handler)
            if request.path.startswith(SESSION_PREFIX) or named is not None:
                return self.dispatch(request, handler)
            return handler(request)

        async def routed(request: web.BaseRequest) -> web.StreamResponse:
            return await route(request)

        def lean_route(request: web.BaseRequest) -> Awaitable[web.StreamResponse]:
            protocol: Any = request.protocol  # server/connection.py's Connection
            later: Later | None = protocol.later  # a request quick() decided, to be answered now
            if later is not None:
                protocol.later = None
                return later.pipeline.finish(request, later)
            return route(request)

        if not lean:
            return routed
        self._default = pipeline_of(handler)
        return lean_route

    def quick(self, message: RawRequestMessage, payload: StreamReader, transport: Any) -> Later | bool:
        """A request that arrived whole, answered at once by its pipeline's `quick` when it is of the usual kind (an
        HTTP/1.1 keep-alive request, not HEAD, to the default session or a live one, no `Expect`, no CORS
        preflight); False: not taken, aiohttp's handler loop answers it (server/connection.py)."""
        headers = message.headers
        if (message.version != HttpVersion11 or message.should_close or message.method == "HEAD"
                or message.upgrade or "Expect" in headers):
            return False
        raw_path = message.path
        url: URL | None = None  # a plain target (the usual one) is its own path: yarl need not read it
        if "%" in raw_path or "?" in raw_path or "#" in raw_path or not raw_path.startswith("/"):
            url = message.url
            if url.absolute:  # `GET http://host/path`: aiohttp's request reads it
                return False
            raw_path = url.raw_path
        origin = headers.get("Origin") if self._cors else None
        if origin is not None and message.method == "OPTIONS" and "Access-Control-Request-Method" in headers:
            return False
        named = headers.get(SESSION_HEADER)
        if raw_path.startswith("/__"):  # a session's prefix, the admin API, or a path of the spec's own
            if not raw_path.startswith(SESSION_PREFIX):
                return False if named is not None or self._default is None else self._default.quick(
                    message, url, raw_path, payload, transport, origin)
            sid, _, rest = raw_path[len(SESSION_PREFIX):].partition("/")
            if named is not None and named != sid:
                return False
            url = _joined("/" + rest, "" if url is None else url.raw_query_string)
        elif named is None:
            if raw_path.startswith("//"):  # a base URL + "/plants": read as one slash, as route() does
                url = _joined(raw_path, "" if url is None else url.raw_query_string)
                if url.raw_path.startswith("/__"):  # the admin API or a session's prefix: route() sends it on
                    return False
            if self._default is None:
                return False
            return self._default.quick(message, url, raw_path, payload, transport, origin)
        else:
            sid = named
        cached = self._handlers.get(sid)
        session, _, pipeline = cached if cached is not None else (None, None, None)
        if pipeline is None:  # not live, or not served yet: dispatch() opens it, or refuses
            return False
        live = self.sessions.use(sid)
        if live is None or live.session is not session:
            return False
        if not live.by_admin and self.guard.carries_token(message):  # type: ignore[arg-type]  # reads its headers
            live.by_admin = True
        return pipeline.quick(message, url, raw_path, payload, transport, origin)

    def _live(self, sid: str, request: web.BaseRequest) -> Awaitable[web.StreamResponse] | None:
        """A request naming a live session by header, straight to its pipeline (no coroutine of the router's, the id
        known good); None for anything else (dispatch() then answers it)."""
        cached = self._handlers.get(sid)
        if cached is None:
            return None
        live = self.sessions.use(sid)
        if live is None or live.session is not cached[0]:
            return None
        if not live.by_admin and self.guard.carries_token(request):  # the token promotes it (False: no token set)
            live.by_admin = True
        return cached[1](request)

    async def dispatch(self, request: web.BaseRequest, default: Handler) -> web.StreamResponse:
        raw = request.rel_url.raw_path
        named = request.headers.get(SESSION_HEADER)
        if raw.startswith(SESSION_PREFIX):
            sid, _, rest = raw[len(SESSION_PREFIX):].partition("/")
            if not SESSION_ID.fullmatch(sid):
                return error(400, f"path: {_shown(sid)} is not a session id (expected {ID_RULE}, as in "
                                   f"{SESSION_PREFIX}ci-42/plants)")
            if named is not None and named != sid:
                return error(400, f"headers.{SESSION_HEADER}: {_shown(named)} names another session than the "
                                   f"path ({sid!r}); send one of them")
            inner = _joined("/" + rest, request.rel_url.raw_query_string)
            if not inner.path.startswith(ADMIN):  # a session's own pipeline takes the target as it is: no clone
                return await self._served(request, sid, inner)
            request = request.clone(rel_url=inner)
        elif named is None:  # a prefix only once decoded (/__session%2F...): not a session's request
            return await default(request)
        elif not SESSION_ID.fullmatch(named):
            return error(400, f"headers.{SESSION_HEADER}: {_shown(named)} is not a session id (expected {ID_RULE})")
        else:
            sid = named
        return await self._served(request, sid)

    async def _served(self, request: web.BaseRequest, sid: str, inner: URL | None = None) -> web.StreamResponse:
        """`request` answered in session `sid` (opened when it is not live yet), at `inner` within its prefix."""
        live = self.sessions.use(sid)
        if live is None:  # a new session: only for a request that will be answered in it
            if inner is not None:  # what refuses it reads the request's own target
                request, inner = request.clone(rel_url=inner), None
            refused = await self._refusal(request, sid)
            if refused is not None:
                return refused
            try:
                session = self.sessions.open(sid, by_admin=self.guard.carries_token(request))
            except SessionLimit as exc:
                return error(503, str(exc))
        else:
            session = live.session
            if not live.by_admin and self.guard.carries_token(request):  # the token promotes it (False: no token set)
                live.by_admin = True
        handler = self._handler(sid, session)
        if inner is None:
            return await handler(request)
        pipeline = getattr(handler, "__self__", None)  # the session's Pipeline.handle, unless --cors wraps it
        if isinstance(pipeline, Pipeline):
            return await pipeline.handle(request, inner)
        return await handler(request.clone(rel_url=inner))

    async def _refusal(self, request: web.BaseRequest, sid: str) -> web.StreamResponse | None:
        """The answer to a request naming a session not live yet that is refused, as the session would give it;
        None when it will be answered in the session (which is then opened)."""
        path = request.path
        if path.startswith(ADMIN):  # the guard, --max-body and the admin routes: what AdminRoutes.dispatch refuses
            declared = request.content_length
            over_limit = declared is not None and declared > self.max_body
            if over_limit or self.guard.refusal(request) is not None or not self._admin_route(request):
                return await self._admin.serve(request, over_limit)
            return None
        if is_preflight(request):  # a browser asks before it sends: answered, but it opens nothing
            if self._cors and "Origin" in request.headers:
                return preflight(request, self.sessions.runtime.router)
            return error(404, f"path: no session {sid!r} to answer this CORS preflight, and a preflight opens none; "
                              "open the session first (POST /__plantstub/sessions), or serve with --cors")
        if not path.startswith("/"):  # CONNECT host:443, OPTIONS *
            return error(400, f"request: the target {request.raw_path!r} is not a path such as /plants "
                              "(plantstub is not a proxy)")
        return None

    def _admin_route(self, request: web.BaseRequest) -> bool:
        """Whether a session's admin API has the route and method `request` asks for."""
        methods = self._admin.table.get(request.path)
        if methods is None:
            head, _, last = request.path.rpartition("/")
            methods = self._admin.items.get(head + "/") if last else None
        return methods is not None and request.method in methods

    def _handler(self, sid: str, session: Session) -> Handler:
        cached = self._handlers.get(sid)
        if cached is not None and cached[0] is session:
            return cached[1]
        handler = self.make_handler(session)
        self._handlers[sid] = (session, handler, pipeline_of(handler))
        return handler

    def _forget(self, sid: str) -> None:
        self._handlers.pop(sid, None)

    # -- admin routes (the default session's admin API only) ----------------------------------------
    def admin_routes(self) -> list[tuple[str, str, Handler]]:
        return [
            ("GET", "sessions", self.list_sessions),
            ("POST", "sessions", self.open_session),
            ("DELETE", "sessions/{id}", self.end_session),
        ]

    async def list_sessions(self, request: web.BaseRequest) -> web.Response:
        listed = self.sessions.listing()
        return reply({
            "sessions": [
                {"id": sid, "instance": live.instance, "opened": live.opened, "calls": live.session.figures()["journal"]["recorded"],
                 "active": live.session.active, "idle_seconds": round(idle, 3), "last_used": iso_time(_wall(idle))}
                for sid, live, idle in listed
            ],
            "count": len(listed), "max_sessions": self.sessions.cap, "session_idle": self.sessions.idle,
            "ended": self.sessions.ended, "evicted": self.sessions.evicted,
        })

    async def open_session(self, request: web.BaseRequest) -> web.Response:
        data = await read_json(request, self.max_body, 'nothing, or {"id": "SESSION"}')
        if isinstance(data, web.Response):
            return data
        data = {} if data is None else data
        sid = data.get("id") if isinstance(data, dict) else None
        if not isinstance(data, dict) or set(data) - {"id", "seed_key"} or not isinstance(sid, (str, type(None))):
            return error(400, 'body: expected nothing, or {"id": "SESSION"} (and "seed_key": "KEY", optional)')
        if sid is not None and not SESSION_ID.fullmatch(sid):
            return error(400, f"body.id: {_shown(sid)} is not a session id (expected {ID_RULE})")
        seed_key = data.get("seed_key")
        problem = None if seed_key is None else seed_key_problem(seed_key, "body.seed_key")
        if problem is not None:
            return error(400, problem)
        named = _named(request, sid, "body.id")
        if isinstance(named, web.Response):
            return named
        sid = sid or named or new_id()
        try:
            live = self.sessions.open_entry(sid, by_admin=True, seed_key=seed_key)  # never evicted (guarded)
        except SessionLimit as exc:
            return error(503, str(exc))
        url = f"{request.scheme}://{request.host}{SESSION_PREFIX}{sid}/"  # a base URL: ends with '/'
        return reply({"id": sid, "url": url, "instance": live.instance}, status=201)

    async def end_session(self, request: web.BaseRequest) -> web.Response:
        sid = request.path.rpartition("/")[2]
        named = _named(request, sid, "path")
        if isinstance(named, web.Response):
            return named
        live = self.sessions.entry(sid)
        if live is None or not self.sessions.end(sid):
            return error(404, f"path: no session {_shown(sid)} (it ended, or never began)")
        return reply({"ended": sid, "instance": live.instance, "dynamic_answers": live.session.draws.answers})


def _named(request: web.BaseRequest, sid: str | None, where: str) -> str | web.Response | None:
    """The session the header names on an opening or ending (a balancer hashes on it), checked against `sid`."""
    named = request.headers.get(SESSION_HEADER)
    if named is None:
        return None
    if not SESSION_ID.fullmatch(named):
        return error(400, f"headers.{SESSION_HEADER}: {_shown(named)} is not a session id (expected {ID_RULE})")
    if sid is not None and named != sid:
        return error(400, f"headers.{SESSION_HEADER}: {_shown(named)} names another session than the {where} "
                          f"({sid!r}); send one of them")
    return named


def _wall(seconds_ago: float) -> float:
    return time.time() - seconds_ago
