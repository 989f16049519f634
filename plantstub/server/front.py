"""The stub's front door, the same under every transport: a request's target and headers choose its session (one
pure function, `choose_session`), then its admin API or its pipeline; --cors's preflights and headers. A transport
`open()`s a request when its head has arrived and `serve()`s it with its body."""

from __future__ import annotations

from collections.abc import Awaitable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from plantstub._json import shown
from plantstub.contract.outgoing import Outgoing, error_reply, unanswered
from plantstub.incoming import IncomingRequest, control_header, sent_method
from plantstub.recording.answered import CHECK, CLIENT_LEFT, Answerer
from plantstub.server.admin_guard import AdminGuard
from plantstub.server.answer import Answer
from plantstub.server.cors import is_preflight, origin_of, preflight
from plantstub.server.decide import Decision
from plantstub.server.pipeline import Arrival, Client, Pipeline
from plantstub.server.prefixes import ADMIN_PREFIX, SESSION_HEADER, SESSION_PREFIX
from plantstub.server.response import too_large
from plantstub.server.session import Session
from plantstub.server.sessions import KNOWN_IDS, SESSIONS_ROUTE, SessionAdmin, session_id_problem
from plantstub.server.table import SessionLimit, Sessions
from plantstub.server.target import Target, as_recorded, not_a_path, read_target

if TYPE_CHECKING:  # the admin API (and all it reads: filters, the page, HAR) is imported on its first request
    from plantstub.server.admin import AdminRoutes

Headers = Mapping[str, str]
_new = tuple.__new__  # a NamedTuple made from a tuple: no frame of its __new__, on every request


class BodyReader(Protocol):
    """A body as it arrives (aiohttp's StreamReader)."""

    async def readany(self) -> bytes: ...


_IN_HEADER = f"headers.{SESSION_HEADER}"  # where a session id sent in the header is read


class Choice(NamedTuple):
    """The session a request belongs to (None: the default one) and its target within it."""

    sid: str | None
    target: str


def choose_session(target: str, headers: Headers) -> Choice | Outgoing:
    """Which session a request belongs to: `/__session/{id}/...` (the prefix taken off) or `X-Plantstub-Session: {id}`;
    else the default session. An id that is none, or a header naming another session than the path, is a 400."""
    named = headers.get(SESSION_HEADER)
    getall = getattr(headers, "getall", None)  # control_header()'s check, its frame spared when the header came once
    if named is not None and getall is not None and len(getall(SESSION_HEADER)) > 1:
        named, twice = control_header(headers, SESSION_HEADER)
        if twice is not None:
            return error_reply(400, twice)
    if target.startswith(SESSION_PREFIX):
        sid, _, rest = target[len(SESSION_PREFIX):].partition("/")
        problem = session_id_problem(sid, "path", f" as in {SESSION_PREFIX}ci-42/plants")
        if problem is not None:
            return error_reply(400, problem)
        if named is not None and named != sid:
            return error_reply(400, f"headers.{SESSION_HEADER}: {shown(named)} names another session than the path "
                                    f"({sid!r}); send one of them")
        return Choice(sid, joined("/" + rest))
    if named is None or target.startswith(SESSIONS_ROUTE):  # opening or ending the session it names: the default's
        return _new(Choice, (None, target))  # admin routes, on the replica a balancer hashes it to
    # session_id_problem(named, ...) only for an id not seen yet, and the Choice without its __new__'s frame: on every
    # request of a session by header
    problem = None if named in KNOWN_IDS else session_id_problem(named, _IN_HEADER)
    return error_reply(400, problem) if problem is not None else _new(Choice, (named, target))


def joined(target: str) -> str:
    """A target with a doubled slash at its start read as one: a base URL ends with '/' (a session's, the fixture's),
    so `url + "/plants"` sends `//plants`. Only there: `/plants//1` stays what it is."""
    return target[1:] if target.startswith("//") else target


class Desk:
    """One session's handlers: its pipeline and its admin routes (made on the session's first admin request)."""

    __slots__ = ("_admin", "_sessions", "pipeline", "session")

    def __init__(self, session: Session, sessions: Sessions | None = None) -> None:
        self.session = session
        self.pipeline = Pipeline(session)
        self._sessions = sessions  # the default session's desk: its routes list, open and end sessions too
        self._admin: AdminRoutes | None = None

    @property
    def admin(self) -> AdminRoutes:
        if self._admin is None:
            self._admin = admin_routes(self.session, self._sessions)
        return self._admin


