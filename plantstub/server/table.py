"""Sessions: a stub's default session and its sidecar sessions by id, over one Runtime; and its reloads."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from plantstub._budget import Budget
from plantstub.recording.coverage import Tally, merge, report_of
from plantstub.scenarios.library import FolderLoad
from plantstub.server.runtime import Runtime
from plantstub.server.session import SESSION_SHARE, Limits, Session


class SessionLimit(LookupError):
    """A new session was asked for while --max-sessions are live; the message names the cap."""


class Sessions:
    """The default session and the live ones by id, least recently used first. Idle ones end when the
    table is next touched, and leave their coverage to the stub's total."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        settings = runtime.settings
        self.memory = Budget(settings.max_bytes)  # the stub's: every session's draws from it
        self.default = Session(runtime, Limits.of(settings), self.memory)
        self.limits = Limits.of(settings, SESSION_SHARE)  # each sidecar session's
        self.idle = settings.session_idle
        self.cap = settings.max_sessions
        self._live: dict[str, tuple[Session, float]] = {}  # id -> (session, last used), least recent first
        self.ended = 0
        self.ended_tally: Tally = {}  # the coverage of the sessions that ended
        self._closing: set[asyncio.Task[None]] = set()  # ended sessions' webhook senders, stopping
        self._on_end: list[Callable[[str], object]] = []  # told the id of each session that ends

    def when_ended(self, callback: Callable[[str], object]) -> None:
        """Call `callback(sid)` whenever a session ends (DELETE, a Stub view's stop, expiry)."""
        self._on_end.append(callback)

    def get(self, sid: str, now: float | None = None) -> Session:
        """Session `sid`, created on first use, marked used now.

        :raises SessionLimit: when it is new and --max-sessions are live.
        """
        now = time.monotonic() if now is None else now
        self.expire(now)
        entry = self._live.pop(sid, None)  # popped and put back: the table stays in order of last use
        session = entry[0] if entry is not None else self._create(sid)
        self._live[sid] = (session, now)
        return session

    def _create(self, sid: str) -> Session:
        if len(self._live) >= self.cap:
            raise SessionLimit(
                f"session {sid!r}: this stub already serves {self.cap} sessions, its cap (--max-sessions, "
                f"PLANTSTUB_MAX_SESSIONS); end one with DELETE /__plantstub/sessions/ID, or wait: a session "
                f"unused for {self.idle:g} s ends (--session-idle)")
        return Session(self.runtime, self.limits, self.memory, shares_file=self.default, sid=sid)

    def expire(self, now: float | None = None) -> None:
        """End the sessions unused for longer than --session-idle."""
        limit = (time.monotonic() if now is None else now) - self.idle
        while self._live:
            sid, (_, used) = next(iter(self._live.items()))
            if used > limit:
                break
            self.end(sid)

    def end(self, sid: str) -> bool:
        """End session `sid` (its coverage stays in the total); False when there is none."""
        entry = self._live.pop(sid, None)
        if entry is None:
            return False
        session = entry[0]
        merge(self.ended_tally, session.tally.tally())
        session.close()
        if session.sends():  # its sender started: stop its workers, on the loop
            try:
                task = asyncio.get_running_loop().create_task(session.stop_sending())
            except RuntimeError:  # no loop runs here (the stub stopped): its workers stopped with it
                pass
            else:
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)
        self.ended += 1
        for callback in self._on_end:
            callback(sid)
        return True

    def live(self) -> list[Session]:
        """The sidecar sessions, least recently used first."""
        return [session for session, _ in self._live.values()]

    def listing(self) -> list[tuple[str, Session, float]]:
        """(id, session, seconds since last use) of each live session, most recently used first."""
        now = time.monotonic()
        self.expire(now)
        return [(sid, session, now - used) for sid, (session, used) in reversed(self._live.items())]

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

    def reload(self) -> list[str]:
        """load_folder() then install(), in one go (for callers without an event loop)."""
        return self.install(self.load_folder())

    # -- the end ---------------------------------------------------------------------------------
    async def close(self) -> None:
        """Stop every session's webhook sender and close the journal file (the stub stops)."""
        for session in (self.default, *self.live()):
            await session.stop_sending()
        for task in list(self._closing):
            await task
        self.default.close()
