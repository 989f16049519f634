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
from collections.abc import Iterable
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

    def map(self, converted: str, original: Steps) -> None:
        """`converted` (and every location inside it, unless mapped itself) was written at `original`."""
        self.places[converted] = original

    def original(self, message: str) -> tuple[str, Steps | None]:
        """`message` with each converted location in it replaced by the 2.0 location it came from, and the first
        location it names (None: none)."""
        first: Steps | None = None
        out: list[str] = []
        at = 0
        for match in _LOCATION.finditer(message):
            token = match.group().rstrip(_TRAILING)
            cut = len(token)
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
        prefixes = {steps[:n] for steps in wanted for n in range(len(steps) + 1)}
        try:
            found = _json_lines(text, prefixes) if self.shown.endswith(".json") else _yaml_lines(text, prefixes)
        except yaml.YAMLError:
            found = _json_lines(text, prefixes)  # JSON that YAML refuses (tabs): read as the loader read it
        out = {}
        for steps in wanted:
            depth = len(steps)
            while depth > 0 and steps[:depth] not in found:
                depth -= 1
            if depth > 0:
                out[steps] = found[steps[:depth]]
        return out


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


def _yaml_lines(text: str, prefixes: set[Steps]) -> dict[Steps, int]:
    """The line of each of `prefixes` the YAML text holds: of a mapping's key, or of a sequence's item."""
    found: dict[Steps, int] = {}
    stack: list[_Frame] = []
    parser = _SAFE_BASE(text)
    try:
        while (event := parser.get_event()) is not None:
            if isinstance(event, (events.MappingEndEvent, events.SequenceEndEvent)):
                stack.pop()
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
                        _note(found, prefixes, (*top.steps, top.key), event)
                    if isinstance(event, (events.MappingStartEvent, events.SequenceStartEvent)):
                        stack.append(_Frame(None, isinstance(event, events.MappingStartEvent)))
                    continue
                steps = top.child()
                if steps is not None and not top.mapping:
                    _note(found, prefixes, steps, event)
            if isinstance(event, (events.MappingStartEvent, events.SequenceStartEvent)):
                stack.append(_Frame(steps, isinstance(event, events.MappingStartEvent)))
    finally:
        parser.dispose()
    return found


def _note(found: dict[Steps, int], prefixes: set[Steps], steps: Steps, event: events.Event) -> None:
    if steps in prefixes and steps not in found:
        found[steps] = event.start_mark.line + 1 if event.start_mark is not None else 0


_JSON_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')


def _json_lines(text: str, prefixes: set[Steps]) -> dict[Steps, int]:
    """_yaml_lines() for JSON text, walked token by token."""
    found: dict[Steps, int] = {}
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
            if stack:
                stack.pop()
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
                    steps = (*top.steps, top.key)
                    if steps in prefixes and steps not in found:
                        found[steps] = line
                continue
            steps = top.child()
            if steps is not None and not top.mapping and steps in prefixes and steps not in found:
                found[steps] = line
        if first in "{[":
            stack.append(_Frame(steps, first == "{"))
    return found
