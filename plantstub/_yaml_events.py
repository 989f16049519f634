"""A YAML document's events walked once, at C speed where it can be: its limits (depth, aliases) counted before
anything composes it, and a spec's value built straight from the events (_yaml.py wraps both)."""

from __future__ import annotations

import json
import sys
from collections.abc import Container
from typing import TYPE_CHECKING, Any, Final

import yaml
from yaml import events

from plantstub._json import MAX_ALIASED, MAX_DEPTH, TOO_DEEP, DocumentLimit

# libyaml's parser when PyYAML has it (about 9x faster: start-up time), the pure-Python one otherwise. Type checks
# read it as SafeLoader: both are a safe constructor and resolver over a parser of the same events.
if TYPE_CHECKING:
    _SAFE_BASE = yaml.SafeLoader
else:
    _SAFE_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_SCALAR = events.ScalarEvent
_OPENING = frozenset({events.SequenceStartEvent, events.MappingStartEvent})
_CLOSING = frozenset({events.SequenceEndEvent, events.MappingEndEvent})


def check_yaml_shape(text: str, max_values: int | None = None) -> None:
    """Refuse YAML nested deeper than MAX_DEPTH, whose aliases add more than MAX_ALIASED values, or that holds more
    than `max_values` values (None: no such limit; a value is each list item and each mapping value, keys are not,
    and an alias counts what it stands for).

    Walks the parser's events (libyaml parses without recursion) before anything composes the document,
    and counts what each alias stands for, so a "billion laughs" is refused once its aliases add up past
    the limit, in microseconds. Raises DocumentLimit; a syntax error raises as the loader's would (the
    same parser finds it). Costs about a fifth of loading: 0.4 ms for the bundled spec.
    """
    parser = _SAFE_BASE(text)
    # open collections: [anchor, nodes before it, keys before it, deepest level inside, whether it is a mapping]
    stack: list[list[Any]] = []
    anchors: dict[str, tuple[int, int, int]] = {}  # anchor -> (nodes, levels, keys) it stands for
    count = aliased = keys = 0  # nodes (keys included) and the keys among them
    most = sys.maxsize if max_values is None else max_values
    mapping = keyed = False  # the current collection is a mapping; its next node is a key
    try:
        while (event := parser.get_event()) is not None:
            kind = type(event)
            if kind is _SCALAR:
                count += 1
                if keyed:
                    keys += 1
                    keyed = False
                    if event.anchor is not None:
                        anchors[event.anchor] = (1, 0, 1)
                    continue
                keyed = mapping
                if event.anchor is not None:
                    anchors[event.anchor] = (1, 0, 0)
            elif kind in _OPENING:
                count += 1
                stack.append([event.anchor, count, keys, len(stack) + 1, mapping])
                if len(stack) > MAX_DEPTH:
                    raise DocumentLimit(event.start_mark.line + 1, TOO_DEEP)
                mapping = keyed = kind is events.MappingStartEvent
            elif kind in _CLOSING:
                anchor, before, keys_before, deepest, mapping = stack.pop()
                keyed = mapping
                if anchor is not None:
                    anchors[anchor] = (count - before + 1, deepest - len(stack), keys - keys_before)
                if stack and stack[-1][3] < deepest:
                    stack[-1][3] = deepest
                continue
            elif kind is events.AliasEvent:
                line, name = event.start_mark.line + 1, event.anchor
                keyed = False if keyed else mapping
                if name not in anchors:
                    if any(frame[0] == name for frame in stack):
                        raise _alias_loop(line)
                    continue  # an undefined alias: the loader says so
                values, levels, inner_keys = anchors[name]
                count += values
                keys += inner_keys
                aliased += values
                reach = len(stack) + levels
                _check_alias(line, aliased, reach)
                if stack and stack[-1][3] < reach:
                    stack[-1][3] = reach
            elif kind is events.DocumentStartEvent:
                anchors = {}  # anchors belong to one document
                continue
            else:
                continue
            if count - keys > most:
                raise DocumentLimit(event.start_mark.line + 1, _too_many(most, aliased))
    finally:
        parser.dispose()


