"""The property map of a spec's shared validator: which schema is checked by which property of it.

Made by walking every `$defs` entry and place once (`PropertyMap.of`, a few tenths of a second for a 20 MB spec),
it depends on the bundled schemas alone, so the spec cache keeps what a start needs of it beside them (`to_json` /
`from_json`: which property checks each place and each `$defs` entry); the rest is walked when first needed.
contract/shared.py compiles it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from plantstub._json import inside
from plantstub._memo import IdentityMemo
from plantstub.contract.flatten import def_key
from plantstub.contract.pattern import servable
from plantstub.contract.schema import SCHEMA_LISTS, SCHEMA_MAPS, SCHEMA_ONE, subschemas

# Keywords whose meaning depends on where the schema stands (its resource, the dynamic scope): a place that
# holds one is compiled alone, where it always was.
_PLACE_BOUND = frozenset(("$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveRef", "$recursiveAnchor", "$id"))
_MAPS = frozenset(SCHEMA_MAPS) - {"$defs"}  # a schema's own `$defs` are targets under their own keys already
_ONE, _LISTS = frozenset(SCHEMA_ONE), frozenset(SCHEMA_LISTS)
_PLAIN = re.compile(r"[A-Za-z0-9_.$@:-]*\Z")  # a pointer step that needs no escaping
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


@dataclass(eq=False)
class PropertyMap:
    """The shared validator's properties over one `$defs` mapping: `core` (each `$defs` entry a property, each place
    another) compiled at start, `pointers` (every other subschema with a `$ref` in it, as a JSON pointer into the
    document) compiled when one is first asked for. `names`: schema object -> the property checking it.
    `hopeless`: the schemas holding or reaching a pattern jsonschema-rs refuses. No `defs`: nothing is shared.

    Read from the cache (from_json), it holds the core alone until a schema that is no place nor `$defs` entry is
    first asked for (`name()`): the places are walked then, as of() walks them, for the rest."""

    defs: dict[str, object] | None = None
    core: dict[str, object] = field(default_factory=dict)
    pointers: dict[str, object] = field(default_factory=dict)
    names: IdentityMemo[str] = field(default_factory=IdentityMemo)
    hopeless: IdentityMemo[bool] = field(default_factory=IdentityMemo)
    by_key: dict[str, str] = field(default_factory=dict)  # `$defs` key -> its property
    places: list[tuple[dict[str, object], str]] = field(default_factory=list)  # (place, its property)
    pending: bool = False  # read from the cache: its places are not walked yet for the rest

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
        for walk in fit:
            for sub, pointer in walk.found:
                target = found.bare_target(sub)
                if target is not None:
                    found.names.put(sub, target)  # a bare `$ref`: checked as its target
                elif sub not in found.names:
                    found.add(found.pointers, sub, {"$ref": pointer})
        return found

    def add(self, into: dict[str, object], node: object, entry: object) -> str:
        name = str(len(self.core) + len(self.pointers))
        into[name] = entry
        self.names.put(node, name)
        return name

    def name(self, schema: object, roots: list[object]) -> str | None:
        """The property that checks `schema` (that very object), or None; `roots`: the places it was made of."""
        name = self.names.get(schema)
        if name is None and self.pending and isinstance(schema, dict):
            # What of() names besides the places and `$defs` entries holds a `$ref`: a bare one is checked as its
            # target (as of() names it), and only a schema with one inside is worth the walk (a leaf is not).
            target = self.bare_target(schema)
            if target is not None:
                return target
            if _holds_ref(schema):
                self.walk_rest(roots)
                name = self.names.get(schema)
        return name

    def bare_target(self, schema: dict[str, Any]) -> str | None:
        """The property of the `$defs` entry a bare `{"$ref": "#/$defs/KEY"}` names, which checks it; else None."""
        key = def_key(schema.get("$ref")) if len(schema) == 1 else None
        return None if key is None else self.by_key.get(key)

    def is_pointer(self, name: str) -> bool:
        return name in self.pointers

    def pointed_places(self) -> list[str]:
        """The places (their properties) a pointer leads into: `#/properties/N/...`."""
        return list(dict.fromkeys(entry["$ref"].split("/", 3)[2] for entry in self.pointers.values()
                                  if isinstance(entry, dict) and entry["$ref"].startswith("#/properties/")))

    def walk_rest(self, roots: list[object]) -> None:
        """Name the subschemas of a map read from the cache: its places `roots` walked now, as of() walks them. (A
        walk that does not find the core read back, which a cache entry of this very spec always holds, names
        none.)"""
        self.pending = False
        walked = PropertyMap.of(roots)
        if walked.core == self.core and walked.by_key == self.by_key:
            self.names, self.pointers, self.hopeless = walked.names, walked.pointers, walked.hopeless

    # -- kept in the spec cache --------------------------------------------------------------------------------
    def to_json(self, index: Callable[[dict[str, object]], int | bool | None]) -> object:
        """JSON-typed data for from_json(): each `$defs` key's property, and each place's, the place named by `index`
        (as spec_json wrote it). None when it is not kept: walked again from the schemas read back (no place
        shared, or a pattern jsonschema-rs refuses, rare: what reaches it is marked object by object)."""
        if self.defs is None:
            return []
        if not self.places or len(self.hopeless):
            return None
        return [self.by_key, [[index(root), name] for root, name in self.places]]

    @staticmethod
    def from_json(data: Any, schemas: list[dict[str, object]]) -> PropertyMap:
        """The map to_json() wrote, over spec_json's `schemas` read back (the places are walked for the rest when
        first needed); KeyError, IndexError, TypeError or ValueError for anything to_json() did not write."""
        found = PropertyMap()
        if data == []:
            return found
        by_key: dict[str, str]
        places: list[list[Any]]
        by_key, places = data
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
        if len(found.core) != len(by_key) + len(places):
            raise ValueError("two schemas named as one property")
        found.by_key = by_key
        found.places = [(root, name) for name, root in root_of.items()]
        found.pending = True
        return found


def _holds_ref(node: object) -> bool:
    """Whether `node` has a `$ref` key anywhere in it."""
    return any(isinstance(item, dict) and "$ref" in item for item in inside(node))


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
        return {key for sub in nodes if (key := def_key(sub.get("$ref"))) is not None}


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
    bad = def_key(node.get("$ref")) in hopeless or (
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
