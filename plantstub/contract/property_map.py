"""The property map of a spec's shared validator: which schema is checked by which property of it.

Made by walking every `$defs` entry and place once (`PropertyMap.of`, a few tenths of a second for a 20 MB spec),
it depends on the bundled schemas alone, so the spec cache keeps it beside them (`to_json` / `from_json`): a
start from the cache only looks its entries up again, pointer by pointer. contract/shared.py compiles it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from plantstub._memo import IdentityMemo
from plantstub.contract.pattern import servable
from plantstub.contract.schema import SCHEMA_LISTS, SCHEMA_MAPS, SCHEMA_ONE, subschemas

# Keywords whose meaning depends on where the schema stands (its resource, the dynamic scope): a place that
# holds one is compiled alone, where it always was.
_PLACE_BOUND = frozenset(("$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveRef", "$recursiveAnchor", "$id"))
_MAPS = frozenset(SCHEMA_MAPS) - {"$defs"}  # a schema's own `$defs` are targets under their own keys already
_ONE, _LISTS = frozenset(SCHEMA_ONE), frozenset(SCHEMA_LISTS)
_PLAIN = re.compile(r"[A-Za-z0-9_.$@:-]*\Z")  # a pointer step that needs no escaping
_PLAIN_POINTER = re.compile(r"[A-Za-z0-9_.$@:/#-]*\Z")
_TOKENS: dict[str, str] = {}


def _token(step: object) -> str:
    """One step of a JSON pointer in a URI fragment (`~` and `/` escaped, then percent-encoded)."""
    text = str(step)
    token = _TOKENS.get(text)
    if token is None:
        token = text if _PLAIN.match(text) else quote(text.replace("~", "~0").replace("/", "~1"), safe="")
        if len(_TOKENS) < 100_000:
            _TOKENS[text] = token
    return token


def _steps(pointer: str) -> list[str]:
    """The steps of a URI-fragment JSON pointer (`#/a/b`), unescaped."""
    steps = pointer.split("/")[1:]
    if _PLAIN_POINTER.match(pointer):
        return steps
    return [unquote(step).replace("~1", "/").replace("~0", "~") for step in steps]


@dataclass(eq=False)
class PropertyMap:
    """The shared validator's properties over one `$defs` mapping: `core` (each `$defs` entry a property, each place
    another) compiled at start, `pointers` (every other subschema with a `$ref` in it, as a JSON pointer into the
    document) compiled when one is first asked for. `names`: schema object -> the property checking it.
    `hopeless`: the schemas holding or reaching a pattern jsonschema-rs refuses. No `defs`: nothing is shared."""

    defs: dict[str, object] | None = None
    core: dict[str, object] = field(default_factory=dict)
    pointers: dict[str, object] = field(default_factory=dict)
    names: IdentityMemo[str] = field(default_factory=IdentityMemo)
    hopeless: IdentityMemo[bool] = field(default_factory=IdentityMemo)
    # What to_json() writes: each `$defs` key's property, each place's (object, property), and (pointer, property)
    # for every other schema named (a bare `$ref` is checked as its target's property); None: not to be kept.
    by_key: dict[str, str] = field(default_factory=dict)
    places: list[tuple[dict[str, object], str]] = field(default_factory=list)
    located: list[tuple[str, str]] | None = field(default_factory=list)
    pending: bool = False  # `located` is not looked up yet (read from the cache)

    @staticmethod
    def of(roots: list[object]) -> PropertyMap:
        """Walk the places `roots` (bundled schemas holding one `$defs` mapping) and their `$defs`."""
        found = PropertyMap()
        unique = list({id(r): r for r in roots if isinstance(r, dict)}.values())
        defs = next((r["$defs"] for r in unique if isinstance(r.get("$defs"), dict)), None)
        if not isinstance(defs, dict):
            return found
        found.defs = defs
        walks = {key: _Walk(node, f"#/$defs/{_token(key)}") for key, node in defs.items()}
        refused, hopeless = _refused(walks), _refused(walks, "hopeless")
        for key in hopeless:
            _mark(defs[key], hopeless, found.hopeless)
        for key, node in defs.items():
            if key not in refused:
                found.by_key[key] = found.add(found.core, node, {"$ref": walks[key].pointer})
        fit = [walks[key] for key in defs if key not in refused]
        for root in unique:
            if root.get("$defs") is not defs:
                continue
            body = {k: v for k, v in root.items() if k != "$defs"}
            walk = _Walk(body, f"#/properties/{len(found.core)}")
            if not walk.unfit and not walk.refs() & refused:
                found.places.append((root, found.add(found.core, root, body)))
                fit.append(walk)
            elif walk.hopeless or walk.refs() & hopeless:
                _mark(root, hopeless, found.hopeless)
        located = found.located = []
        for walk in fit:
            for sub, pointer in walk.found:
                ref = sub.get("$ref")
                if len(sub) == 1 and isinstance(ref, str) and ref[8:] in found.by_key:
                    name = found.names.put(sub, found.by_key[ref[8:]])  # a bare `$ref`: checked as its target
                else:
                    named = found.names.get(sub)
                    name = found.add(found.pointers, sub, {"$ref": pointer}) if named is None else named
                located.append((pointer, name))  # every place it stands: each becomes an object of its own in JSON
        if len(found.hopeless):
            found.located = None  # kept as objects only (rare: a pattern jsonschema-rs refuses): walked again
        return found

    def add(self, into: dict[str, object], node: object, entry: object) -> str:
        name = str(len(self.core) + len(self.pointers))
        into[name] = entry
        self.names.put(node, name)
        return name

    def is_pointer(self, name: str) -> bool:
        return name in self.pointers

    def pointed_places(self) -> list[str]:
        """The places (their properties) a pointer leads into: `#/properties/N/...`."""
        return list(dict.fromkeys(entry["$ref"].split("/", 3)[2] for entry in self.pointers.values()
                                  if isinstance(entry, dict) and entry["$ref"].startswith("#/properties/")))

    # -- kept in the spec cache --------------------------------------------------------------------------------
    def to_json(self, index: Callable[[dict[str, object]], int | bool | None]) -> object:
        """JSON-typed data for from_json(); `index` names a place as spec_json wrote it. None when the map cannot be
        kept (it is walked again from the schemas read back)."""
        if self.defs is None:
            return []
        if self.located is None or not self.places:  # (no place shared: its `$defs` are found through none)
            return None
        return [self.by_key, [[index(root), name] for root, name in self.places], [list(at) for at in self.located]]

    @staticmethod
    def from_json(data: Any, schemas: list[dict[str, object]]) -> PropertyMap:
        """The map to_json() wrote for the places `schemas` (spec_json's, read back); KeyError, IndexError, TypeError
        or ValueError for anything it did not write."""
        found = PropertyMap()
        if data == []:
            return found
        by_key: dict[str, str]
        places: list[list[Any]]
        by_key, places, located = data
        root_of = {name: schemas[at] for at, name in places if type(at) is int}
        defs = next(iter(root_of.values()))["$defs"] if root_of else None
        if not isinstance(defs, dict):
            raise ValueError("a property map without `$defs`")
        found.defs = defs
        for key, name in by_key.items():
            found.core[name] = {"$ref": f"#/$defs/{_token(key)}"}
            found.names.put(defs[key], name)
        for name, root in root_of.items():
            if root.get("$defs") is not defs:
                raise ValueError("a place with other `$defs`")
            found.core[name] = {k: v for k, v in root.items() if k != "$defs"}
            found.names.put(root, name)
        if not isinstance(located, list):
            raise ValueError("no list of pointers")
        found.by_key = by_key
        found.places = [(root, name) for name, root in root_of.items()]
        found.located = located
        found.pending = True  # looked up when a schema that is no place nor `$defs` entry is first asked for
        return found

    def name(self, schema: object) -> str | None:
        """The property that checks `schema` (that very object), or None."""
        name = self.names.get(schema)
        if name is None and self.pending:
            self.locate()
            name = self.names.get(schema)
        return name

    def locate(self) -> None:
        """Name the schemas the pointers read back lead to (what from_json() left for the first use)."""
        self.pending = False
        defs, root_of = self.defs or {}, {name: root for root, name in self.places}
        found: list[tuple[object, str]] = []
        pointers: dict[str, object] = {}
        try:
            for pointer, name in self.located or ():
                steps = _steps(pointer)
                node: object = defs[steps[1]] if steps[0] == "$defs" else root_of[steps[1]]
                for step in steps[2:]:
                    node = node[int(step)] if isinstance(node, list) else node[step]  # type: ignore[index]
                if not isinstance(node, dict) or not isinstance(name, str):
                    raise ValueError("a pointer to something that is not a schema")
                found.append((node, name))
                if name not in self.core:
                    pointers.setdefault(name, {"$ref": pointer})
        except (KeyError, IndexError, TypeError, ValueError):  # not as written (the entry's hash matched: a bug)
            return  # the places and `$defs` entries stay shared; any other schema is compiled alone
        for node, name in found:
            self.names.put(node, name)
        self.pointers = pointers


class _Walk:
    """One pass over a schema: its subschemas with a `$ref` in them (with their JSON pointers), and whether it
    holds anything the shared validator must not (`unfit`)."""

    def __init__(self, node: object, pointer: str) -> None:
        self.node, self.pointer = node, pointer
        self.found: list[tuple[dict[str, object], str]] = []
        self.unfit = False
        self.hopeless = False  # it holds a pattern jsonschema-rs refuses: no validator of it can be compiled
        if isinstance(node, dict):
            self._visit(node, pointer)

    def _visit(self, node: dict[str, object], at: str) -> bool:
        has = "$ref" in node
        if ("pattern" in node or "patternProperties" in node) and not _patterns_run(node):
            self.unfit = self.hopeless = True
        elif not _PLACE_BOUND.isdisjoint(node):
            self.unfit = True
        for key, value in node.items():
            if key in _ONE:
                if isinstance(value, dict) and self._visit(value, here := f"{at}/{key}"):
                    has = True
                    self.found.append((value, here))
            elif key in _MAPS and isinstance(value, dict):
                for name, sub in value.items():
                    if isinstance(sub, dict) and self._visit(sub, here := f"{at}/{key}/{_token(name)}"):
                        has = True
                        self.found.append((sub, here))
            elif key in _LISTS and isinstance(value, list):
                for i, sub in enumerate(value):
                    if isinstance(sub, dict) and self._visit(sub, here := f"{at}/{key}/{i}"):
                        has = True
                        self.found.append((sub, here))
        return has

    def refs(self) -> set[str]:
        """The `$defs` keys it refers to, itself and below."""
        nodes = [sub for sub, _ in self.found]
        if isinstance(self.node, dict):
            nodes.append(self.node)
        return {ref[8:] for sub in nodes if isinstance(ref := sub.get("$ref"), str)}


def _refused(walks: dict[str, _Walk], attribute: str = "unfit") -> set[str]:
    """The `$defs` keys whose schema is unfit (or hopeless), or reaches one that is through `$ref`s."""
    unfit = {key for key, walk in walks.items() if getattr(walk, attribute)}
    if not unfit:
        return set()
    users: dict[str, set[str]] = {}
    for key, walk in walks.items():
        for target in walk.refs():
            users.setdefault(target, set()).add(key)
    refused, todo = set(unfit), list(unfit)
    while todo:
        for user in users.get(todo.pop(), ()):
            if user not in refused:
                refused.add(user)
                todo.append(user)
    return refused


def _mark(node: object, hopeless: set[str], into: IdentityMemo[bool]) -> bool:
    """Put in `into` every schema in `node` (itself included) that holds or reaches a pattern jsonschema-rs
    refuses (reaching: a `$ref` to a `hopeless` key); whether `node` does."""
    if not isinstance(node, dict):
        return False
    ref = node.get("$ref")
    bad = (isinstance(ref, str) and ref[8:] in hopeless) or (
        ("pattern" in node or "patternProperties" in node) and not _patterns_run(node))
    for sub in subschemas(node):
        bad = _mark(sub, hopeless, into) or bad
    if bad:
        into.put(node, True)
    return bad


def _patterns_run(node: dict[str, object]) -> bool:
    """Whether jsonschema-rs compiles the node's `pattern` and `patternProperties`."""
    patterns = [pattern] if isinstance(pattern := node.get("pattern"), str) else []
    if isinstance(named := node.get("patternProperties"), dict):
        patterns += [str(p) for p in named]
    return all(servable(pattern) for pattern in patterns)  # load_spec asked already (contract/pattern.py)
