"""--record DIR: a session's exchanges with the real service, kept as the bytes that came within the session's memory
budget, and written as one scenario file per save (`recorded-001.yaml`; a sidecar session's `recorded-ID-001.yaml`).

An exchange that can never become a rule (an answer that broke the contract, a 502, a body holding `{{`, one larger
than a scenario file may hold) is not kept: its line for the file's leading comment is written as it arrives. What
the budget has no room for is dropped, counted, and said in health and in the file. A save builds the file off the
event loop (recorded_file.py) and forgets what it wrote only once the file is written: a failed save loses nothing.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from plantstub._budget import Budget, shown_bytes
from plantstub._json import BodyError, decode_json, inside, is_json, json_nesting
from plantstub._words import plural
from plantstub.incoming import IncomingRequest
from plantstub.proxy.recorded_file import FILE_VALUES, Document, Exchange, build, matchable
from plantstub.redaction import Redactor
from plantstub.scenarios.contract import ScenarioContract
from plantstub.scenarios.document import MAX_VALUES
from plantstub.scenarios.load import MAX_RULE_DEPTH

KIND = "recording"  # the memory budget's kind
MAX_EXCHANGES = 10_000  # kept between saves; beyond, each is dropped and counted
MAX_LEFT = 1_000  # left-out lines kept between saves; beyond, counted
EXCHANGE_BYTES = 400  # an exchange's own objects (its tuple, strings, the list's slot), about
BODY_DEPTH = MAX_RULE_DEPTH - 4  # a body's nesting a rule can hold (rule, reply(ies), [i], body)
RULE_VALUES = 20  # a rule's values besides its bodies (match, method, path, reply, status, headers...), about
_PLACEHOLDER = "{{"
_PLACEHOLDER_BYTES = (b"{{", b"\\u007b", b"\\u007B")  # `{` may come escaped in JSON


@dataclass
class Saved:
    """What one save wrote: the file (None: nothing was recorded since the last save), its rules, what was left out
    (with why) and the exchanges its rules answer."""

    file: Path | None
    rules: int = 0
    left_out: list[str] = field(default_factory=list)
    recorded: int = 0

    def answer(self) -> dict[str, Any]:
        """As `POST /__plantstub/record/save` answers."""
        return {"file": None if self.file is None else str(self.file), "rules": self.rules, "left_out": self.left_out}

    def said(self) -> str:
        """The line that says a save on stderr (serve at stop, verify --record)."""
        left = len(self.left_out)
        return (f"plantstub: recorded {plural(self.recorded, 'exchange')} in {plural(self.rules, 'rule')} to {self.file}"
                + (f"; {left} left out (listed in its leading comment)" if left else ""))


def _values(value: Any, most: int) -> int:
    """How many values a scenario file counts for `value` (itself and all inside), counted up to `most` + 1."""
    return sum(1 for _ in islice(inside(value), most + 1))


def _separators(raw: bytes) -> int:
    """At least as many as the values of JSON text `raw` (each but the first follows `,` or `:`, or opens a list)."""
    return raw.count(b",") + raw.count(b":") + raw.count(b"[") + 1


def _templated(value: Any) -> bool:
    """Whether a value holds `{{`, which a reply would read as a placeholder."""
    return any(isinstance(item, str) and _PLACEHOLDER in item for item in inside(value, keys=True))


def _request_body(incoming: IncomingRequest) -> Any:
    """The request's body when it is a JSON object (what a recorded rule matches on), else None."""
    if not incoming.raw or not is_json(incoming.headers.get("Content-Type")):
        return None
    try:
        value = decode_json(incoming.raw)
    except BodyError:
        return None
    return value if isinstance(value, dict) else None