def admin_routes(session: Session, sessions: Sessions | None = None) -> AdminRoutes:
    """`session`'s admin routes; with `sessions`, the default session's, which list, open and end sessions too."""
    from plantstub.server.admin import AdminRoutes  # the first admin request pays for the admin API's modules

    admin = AdminRoutes(session, sessions)
    if sessions is not None:
        for method, name, route in SessionAdmin(sessions).routes():
            admin.add(method, name, route)
    return admin


class Front:
    """Every request of one running stub (or one aiohttp Application): its session, then the admin API or the
    pipeline. Sessions' desks are made on their first request and go when they end."""

    def __init__(self, sessions: Sessions) -> None:
        settings = sessions.runtime.settings
        self.sessions = sessions
        self.max_body = settings.max_body
        self.cors = settings.cors
        self.router = sessions.runtime.router
        self.guard = AdminGuard(settings.admin_token, settings.host)
        self.default = Desk(sessions.default, sessions)
        self._session_admin: AdminRoutes | None = None  # a session's admin routes, to refuse as it would
        self._desks: dict[str, Desk] = {}
        sessions.when_ended(lambda sid: self._desks.pop(sid, None))  # an ended session's pipeline (its journal) goes

    def open(self, method: str, raw_target: str, headers: Headers, raw_headers: Sequence[tuple[bytes, bytes]],
             scheme: str, parsed: Any = None) -> Pending | Answer:
        """A request whose head has arrived: what will serve it once its body is read, or the answer refusing it now.
        `parsed`: the transport's reading of the target (yarl's URL), when it has one."""
        method = sent_method(method)  # the one place the method is read as the client sent it
        if raw_target.startswith("//"):
            raw_target, parsed = joined(raw_target), None
        choice = choose_session(raw_target, headers) if raw_target.startswith("/__") or SESSION_HEADER in headers \
            else None
        if isinstance(choice, Outgoing):
            return Answer(choice)
        if choice is None or choice.sid is None:
            desk, target = self.default, raw_target
        else:
            found = self._desk(choice.sid, method, choice.target, headers)
            if isinstance(found, Answer):
                return found
            desk, target, parsed = found, choice.target, None
        read = read_target(target, parsed)
        if isinstance(read, Outgoing):  # refused: recorded (the client sent it); what follows it is not read
            shown = as_recorded(target)
            return Pending(self, desk, desk.pipeline.arrive(), method, Target(shown, shown, {}, ""), headers,
                           raw_headers, scheme, None).refuse(read)
        if read.path.startswith(ADMIN_PREFIX):
            return Pending(self, desk, None, method, read, headers, raw_headers, scheme, None)
        origin = origin_of(headers) if self.cors else None
        if origin is not None and is_preflight(method, headers):  # --cors: a browser asks before it sends
            return Answer(preflight(headers, read.raw_path, self.router))
        return _new(Pending, (self, desk, desk.pipeline.arrive(), method, read, headers, raw_headers, scheme, origin))

    def too_large(self, size: int | None) -> bool:
        """Whether a body of `size` bytes (declared, or read) is over --max-body: the one home of that rule."""
        return size is not None and size > self.max_body

    def refuse_unread(self, method: str, target: str, out: Outgoing) -> None:
        """Record a request that could not be read (it cannot be parsed, or did not arrive in time) in the default
        session: as far as its request line was read (`""` when not even that), no headers, `out` as its answer."""
        pipeline = self.default.pipeline
        pipeline.refuse(IncomingRequest(method, target, raw_path=target), pipeline.arrive(), out)

    def _desk(self, sid: str, method: str, target: str, headers: Headers) -> Desk | Answer:
        """Session `sid`'s desk, the session opened when it is not live; an Answer when the request is refused (a
        request that would be refused opens nothing)."""
        live = self.sessions.use(sid)
        if live is None:
            refused = self._refusal(sid, method, target, headers)
            if refused is not None:
                return refused
            try:
                live = self.sessions.open_entry(sid, by_admin=self.guard.carries_token(headers))
            except SessionLimit as exc:
                return Answer(error_reply(503, str(exc)))
        elif not live.by_admin and self.guard.token_set and self.guard.carries_token(headers):  # the token promotes it
            live.by_admin = True
        desk = self._desks.get(sid)
        if desk is None or desk.session is not live.session:
            desk = self._desks[sid] = Desk(live.session)
        return desk

    def _refusal(self, sid: str, method: str, target: str, headers: Headers) -> Answer | None:
        """The answer to a request naming a session not live yet that is refused, as the session would give it; None
        when it will be answered in the session (which is then opened)."""
        path = target.partition("?")[0]
        if path.startswith(ADMIN_PREFIX):  # what the admin routes refuse: the guard, a route or method it lacks,
            declared = headers.get("Content-Length", "")  # a body over --max-body
            if declared.isdigit() and self.too_large(int(declared)):
                return Answer(error_reply(413, too_large(self.max_body)), close=True)
            if self._session_admin is None:
                self._session_admin = admin_routes(self.sessions.default)
            refused = self._session_admin.refused(method, path, headers)
            return None if refused is None else Answer(refused)
        if is_preflight(method, headers):  # a browser asks before it sends: answered, but it opens nothing
            if self.cors and "Origin" in headers:
                return Answer(preflight(headers, target, self.router))
            return Answer(error_reply(404, f"path: no session {sid!r} to answer this CORS preflight, and a preflight "
                                           "opens none; open the session first (POST /__plantstub/sessions), or "
                                           "serve with --cors"))
        if not target.startswith("/"):
            return Answer(not_a_path(target), close=True)
        return None


