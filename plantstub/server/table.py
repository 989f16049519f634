"""Sessions: a stub's default session and its sidecar sessions by id, over one Runtime; and its reloads."""

from __future__ import annotations

import asyncio
import math
import secrets
import sys
import time
from collections.abc import Callable
from typing import Any

from plantstub._budget import Budget
from plantstub._words import plural
from plantstub.recording.coverage import Tally, merge, report_of
from plantstub.scenarios.library import FolderLoad
from plantstub.server.limits import SESSION_SHARE, Limits
from plantstub.server.runtime import Runtime
from plantstub.server.session import Session
from plantstub.webhooks.outbox import GRACE, Outbox

ADMIN = "admin"  # opened by the admin API (or a request with the admin token): ends only by DELETE or expiry
IMPLICIT = "implicit"  # named by a plain request: the first to go when the cap is reached


class SessionLimit(LookupError):
    """A new session was asked for while --max-sessions are live, all opened by the admin API; the message names the cap."""


class Live:
    """A live session in the table: when it was last used, whether the admin API opened it, and its `instance`."""

    __slots__ = ("by_admin", "instance", "session", "used")

    def __init__(self, session: Session, used: float, by_admin: bool) -> None:
        self.session = session
        self.used = used
        self.by_admin = by_admin
        # Which opening of the id this is: the id opened again (after it ended, or on another replica behind a load
        # balancer) gets another, so a client can tell its session from a fresh one of the same name.
        self.instance = secrets.token_urlsafe(6)

    @property
    def opened(self) -> str:
        return ADMIN if self.by_admin else IMPLICIT