def _too_many(max_values: int, aliased: int) -> str:
    expanded = ", aliases expanded" if aliased else ""
    return (f"too large: more than the {max_values:,} values plantstub reads in one file (each list item and mapping "
            f"value counts{expanded}); split it into several files")


def _alias_loop(line: int) -> DocumentLimit:
    return DocumentLimit(line, "an alias inside the anchored value it stands for: a loop, which JSON data cannot hold")


def _check_alias(line: int, aliased: int, reach: int) -> None:
    """Refuse an alias that takes the document past a limit: `aliased` values expanded so far, `reach` levels."""
    if aliased > MAX_ALIASED:
        raise DocumentLimit(line, f"aliases expand to more than the {MAX_ALIASED:,} values plantstub reads")
    if reach > MAX_DEPTH:
        raise DocumentLimit(line, f"{TOO_DEEP} once an alias is expanded")


class _Unusual(Exception):
    """What read_events() leaves to JsonSafeLoader: a tag, a merge key, a complex or duplicate key, a redefined
    or undefined anchor, several documents, a syntax error (its words come from the full loader)."""


_STR = "tag:yaml.org,2002:str"


def read_events(text: str | bytes, loader_class: type[_SAFE_BASE]) -> object:
    """The value `loader_class` (_yaml.JsonSafeLoader) reads from `text` (or a file's UTF-8 bytes), built straight
    from libyaml's events, with no node tree (a 10 MB spec took 18 s and gigabytes to compose; this takes a quarter of the time). The limits of
    check_yaml_shape() raise DocumentLimit; anything else out of the ordinary _Unusual (read with the loader then)."""
    parser = _SAFE_BASE(text)
    build = _Build(loader_class)
    # The current collection is `into` (None: the document itself), with `key` (a mapping's key waiting for its
    # value); `count` values so far. Locals, not attributes: this loop runs two million times for a 20 MB document.
    into: _Collection | None = None
    key: object = _NO_KEY
    count = 0
    get_event, scalar_event, opening, closing, no_key = parser.get_event, _SCALAR, _OPENING, _CLOSING, _NO_KEY
    plain, typed = build.plain, build.typed
    try:
        while (event := get_event()) is not None:
            kind = type(event)
            if kind is scalar_event:
                count += 1
                value = event.value
                if event.tag is not None:
                    raise _Unusual
                if event.implicit[0]:  # plain: typed by the core schema; quoted: text
                    known = plain.get(value, no_key)
                    value = typed(value) if known is no_key else known
                if event.anchor is not None:
                    build.anchor(event.anchor, value)
            elif kind in opening:
                count += 1
                into, key = build.open(event, into, key, count)
                continue
            elif kind in closing:
                value, into, key = build.close(into, count)
            elif kind is events.AliasEvent:
                value, values = build.alias(event)
                count += values
            else:
                build.other(kind)
                continue
            # Put the value in the current collection: in a mapping, a scalar as its key first.
            if type(into) is dict:
                if key is not no_key:
                    into[key] = value
                    key = no_key
                elif kind is not scalar_event or value in into or value != value:  # a key met again; NaN
                    raise _Unusual  # JsonSafeLoader says why, or reads a collection or an alias as a key
                else:
                    key = value
            elif type(into) is list:
                into.append(value)
            else:
                build.result = value
    except yaml.YAMLError:
        raise _Unusual from None
    finally:
        parser.dispose()
    return build.result


