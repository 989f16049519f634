"""The live page: `GET /__plantstub/` (one HTML file, plantstub/data/page.html) and the admin routes it reads, the
calls as short rows (a window, newest first, long-polled for new ones) and one call in full."""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from plantstub._clock import iso_time
from plantstub._json import JSON
from plantstub.contract.outgoing import Outgoing
from plantstub.incoming import IncomingRequest
from plantstub.recording.answered import answered_text
from plantstub.recording.call import Record
from plantstub.recording.call_json import dumps_call
from plantstub.recording.verdict import VERDICTS, verdict_of
from plantstub.server.admin_json import error, reply

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from plantstub.server.session import Session

    Handler = Callable[[IncomingRequest], Awaitable[Outgoing]]

DEFAULT_ROWS = 200  # what the page shows at once: enough to scroll, few enough to render at once
MAX_ROWS = 500
MAX_WAIT = 30.0  # seconds a long poll is held open at most
ROW_FILTERS = ("since", "before", "limit", "wait", "epoch", "path", "status", "verdict")
_STATUS = re.compile(r"[1-5](?:[0-9]{2}|xx|XX)")
_INTEGER = re.compile(r"[0-9]{1,18}")
# The page loads nothing from anywhere: scripts and styles are inline, requests go to the stub itself.
PAGE_TYPE = "text/html; charset=utf-8"
PAGE_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                                "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
                                "frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@cache
def page_html() -> bytes:
    return (resources.files("plantstub") / "data" / "page.html").read_bytes()


@dataclass(frozen=True, slots=True)
class RowFilter:
    """What `GET calls/rows` was asked: the window (`since`, `before`, `limit`) and the page's filters."""

    since: int | None = None
    before: int | None = None
    limit: int = DEFAULT_ROWS
    wait: float = 0.0
    epoch: int | None = None
    path: str = ""  # a part of the path
    status: str = ""  # `404` or a class, `4xx`
    verdict: str = ""

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> RowFilter:
        """The filters of a query string; ValueError naming the first bad one."""
        unknown = sorted(set(query) - set(ROW_FILTERS))
        if unknown:
            raise ValueError(f"query.{unknown[0]}: unknown filter (known: {', '.join(ROW_FILTERS)})")
        numbers: dict[str, int] = {}
        for name in ("since", "before", "limit", "epoch"):
            if query.get(name):
                if not _INTEGER.fullmatch(query[name]):
                    raise ValueError(f"query.{name}: {query[name][:40]!r} is not a whole number")
                numbers[name] = int(query[name])
        if not 1 <= numbers.get("limit", DEFAULT_ROWS) <= MAX_ROWS:
            raise ValueError(f"query.limit: {numbers['limit']} is not 1 to {MAX_ROWS}")
        try:
            wait = float(query.get("wait") or 0)
        except ValueError:
            wait = -1.0
        if not 0 <= wait <= MAX_WAIT:
            raise ValueError(f"query.wait: {query['wait'][:40]!r} is not 0 to {MAX_WAIT:g} seconds")
        status = query.get("status", "").strip()
        if status and not _STATUS.fullmatch(status):
            raise ValueError(f"query.status: {status[:40]!r} is not a status (404) or a class (4xx)")
        verdict = query.get("verdict", "")
        if verdict and verdict not in VERDICTS:
            raise ValueError(f"query.verdict: {verdict[:40]!r} is not one of {', '.join(VERDICTS)}")
        return cls(wait=wait, path=query.get("path", "")[:2000], status=status.lower(), verdict=verdict, **numbers)

    def keeps(self, record: Record) -> bool:
        if self.path and self.path not in record.path:
            return False
        if self.status:
            shown = "" if record.status is None else str(record.status)
            if not (shown == self.status or (self.status.endswith("xx") and shown[:1] == self.status[0])):
                return False
        return not self.verdict or record.verdict == self.verdict

    def window(self, records: list[Record]) -> tuple[list[Record], bool]:
        """The matching records, newest first, at most `limit`; and whether older ones match too."""
        found: list[Record] = []
        for record in reversed(records):
            seq = record.seq
            if self.before is not None and seq >= self.before:
                continue
            if self.since is not None and seq <= self.since:
                break
            if self.keeps(record):
                if len(found) == self.limit:
                    return found, True
                found.append(record)
        return found, False