def _query(query: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple((name, value) for name, values in query.items()
                 for value in (values if isinstance(values, list) else [values]))


class Recorder:
    """The exchanges of one session of a stub forwarding with --record, kept until a save writes them; each save
    writes the next `recorded-NNN.yaml` (`recorded-NAME-NNN.yaml` for session NAME) of the folder."""

    def __init__(self, folder: Path, source: str, memory: Budget, redact: bool = True, ignored: Sequence[str] = (),
                 name: str | None = None) -> None:
        self.folder = folder
        self.source = source
        self.memory = memory
        self.held = memory.holding(KIND)  # the kept exchanges' bytes and the left-out lines'
        self.redact = redact
        self.ignored = tuple(ignored)
        self.stem = "recorded" if name is None else f"recorded-{name}"
        self.kept: list[tuple[Exchange, int]] = []  # each with the bytes it holds of the budget
        self.left: list[str] = []
        self.left_more = 0  # left-out lines past MAX_LEFT since the last save
        self.dropped = 0  # exchanges dropped for lack of memory (or past MAX_EXCHANGES) since the last save
        self.saves = 0  # files written
        self.failure: str | None = None  # why the last save failed; None once one succeeds
        self.saving = False  # a save is being written (off the event loop)
        self._lock: asyncio.Lock | None = None

    # -- as exchanges arrive (on the event loop) ---------------------------------------------------------------
    def add(self, incoming: IncomingRequest, status: int, content_type: str | None, payload: bytes, answer: Any,
            problems: Sequence[str]) -> None:
        """An exchange forwarded and answered: kept, or (when it can never become a rule) listed as left out.
        `answer` is the body as the verdict parsed it; `problems`, how it broke the contract."""
        label = f"{incoming.method} {incoming.path} -> {status}"
        if problems:
            self._leave(label, [f"broke the contract: {problem}" for problem in problems], incoming, answer)
            return
        body = _request_body(incoming)
        raw = incoming.raw if body is not None else b""
        why = self._unfit(body, answer, payload, raw)
        if why is not None:
            self._leave(label, [why], incoming, answer)
            return
        query = _query(incoming.query)
        exchange = Exchange(incoming.method, incoming.path, query, raw, status, content_type if payload else None,
                            payload)
        size = (EXCHANGE_BYTES + len(raw) + len(payload) + len(incoming.path) + len(content_type or "")
                + sum(len(name) + len(value) for name, value in query))
        if not self.memory.fits(size):
            self._leave(label, [f"needs {shown_bytes(size)} of memory, more than the memory budget (--max-bytes) "
                                f"holds"], incoming, answer)
        elif len(self.kept) >= MAX_EXCHANGES or not self.held.take(size):
            self.dropped += 1
            self.held.lost(size)
        else:
            self.kept.append((exchange, size))

    def failed(self, incoming: IncomingRequest, message: str) -> None:
        """A forwarded request the service did not answer (a 502, a client that left): listed as left out."""
        self._leave(f"{incoming.method} {incoming.path} -> no answer", [message], incoming, None)

    def _unfit(self, body: Any, answer: Any, payload: bytes, raw: bytes) -> str | None:
        """Why an answer that kept the contract still cannot become a rule, or None. Counted from the bytes first
        (at C speed): only a body that may be too big or too deep is walked."""
        if any(mark in payload for mark in _PLACEHOLDER_BYTES) and _templated(
                Redactor().value(answer) if self.redact else answer):
            return "its body holds '{{', which a scenario reads as a placeholder"
        if max(json_nesting(raw), json_nesting(payload) if isinstance(answer, (dict, list)) else 0) > BODY_DEPTH:
            return f"nested more than {BODY_DEPTH} levels deep, more than a rule may hold"
        room = FILE_VALUES - RULE_VALUES
        if _separators(payload) + _separators(raw) > room:
            sent = _values(matchable(body, self.redact), room)
            if sent + _values(answer, room - sent) > room:
                return f"too large: more than {MAX_VALUES:,} values, more than a scenario file may hold"
        return None

    def _leave(self, label: str, reasons: list[str], incoming: IncomingRequest, answer: Any) -> None:
        """List an exchange as left out: its reasons without the request's query and, when redacting, without any
        value redacted from it."""
        redactor = Redactor()
        if self.redact:
            redactor.value(_request_body(incoming))
            redactor.value(answer)
            redactor.pairs(_query(incoming.query))
            redactor.mapping(incoming.headers)
        for reason in reasons:
            if len(self.left) >= MAX_LEFT:
                self.left_more += 1
                continue
            line = redactor.scrub(f"{label}: {reason}")
            if self.held.take(len(line)):
                self.left.append(line)
            else:
                self.left_more += 1

    # -- saving --------------------------------------------------------------------------------------------------
    async def save(self, contract: ScenarioContract) -> Saved:
        """Write what was recorded since the last save, built off the event loop; one save at a time.

        :raises OSError: the folder cannot be made or written (what was recorded is kept for the next save).
        """
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            taken = self._take()
            self.saving = True
            try:
                saved = await asyncio.to_thread(self._write, contract, *taken)
            except OSError as exc:
                self.failure = f"cannot write to {self.folder}: {exc.strerror or exc}"
                raise
            finally:
                self.saving = False
            self._forget(*taken)
            return saved

    def save_now(self, contract: ScenarioContract) -> Saved:
        """save(), on this thread (no event loop runs here: the stub stopped)."""
        taken = self._take()
        try:
            saved = self._write(contract, *taken)
        except OSError as exc:
            self.failure = f"cannot write to {self.folder}: {exc.strerror or exc}"
            raise
        self._forget(*taken)
        return saved

    async def save_at_end(self, contract: ScenarioContract) -> int:
        """The save when the stub stops or the session ends, said on stderr; the exchanges it could not write."""
        try:
            return self._said(await self.save(contract))
        except OSError:
            return self._said(None)

    def save_at_end_here(self, contract: ScenarioContract) -> int:
        """save_at_end(), on this thread (no event loop runs here)."""
        try:
            return self._said(self.save_now(contract))
        except OSError:
            return self._said(None)

    def _said(self, saved: Saved | None) -> int:
        """Say a save at the end on stderr (None: it failed); the exchanges not written (0 when it succeeded)."""
        if saved is None:
            lost = len(self.kept)
            print(f"plantstub: --record: {self.failure}; {plural(lost, 'recorded exchange')} not saved",
                  file=sys.stderr, flush=True)
            return max(lost, 1)
        if saved.file is not None:
            print(saved.said(), file=sys.stderr, flush=True)
        return 0

    def _take(self) -> tuple[list[Exchange], list[str], int, int]:
        return ([exchange for exchange, _ in self.kept], list(self.left), self.left_more, self.dropped)

    def _forget(self, exchanges: list[Exchange], left: list[str], left_more: int, dropped: int) -> None:
        """What a save wrote, let go (what came meanwhile stays for the next save)."""
        freed = sum(size for _, size in self.kept[:len(exchanges)]) + sum(map(len, left))
        del self.kept[:len(exchanges)]
        del self.left[:len(left)]
        self.held.give(freed)
        self.left_more -= left_more
        self.dropped -= dropped
        self.failure = None

    def _write(self, contract: ScenarioContract, exchanges: list[Exchange], left: list[str], left_more: int,
               dropped: int) -> Saved:
        """Build the file and write it (off the event loop); Saved(None) when there was nothing to write."""
        document: Document = build(exchanges, contract, self.redact, self.ignored)
        document.left_out[:0] = left
        if left_more:
            document.left_out.append(f"{plural(left_more, 'more line')} of what was left out, not "
                                     f"listed: over the {MAX_LEFT:,} one save lists; save more often (POST "
                                     "/__plantstub/record/save)")
        if dropped:
            document.left_out.append(f"{plural(dropped, 'exchange')} dropped: the memory budget "
                                     f"(--max-bytes) or the {MAX_EXCHANGES:,} exchanges one save keeps were full; "
                                     "save more often (POST /__plantstub/record/save)")
        if not exchanges and not document.left_out:
            return Saved(None)
        self.folder.mkdir(parents=True, exist_ok=True)
        pattern = re.compile(rf"{re.escape(self.stem)}-(\d+)\.yaml")
        number = 1 + max((int(m.group(1)) for p in self.folder.glob(f"{self.stem}-*.yaml")
                          if (m := pattern.fullmatch(p.name))), default=0)
        path = self.folder / f"{self.stem}-{number:03d}.yaml"
        partial = path.with_name(path.name + ".part")
        partial.write_text(document.text(self.source), encoding="utf-8")
        partial.replace(path)  # whole or not at all
        self.saves += 1
        return Saved(path, len(document.rules), document.left_out, document.recorded)

    # -- health --------------------------------------------------------------------------------------------------
    def figures(self) -> dict[str, Any]:
        """What health shows: exchanges kept (and their bytes), left out, dropped, files written, a failed save."""
        return {"kept": len(self.kept), "bytes": self.held.held, "left_out": len(self.left) + self.left_more,
                "dropped": self.dropped, "saved_files": self.saves, "saving": self.saving, "failure": self.failure}

    def problems(self) -> list[str]:
        """Why recorded exchanges are being lost or at risk, `where: what` each (empty when none are)."""
        found = []
        if self.dropped:
            found.append(f"record: {plural(self.dropped, 'exchange')} dropped since the last "
                         "save: the memory budget (--max-bytes) or the 10,000 exchanges one save keeps were full; save "
                         "(POST /__plantstub/record/save) to let the kept ones go")
        if self.failure is not None:
            kept = len(self.kept)
            found.append(f"record: the last save failed: {self.failure}; {plural(kept, 'exchange')} "
                         f"{'is' if kept == 1 else 'are'} kept until a save succeeds")
        return found
