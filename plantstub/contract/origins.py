"""Where a converted document's places were written: each location of a Swagger 2.0 document's OpenAPI 3
conversion mapped back to the location it came from, and the line of that location in the file the user wrote.

The loader words its messages in the converted document's locations (`paths./pets.post.requestBody.content.
application/json.schema`); `Origins.placed()` rewrites them to the 2.0 document's own (`paths./pets.post.
parameters[0].schema`) and puts `FILE:LINE:` first. Lines are found only when there is something to say: the file
is read again then, and its YAML events (or JSON tokens) walked once for every location asked about.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path

import yaml
from yaml import events

from plantstub._yaml import decode_text, read_bytes
from plantstub._yaml_events import _SAFE_BASE

Steps = tuple[str | int, ...]  # a location as the keys and indexes leading to it: ("paths", "/pets", "get")

# A location the loader writes: it starts with one of the document's top-level fields and runs to a space.
_LOCATION = re.compile(r"(?<![\w./\[])(?:paths|components|security)(?:[.\[][^\s]*)?")
_STEP = re.compile(r"\[(\d+)\]|\.([^.\[]*)")
_TRAILING = ":,;)'\""
_LONGEST = 2_000  # characters of a location looked up in the map (the loader cuts what it quotes far shorter)
_INSIDE = re.compile(r": not valid JSON Schema \([^)]*\) at ((?!\$defs)[^\s:]+)")


def shown_at(steps: Steps) -> str:
    """`("paths", "/pets", "post", "parameters", 0)` -> `paths./pets.post.parameters[0]`, as the loader writes it."""
    out = ""
    for step in steps:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out


def _steps(rest: str) -> Steps:
    """`.properties.name[0]` -> ("properties", "name", 0)."""
    return tuple(int(index) if index else key for index, key in _STEP.findall(rest))


class Origins:
    """The converted locations of one Swagger 2.0 document and where each was written; its file, to find lines."""

    def __init__(self, file: Path, shown: str) -> None:
        self.file = file
        self.shown = shown
        self.places: dict[str, Steps] = {}  # converted location -> the 2.0 location it came from
        self.pending: list[Callable[[], None]] = []  # what fills `places`, run when a message is first placed

    def map(self, converted: str, original: Steps) -> None:
        """`converted` (and every location inside it, unless mapped itself) was written at `original`."""
        self.places[converted] = original

    def later(self, marks: Callable[[], None]) -> None:
        """`marks()` calls map(); it runs only if some message is to be placed (most loads have none)."""
        self.pending.append(marks)

    def original(self, message: str) -> tuple[str, Steps | None]:
        """`message` with each converted location in it replaced by the 2.0 location it came from, and the first
        location it names (None: none)."""
        for marks in self.pending:
            marks()
        self.pending.clear()
        first: Steps | None = None
        out: list[str] = []
        at = 0
        for match in _LOCATION.finditer(message):
            token = match.group().rstrip(_TRAILING)
            cut = len(token) if len(token) <= _LONGEST else 0  # a hostile key's length: not looked up step by step
            while cut > 0 and token[:cut] not in self.places:
                cut = max(token.rfind(".", 0, cut), token.rfind("[", 0, cut))
            if cut > 0:
                steps = self.places[token[:cut]] + _steps(token[cut:])
                written = shown_at(self.places[token[:cut]]) + token[cut:]
            else:  # a location the conversion kept as it was (`paths./pets.get.responses.200`)
                steps, written = _steps("." + token), token
            if first is None:
                inside = _INSIDE.match(message, match.start() + len(token))  # the keyword refused, inside that schema
                first = steps if inside is None else steps + _steps("." + inside.group(1))
            out += [message[at:match.start()], written]
            at = match.start() + len(token)
        out.append(message[at:])
        return "".join(out), first

    def placed(self, messages: Iterable[str | tuple[str, Steps]]) -> list[str]:
        """Each message as `FILE:LINE: message` in the 2.0 document's terms: a text in the converted document's
        locations is rewritten, a (text, location) pair is the converter's own, already in the 2.0 document's."""
        worded: list[tuple[str, Steps | None]] = [
            self.original(m) if isinstance(m, str) else m for m in messages
        ]
        wanted = {steps for _, steps in worded if steps is not None}
        lines = self.lines(wanted) if wanted else {}
        return [f"{self.shown}:{lines[steps]}: {text}" if steps in lines else text for text, steps in worded]

    def lines(self, wanted: set[Steps]) -> dict[Steps, int]:
        """The line of each wanted location: where its deepest step that the file holds is written."""
        try:
            text = decode_text(read_bytes(self.file, self.shown), self.shown)
        except ValueError:
            return {}  # gone or changed since it was read: the messages keep their locations, without lines
        try:
            found = _json_lines(text, _Wanted(wanted)) if self.shown.endswith(".json") else \
                _yaml_lines(text, _Wanted(wanted))
        except yaml.YAMLError:
            found = _json_lines(text, _Wanted(wanted))  # JSON that YAML refuses (tabs): read as the loader read it
        out = {}
        for steps in wanted:
            depth = len(steps)
            while depth > 0 and steps[:depth] not in found:
                depth -= 1
            if depth > 0:
                out[steps] = found[steps[:depth]]
        return out


class _Wanted:
    """The locations asked about while a document is walked: the line of each of their prefixes met, and whether
    the walk may stop (every location settled: the collection holding it has ended)."""

    def __init__(self, wanted: set[Steps]) -> None:
        self.prefixes = {steps[:n] for steps in wanted for n in range(len(steps) + 1)}
        self.under: dict[Steps, list[Steps]] = {}  # a proper prefix -> the locations inside it
        for steps in wanted:
            for n in range(len(steps)):
                self.under.setdefault(steps[:n], []).append(steps)
        self.left = set(wanted)
        self.found: dict[Steps, int] = {}

    def note(self, steps: Steps | None, line: int) -> None:
        if steps is not None and steps in self.prefixes and steps not in self.found:
            self.found[steps] = line

    def ended(self, steps: Steps | None) -> bool:
        """A collection at `steps` ended: True when nothing asked about is left to find."""
        if steps is not None and steps in self.under:
            self.left.difference_update(self.under[steps])
        return not self.left


class _Frame:
    """An open mapping or sequence while a document is walked: its location, and where in it the walk is."""

    __slots__ = ("index", "key", "key_next", "mapping", "steps")

    def __init__(self, steps: Steps | None, mapping: bool) -> None:
        self.steps = steps  # None: inside a key that is itself a collection (no location)
        self.mapping = mapping
        self.key_next = True
        self.key: str | None = None
        self.index = 0

    def child(self) -> Steps | None:
        """The location of the next value in this collection."""
        if self.steps is None:
            return None
        if self.mapping:
            self.key_next = True
            return None if self.key is None else (*self.steps, self.key)
        self.index += 1
        return (*self.steps, self.index - 1)


_NODES = (events.ScalarEvent, events.AliasEvent, events.MappingStartEvent, events.SequenceStartEvent)


def _yaml_lines(text: str, wanted: _Wanted) -> dict[Steps, int]:
    """The line of each prefix of what is wanted that the YAML text holds: of a mapping's key, or a sequence's item."""
    stack: list[_Frame] = []
    parser = _SAFE_BASE(text)
    try:
        while (event := parser.get_event()) is not None:
            if isinstance(event, (events.MappingEndEvent, events.SequenceEndEvent)):
                if wanted.ended(stack.pop().steps):
                    break
                continue
            if not isinstance(event, _NODES):
                continue
            steps: Steps | None = ()
            if stack:
                top = stack[-1]
                if top.mapping and top.key_next:  # a key
                    top.key_next = False
                    top.key = event.value if isinstance(event, events.ScalarEvent) else None
                    if top.steps is not None and top.key is not None:
                        wanted.note((*top.steps, top.key), _line(event))
                    if isinstance(event, (events.MappingStartEvent, events.SequenceStartEvent)):
                        stack.append(_Frame(None, isinstance(event, events.MappingStartEvent)))
                    continue
                steps = top.child()
                if not top.mapping:
                    wanted.note(steps, _line(event))
            if isinstance(event, (events.MappingStartEvent, events.SequenceStartEvent)):
                stack.append(_Frame(steps, isinstance(event, events.MappingStartEvent)))
    finally:
        parser.dispose()
    return wanted.found


def _line(event: events.Event) -> int:
    return event.start_mark.line + 1 if event.start_mark is not None else 0


_JSON_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')


def _json_lines(text: str, wanted: _Wanted) -> dict[Steps, int]:
    """_yaml_lines() for JSON text, walked token by token."""
    stack: list[_Frame] = []
    line, last = 1, 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        if first in ":,":
            continue
        line += text.count("\n", last, match.start())
        last = match.start()
        if first in "}]":
            if stack and wanted.ended(stack.pop().steps):
                break
            continue
        steps: Steps | None = ()
        if stack:
            top = stack[-1]
            if top.mapping and top.key_next:
                top.key_next = False
                try:
                    top.key = json.loads(token) if first == '"' else token
                except ValueError:
                    top.key = None
                if top.steps is not None and top.key is not None:
                    wanted.note((*top.steps, top.key), line)
                continue
            steps = top.child()
            if not top.mapping:
                wanted.note(steps, line)
        if first in "{[":
            stack.append(_Frame(steps, first == "{"))
    return wanted.found