class PageRoutes:
    """The page and its admin routes over one session."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def routes(self) -> list[tuple[str, str, Handler]]:
        return [("GET", "", self.page), ("GET", "calls/rows", self.rows), ("GET", "calls/{id}", self.call)]

    async def page(self, request: IncomingRequest) -> Outgoing:
        html = page_html()
        return Outgoing(200, html, html, PAGE_TYPE, PAGE_HEADERS)

    @staticmethod
    def row(record: Record) -> dict[str, Any]:
        """A call's short row: its verdict and problem count (recording/verdict.py), who answered as the record says
        (`answered_by`, and `who`: that in a few words)."""
        problems = record.problems
        answered = record.answered_by
        return {
            "seq": record.seq, "time": iso_time(record.started), "method": record.method, "path": record.path,
            "status": record.status, "fault": record.fault, "pending": record.pending,
            "verdict": verdict_of(problems), "problems": sum(map(len, problems.values())),
            "answered_by": answered, "who": answered_text(answered), "rule": record.rule, "scenario": record.scenario,
        }

    async def rows(self, request: IncomingRequest) -> Outgoing:
        """The newest matching calls as rows (at most `limit`, before `before`); with `since` and `wait`, held until
        a call newer than `since` arrives (or the journal is cleared), at most `wait` seconds."""
        try:
            wanted = RowFilter.from_query(request.query_first())
        except ValueError as exc:
            return error(400, str(exc))
        journal = self.session.journal
        records = journal.records()
        if wanted.since is not None and wanted.wait and wanted.epoch == journal.epoch:
            records = await self._held(wanted, records)
        epoch = journal.epoch
        if wanted.epoch is not None and wanted.epoch != epoch:  # cleared since the page looked: start again
            wanted = RowFilter(limit=wanted.limit, path=wanted.path, status=wanted.status, verdict=wanted.verdict)
        found, more = wanted.window(records)
        return reply({"epoch": epoch, "recorded": journal.recorded, "kept": len(records),
                      "calls": [self.row(record) for record in found], "more": more})

    async def _held(self, wanted: RowFilter, records: list[Record]) -> list[Record]:
        """Wait for a call after `wanted.since` (or a clear): the journal tells a listener only while one waits."""
        if records and records[-1].seq > (wanted.since or 0):
            return records
        loop = asyncio.get_running_loop()
        arrived = asyncio.Event()

        def wake(record: Record | None, body: Any) -> None:  # on the recording thread: quick, and once
            if not arrived.is_set():
                loop.call_soon_threadsafe(arrived.set)

        journal = self.session.journal
        kept = journal.listen(wake)
        try:
            if not kept or kept[-1].seq <= (wanted.since or 0):
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(arrived.wait(), wanted.wait)
        finally:
            journal.unlisten(wake)
        return journal.records()

    async def call(self, request: IncomingRequest) -> Outgoing:
        """One kept call in full, as `GET calls` shows each."""
        given = request.path.rsplit("/", 1)[1]
        if not _INTEGER.fullmatch(given):
            return error(400, f"path: {given[:40]!r} is not a call number (GET calls/1)")
        seq = int(given)
        records = self.session.journal.records()
        at = bisect.bisect_left(records, seq, key=lambda record: record.seq)
        if at == len(records) or records[at].seq != seq:
            kept = f"#{records[0].seq} to #{records[-1].seq}" if records else "none"
            return error(404, f"path: no call #{seq} is kept (kept: {kept})")
        record = records[at]  # as GET calls shows it, with what the page says of it: verdict, problems by whom, who
        problems = record.problems
        shown = dumps_call(record.view(), verdict=verdict_of(problems), problems=problems,
                           who=answered_text(record.answered_by))
        return Outgoing(200, shown, shown, JSON)