class _Build:
    """What read_events() keeps besides the current collection: the open ones around it, anchors, counts."""

    def __init__(self, loader_class: type[_SAFE_BASE]) -> None:
        self.resolvers = loader_class.yaml_implicit_resolvers
        self.loader = loader_class("")  # builds ints, floats, booleans and nulls with its own constructors
        # plain scalar -> its value (a document repeats its words: each is read once, and kept once in memory)
        self.plain: dict[str, object] = {}
        # The open collections around the current one: [collection, its pending key, anchor, values before it,
        # deepest level inside].
        self.stack: list[list[Any]] = []
        self.anchors: dict[str, tuple[object, int, int]] = {}  # anchor -> (value, values it stands for, levels)
        self.aliased = self.documents = 0
        self.result: object = None

    def typed(self, value: str) -> object:
        """A plain scalar's value, by the core schema's resolvers (remembered)."""
        tag = next((t for t, regexp in self.resolvers.get(value[:1], []) if regexp.match(value)), _STR)
        known = self.plain[value] = value if tag is _STR else _typed(self.loader, tag, value)
        return known

    def anchor(self, anchor: str, value: object) -> None:
        _define(anchor, self.anchors, self.stack)
        self.anchors[anchor] = (value, 1, 0)

    def open(self, event: events.CollectionStartEvent, into: _Collection | None, key: object,
             count: int) -> tuple[_Collection, object]:
        """A collection starts inside `into`: the new current one, with no key yet."""
        if event.tag is not None:
            raise _Unusual
        if event.anchor is not None:
            _define(event.anchor, self.anchors, self.stack)
        self.stack.append([into, key, event.anchor, count, len(self.stack) + 1])
        if len(self.stack) > MAX_DEPTH:
            raise DocumentLimit(_line(event), TOO_DEEP)
        return ([] if type(event) is events.SequenceStartEvent else {}), _NO_KEY

    def close(self, value: _Collection | None, count: int) -> tuple[object, _Collection | None, object]:
        """The current collection ends: its value (keys as text), and the collection around it with its key."""
        into, key, anchor, before, deepest = self.stack.pop()
        if type(value) is dict and not all(type(k) is str for k in value):
            value = {k if isinstance(k, str) else json.dumps(k): v for k, v in value.items()}
        if anchor is not None:
            self.anchors[anchor] = (value, count - before + 1, deepest - len(self.stack))
        if self.stack and self.stack[-1][4] < deepest:
            self.stack[-1][4] = deepest
        return value, into, key

    def alias(self, event: events.AliasEvent) -> tuple[object, int]:
        """The value an alias stands for, and how many values it adds; DocumentLimit past a limit."""
        line, name = _line(event), event.anchor
        if name not in self.anchors:
            if any(frame[2] == name for frame in self.stack):
                raise _alias_loop(line)
            raise _Unusual
        value, values, levels = self.anchors[name]
        self.aliased += values
        reach = len(self.stack) + levels
        _check_alias(line, self.aliased, reach)
        if self.stack and self.stack[-1][4] < reach:
            self.stack[-1][4] = reach
        return value, values

    def other(self, kind: type) -> None:
        """A stream's or document's start or end: a second document is left to JsonSafeLoader."""
        if kind is events.DocumentStartEvent:
            self.documents += 1
            if self.documents > 1:
                raise _Unusual


def _line(event: events.Event) -> int:
    """The line an event starts on, counted from 1 (the parser marks every event)."""
    return 0 if event.start_mark is None else event.start_mark.line + 1


def _typed(loader: _SAFE_BASE, tag: str, value: str) -> object:
    if tag.endswith(":merge"):
        raise _Unusual
    try:
        return loader.yaml_constructors[tag](loader, yaml.ScalarNode(tag, value))
    except yaml.YAMLError:
        raise _Unusual from None


def _define(anchor: str, anchors: Container[str], stack: list[list[Any]]) -> None:
    """JsonSafeLoader refuses an anchor defined twice in a document, in its own words."""
    if anchor in anchors or any(frame[2] == anchor for frame in stack):
        raise _Unusual




_NO_KEY: Final = object()  # a mapping waiting for its next key
# A collection being filled: a mapping (its keys as read, made text when it closes) or a sequence.
_Collection = dict[object, object] | list[object]
