"""Checks: one spec's subschemas compiled once, and the folded schemas they are compiled from.

Generating a value checks each candidate with the checks requests and replies get (contract/schema.py). A
subschema is usually a `$defs` entry many bundles hold (the same object), so each is compiled once per spec;
compiled without the `$defs` it does not use, it takes microseconds instead of milliseconds.
"""

from __future__ import annotations

from typing import Any

from plantstub.contract.flatten import flatten_keys, merge
from plantstub.contract.schema import SchemaCheck


class Checks:
    """Compiled checks of the subschemas of one spec's bundles, each with only the `$defs` it refers to; shared
    by every answer of the spec (ServedOperation.samples). Keyed by object identity, holding the object."""

    def __init__(self) -> None:
        self.compiled: dict[int, tuple[Any, SchemaCheck]] = {}
        self.refs: dict[int, tuple[Any, frozenset[str]]] = {}
        self.flat: dict[int, tuple[Any, tuple[Any, frozenset[str]]]] = {}
        self.merged: dict[tuple[int, int], tuple[Any, Any, Any]] = {}

    def flatten(self, schema: Any, defs: dict[str, Any]) -> tuple[Any, frozenset[str]]:
        """flatten_keys(), kept: the same schema folds into the same object, whose checks are then compiled once."""
        entry = self.flat.get(id(schema))
        if entry is None or entry[0] is not schema:
            entry = self.flat[id(schema)] = (schema, flatten_keys(schema, defs))
        return entry[1]

    def merge(self, flat: dict[str, Any], branch: Any, defs: dict[str, Any]) -> Any:
        """A oneOf/anyOf branch of `flat` merged with the keywords beside it, kept like flatten()."""
        entry = self.merged.get((id(flat), id(branch)))
        if entry is None or entry[0] is not flat or entry[1] is not branch:
            rest = {k: v for k, v in flat.items() if k not in ("oneOf", "anyOf")}
            entry = self.merged[(id(flat), id(branch))] = (flat, branch, merge([rest, branch], defs))
        return entry[2]

    def check(self, schema: Any, defs: dict[str, Any] | None = None) -> SchemaCheck:
        """The compiled check of `schema`: a bundle's root as it is, a subschema with the `$defs` it needs."""
        entry = self.compiled.get(id(schema))
        if entry is None or entry[0] is not schema:
            root = schema
            if isinstance(schema, dict) and "$defs" not in schema and defs:
                needed = self.closure(schema, defs)
                root = {**schema, "$defs": {k: defs[k] for k in needed}} if needed else schema
            entry = self.compiled[id(schema)] = (schema, SchemaCheck(root, "", checked=True))
        return entry[1]

    def valid(self, value: Any, schema: Any, defs: dict[str, Any]) -> bool:
        if isinstance(schema, bool):
            return schema
        try:
            return self.check(schema, defs).is_valid(value)
        except Exception:  # noqa: BLE001 - a schema jsonschema cannot run: the value is not known good
            return False

    def closure(self, schema: Any, defs: dict[str, Any]) -> set[str]:
        """The `$defs` keys `schema` needs, directly or through other entries."""
        needed: set[str] = set()
        todo = [schema]
        while todo:
            for key in self._refs(todo.pop()):
                if key in defs and key not in needed:
                    needed.add(key)
                    todo.append(defs[key])
        return needed

    def _refs(self, schema: Any) -> frozenset[str]:
        entry = self.refs.get(id(schema))
        if entry is None or entry[0] is not schema:
            found: set[str] = set()
            todo = [schema]
            while todo:
                node = todo.pop()
                if isinstance(node, dict):
                    ref = node.get("$ref")
                    if isinstance(ref, str) and ref.startswith("#/$defs/"):
                        found.add(ref[8:])
                    todo.extend(v for k, v in node.items() if k != "$defs")
                elif isinstance(node, list):
                    todo.extend(node)
            entry = self.refs[id(schema)] = (schema, frozenset(found))
        return entry[1]