class Sessions:
    """The default session and the live ones by id, least recently used first. Idle ones end when the
    table is next touched, and leave their coverage to the stub's total.

    Sessions are capacity the admin token protects: one opened by the admin API (`open(sid, by_admin=True)`)
    ends only by DELETE, a Stub view's stop or --session-idle; one a plain request named is implicit, and the
    least recently used implicit one is evicted to make room when the cap is reached."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        settings = runtime.settings
        self.memory = Budget(settings.max_bytes)  # the stub's: every session's draws from it
        self.outbox = Outbox()  # the stub's one set of delivery workers and sockets, every session's turn in it
        self.default = Session(runtime, Limits.of(settings), self.memory, outbox=self.outbox)
        self.limits = Limits.of(settings, SESSION_SHARE)  # each sidecar session's
        self.idle = settings.session_idle
        # The first (least recently used) entry's last use when last looked, never later than it is: no session can
        # have been unused for `idle` seconds before this time + idle, so use() walks the table only from then on.
        self._oldest = math.inf
        self.cap = settings.max_sessions
        self._live: dict[str, Live] = {}  # id -> its entry, least recently used first
        self.ended = 0  # every end: DELETE, a view's stop, expiry, eviction
        self.evicted = 0  # of them, implicit sessions ended to make room for a new one
        self.ended_tally: Tally = {}  # the coverage of the sessions that ended
        self._closing: set[asyncio.Task[None]] = set()  # ended sessions' webhook senders, stopping
        self._on_end: list[Callable[[str], object]] = []  # told the id of each session that ends
        self.unsaved = 0  # --record: exchanges a save at stop or at a session's end could not write (exit status 1)

    def when_ended(self, callback: Callable[[str], object]) -> None:
        """Call `callback(sid)` whenever a session ends (DELETE, a Stub view's stop, expiry, eviction)."""
        self._on_end.append(callback)

    def use(self, sid: str, now: float | None = None) -> Live | None:
        """Live session `sid`'s entry, marked used now; None when it is not live (nothing is opened)."""
        now = time.monotonic() if now is None else now
        if now - self.idle >= self._oldest:  # self.expire(now) only when one may be due: on every session's request
            self.expire(now)
        live = self._live.pop(sid, None)  # popped and put back: the table stays in order of last use
        if live is None:
            return None
        live.used = now
        self._live[sid] = live
        return live

    def open(self, sid: str, *, by_admin: bool = True, now: float | None = None, seed_key: str | None = None) -> Session:
        """Session `sid`, created if it is not live, marked used now. `by_admin`: opened by the admin API (or
        the token), so never evicted; an implicit session opened so is promoted. `seed_key`: as open_entry's.

        :raises SessionLimit: when it is new, --max-sessions are live and the admin API opened every one.
        """
        return self.open_entry(sid, by_admin=by_admin, now=now, seed_key=seed_key).session

    def open_entry(self, sid: str, *, by_admin: bool = True, now: float | None = None,
                   seed_key: str | None = None) -> Live:
        """open(), giving the session's entry in the table (its instance with it). `seed_key`: the session's dynamic
        answers drawn from the seed and it (default: the id); a live session's draws start again from it."""
        now = time.monotonic() if now is None else now
        self.expire(now)
        live = self._live.pop(sid, None)
        if live is None:
            live = Live(self._create(sid, seed_key), now, by_admin)
        else:
            live.used, live.by_admin = now, live.by_admin or by_admin
            if seed_key is not None:
                live.session.draws.restart(seed_key)
        self._live[sid] = live
        self._oldest = min(self._oldest, now)
        return live

    def entry(self, sid: str) -> Live | None:
        """Live session `sid`'s entry, not marked used; None when it is not live."""
        return self._live.get(sid)

    def _create(self, sid: str, seed_key: str | None = None) -> Session:
        if len(self._live) >= self.cap and not self._evict():
            raise SessionLimit(
                f"session {sid!r}: this stub already serves {plural(self.cap, 'session')}, its cap (--max-sessions, "
                f"PLANTSTUB_MAX_SESSIONS); end one with DELETE /__plantstub/sessions/ID, or wait: a session "
                f"unused for {self.idle:g} s ends (--session-idle)")
        return Session(self.runtime, self.limits, self.memory, shares_file=self.default, outbox=self.outbox,
                       sid=sid, seed_key=seed_key)

    def _evict(self) -> bool:
        """End the least recently used implicit session; False when the admin API opened every live one."""
        # Only when the cap is reached: a walk of at most --max-sessions entries, off the common path.
        victim = next((sid for sid, live in self._live.items() if not live.by_admin), None)
        if victim is None:
            return False
        self.end(victim)
        self.evicted += 1
        return True

    def expire(self, now: float | None = None) -> None:
        """End the sessions unused for longer than --session-idle."""
        limit = (time.monotonic() if now is None else now) - self.idle
        while self._live:
            sid, live = next(iter(self._live.items()))
            if live.used > limit:
                self._oldest = live.used
                return
            self.end(sid)
        self._oldest = math.inf

    def end(self, sid: str) -> bool:
        """End session `sid` (its coverage stays in the total); False when there is none."""
        live = self._live.pop(sid, None)
        if live is None:
            return False
        session = live.session
        merge(self.ended_tally, session.tally.tally())
        session.close()
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # no loop runs here (the stub stopped): its deliveries were counted then
            loop = None
        if session.recorder is not None:  # --record: what it recorded is saved, on the loop off it, or here
            if loop is None:
                self.unsaved += session.save_now()
            else:
                self._later(loop.create_task(self._save(session)))
        if session.sends() and loop is not None:  # its pending deliveries get the grace, in the background
            self._later(loop.create_task(self._stop_sending(sid, session)))
        self.ended += 1
        for callback in self._on_end:
            callback(sid)
        return True

    def _later(self, task: asyncio.Task[None]) -> None:
        """A task of an ended session, awaited at stop."""
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _save(self, session: Session) -> None:
        self.unsaved += await session.save_at_end()

    async def _stop_sending(self, sid: str, session: Session) -> None:
        """An ended session's pending deliveries: sent within the grace, the rest counted in health and logged."""
        unsent = await session.stop_sending()
        if unsent:
            self.outbox.unsent_at_end += unsent
            print(f"plantstub: session {sid!r} ended; webhook deliveries not sent within the {GRACE:g} s grace: "
                  f"{unsent}", file=sys.stderr, flush=True)

    def live(self) -> list[Session]:
        """The sidecar sessions, least recently used first."""
        return [live.session for live in self._live.values()]

    def listing(self) -> list[tuple[str, Live, float]]:
        """(id, entry, seconds since last use) of each live session, most recently used first."""
        now = time.monotonic()
        self.expire(now)
        return [(sid, live, now - live.used) for sid, live in reversed(self._live.items())]

    def counts(self) -> dict[str, int]:
        """Live sessions by how they were opened, and how many implicit ones were evicted so far."""
        by_admin = sum(live.by_admin for live in self._live.values())
        return {ADMIN: by_admin, IMPLICIT: len(self._live) - by_admin, "evicted": self.evicted}

    def __len__(self) -> int:
        return len(self._live)

    def total_coverage(self) -> dict[str, Any]:
        """Coverage summed over the default session, the live sessions and those that ended."""
        tally: Tally = {}
        merge(tally, self.ended_tally)
        for session in (self.default, *self.live()):
            merge(tally, session.tally.tally())
        return report_of(self.runtime.spec, tally)

    # -- reloads (--watch) ---------------------------------------------------------------------
    def load_folder(self) -> FolderLoad:
        """The folder loaded again, touching nothing a request reads (safe in a thread)."""
        return self.runtime.folder.load()

    def install(self, loaded: FolderLoad) -> list[str]:
        """Install a reload, on the event loop; returns what to log.

        A broken folder installs nothing: the last good set keeps serving, the errors are published
        (admin `GET scenarios`). Each session keeps its active scenario (see ScenarioSet.reloaded); rule
        counters carry on for each scenario whose rules did not change, the others start afresh.
        """
        if not self.runtime.folder.install(loaded):
            kept = len(self.default.scenarios.scenarios)
            return [*map(str, loaded.errors), f"kept the last good scenarios ({kept})"]
        notes = self.default.rebase(loaded)
        for session in self.live():
            session.rebase(loaded)
        notes.append(f"reloaded {len(loaded.scenarios)} scenario(s) from {self.runtime.folder.path}")
        return notes

    # -- the end ---------------------------------------------------------------------------------
    async def close(self) -> int:
        """Send the pending deliveries within the grace (all sessions at once), stop sending and close the journal
        file (the stub stops); how many deliveries were not sent, these and those of sessions that ended."""
        try:
            sending = [session for session in (self.default, *self.live()) if session.sends()]
            unsent = await self.outbox.drain([session.webhooks.sender for session in sending])
            for task in list(self._closing):
                await task
            await self.outbox.close()
            if self.runtime.forwarder is not None:
                await self.runtime.forwarder.close()
            for session in (self.default, *self.live()):  # --record: what each session recorded, in its own file
                self.unsaved += await session.save_at_end()
        finally:
            self.default.close()
        return unsent + self.outbox.unsent_at_end
