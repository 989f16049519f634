"""Sessions over HTTP: what a session id may be, and the admin routes that list, open and end sessions (the default
session's; reached with the session header too, as a load balancer hashes the opening and ending on it). Which
session a request belongs to is server/front.py's `choose_session`."""

from __future__ import annotations

import re
import secrets
import time
from typing import TYPE_CHECKING

from plantstub._clock import iso_time
from plantstub._json import shown
from plantstub.contract.outgoing import Outgoing
from plantstub.incoming import IncomingRequest
from plantstub.server.admin_json import error, read_json, reply
from plantstub.server.limits import seed_key_problem
from plantstub.server.prefixes import ADMIN_PREFIX, SESSION_HEADER, SESSION_PREFIX
from plantstub.server.table import SessionLimit, Sessions

if TYPE_CHECKING:
    from plantstub.server.admin import Handler

SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
ID_RULE = "1 to 64 letters, digits, '_' or '-'"
SESSIONS_ROUTE = ADMIN_PREFIX + "sessions"


KNOWN_IDS: set[str] = set()  # ids seen to be session ids: a session's requests name it again and again (a caller on
# every request may look here before session_id_problem(), sparing its frame)


def session_id_problem(sid: str, where: str, example: str = "") -> str | None:
    """Why `sid`, found at `where`, is not a session id; None when it is one."""
    if sid in KNOWN_IDS:  # SESSION_ID.fullmatch(sid) once an id: on every request a session header names
        return None
    if SESSION_ID.fullmatch(sid):
        if len(KNOWN_IDS) >= 4096:
            KNOWN_IDS.clear()
        KNOWN_IDS.add(sid)
        return None
    return f"{where}: {shown(sid)} is not a session id (expected {ID_RULE}{',' if example else ''}{example})"


def new_id() -> str:
    """A fresh session id: 16 URL-safe characters."""
    return secrets.token_urlsafe(12)


class SessionAdmin:
    """The admin routes of the sessions themselves (the default session's admin API only)."""

    def __init__(self, sessions: Sessions) -> None:
        self.sessions = sessions

    def routes(self) -> list[tuple[str, str, Handler]]:
        return [
            ("GET", "sessions", self.list_sessions),
            ("POST", "sessions", self.open_session),
            ("DELETE", "sessions/{id}", self.end_session),
        ]

    async def list_sessions(self, request: IncomingRequest) -> Outgoing:
        listed = self.sessions.listing()
        return reply({
            "sessions": [
                {"id": sid, "instance": live.instance, "opened": live.opened,
                 "calls": live.session.figures()["journal"]["recorded"], "active": live.session.active,
                 "idle_seconds": round(idle, 3), "last_used": iso_time(time.time() - idle)}
                for sid, live, idle in listed
            ],
            "count": len(listed), "max_sessions": self.sessions.cap, "session_idle": self.sessions.idle,
            "ended": self.sessions.ended, "evicted": self.sessions.evicted,
        })

    async def open_session(self, request: IncomingRequest) -> Outgoing:
        data = await read_json(request, 'nothing, or {"id": "SESSION"}')
        if isinstance(data, Outgoing):
            return data
        data = {} if data is None else data
        sid = data.get("id") if isinstance(data, dict) else None
        if not isinstance(data, dict) or set(data) - {"id", "seed_key"} or not isinstance(sid, (str, type(None))):
            return error(400, 'body: expected nothing, or {"id": "SESSION"} (and "seed_key": "KEY", optional)')
        problem = None if sid is None else session_id_problem(sid, "body.id")
        if problem is not None:
            return error(400, problem)
        seed_key = data.get("seed_key")
        problem = None if seed_key is None else seed_key_problem(seed_key, "body.seed_key")
        if problem is not None:
            return error(400, problem)
        named = _named(request, sid, "body.id")
        if isinstance(named, Outgoing):
            return named
        sid = sid or named or new_id()
        try:
            live = self.sessions.open_entry(sid, by_admin=True, seed_key=seed_key)  # never evicted (guarded)
        except SessionLimit as exc:
            return error(503, str(exc))
        url = f"{request.scheme}://{request.host}{SESSION_PREFIX}{sid}/"  # a base URL: ends with '/'
        return reply({"id": sid, "url": url, "instance": live.instance}, status=201)

    async def end_session(self, request: IncomingRequest) -> Outgoing:
        sid = request.path.rpartition("/")[2]
        named = _named(request, sid, "path")
        if isinstance(named, Outgoing):
            return named
        live = self.sessions.entry(sid)
        if live is None or not self.sessions.end(sid):
            return error(404, f"path: no session {shown(sid)} (it ended, or never began)")
        return reply({"ended": sid, "instance": live.instance, "dynamic_answers": live.session.draws.answers})


def _named(request: IncomingRequest, sid: str | None, where: str) -> str | Outgoing | None:
    """The session the header names on an opening or ending (a balancer hashes on it), checked against `sid`."""
    named = request.headers.get(SESSION_HEADER)
    if named is None:
        return None
    problem = session_id_problem(named, f"headers.{SESSION_HEADER}")
    if problem is not None:
        return error(400, problem)
    if sid is not None and named != sid:
        return error(400, f"headers.{SESSION_HEADER}: {shown(named)} names another session than the {where} "
                          f"({sid!r}); send one of them")
    return named