class Pending(NamedTuple):
    """A request whose head has arrived, to be served once its body is read (or refused when it cannot be). `arrival`:
    numbered and attributed on arrival, before the body is read (a late answer still belongs to this epoch); None for
    the admin API."""

    front: Front
    desk: Desk
    arrival: Arrival | None
    method: str
    target: Target
    headers: Headers
    raw_headers: Sequence[tuple[bytes, bytes]]
    scheme: str
    origin: str | None

    def incoming(self, raw: bytes = b"") -> IncomingRequest:
        target = self.target
        return IncomingRequest(self.method, target.path, target.query, self.headers, raw, target.raw_path,
                               target.raw_query, self.scheme, self.raw_headers)

    def serve(self, raw: bytes, client: Client) -> Answer | Awaitable[Answer]:
        """The answer to this request with its body `raw`: now, or once it is ready."""
        arrival = self.arrival
        if arrival is None:
            return self._admin(raw)
        path, raw_path, query, raw_query = self.target
        served = self.desk.pipeline.serve(_new(IncomingRequest, (self.method, path, query, self.headers, raw, raw_path,
                                                                 raw_query, self.scheme, self.raw_headers)),
                                          arrival, client)
        if isinstance(served, Decision):
            return _new(Answer, (served.out, served.fault, self.origin, False))
        return self._later(served)

    async def _admin(self, raw: bytes) -> Answer:
        return Answer(await self.desk.admin.serve(self.incoming(raw)))

    async def _later(self, served: Coroutine[Any, Any, Decision | None]) -> Answer:
        decision = await served
        return Answer(None) if decision is None else Answer(decision.out, decision.fault, self.origin)

    def refuse(self, out: Outgoing, close: bool = True, by: Answerer = CHECK) -> Answer:
        """`out` instead of an answer (the body too big, late, broken, or never sent whole: then `by` is CLIENT_LEFT);
        recorded unless it is an admin request. `close`: the connection ends after it (what follows cannot be read)."""
        if self.arrival is not None:
            self.desk.pipeline.refuse(self.incoming(), self.arrival, out, by)
        return Answer(out, None, self.origin, close)

    def left(self) -> None:
        """The client left mid-body: recorded (a 499, answered by CLIENT_LEFT); nothing to answer."""
        self.refuse(unanswered("sending the whole body"), by=CLIENT_LEFT)

    def over(self, size: int | None) -> Answer | None:
        """The 413 when a body of `size` bytes (declared, or read) is over --max-body, else None: the connection
        then closes, the rest of the body is not read."""
        if size is None or size <= self.front.max_body:  # Front.too_large(), inline: on every request
            return None
        return self._too_large()

    def _too_large(self) -> Answer:
        return self.refuse(error_reply(413, too_large(self.front.max_body)))

    async def read(self, reader: BodyReader) -> bytes | Answer:
        """The body, read as it comes; the 413 when it grows past --max-body."""
        parts: list[bytes] = []
        size = 0
        while True:
            part = await reader.readany()
            if not part:
                return b"".join(parts)
            size += len(part)
            if self.front.too_large(size):
                return self._too_large()
            parts.append(part)
