"""Checks: one spec's schemas compiled once (the places and their subschemas), and the folded schemas
they are read from.

A place or a subschema with a `$ref` in it is checked by the spec's shared validator (contract/shared.py),
compiled once for the spec; a subschema with no `$ref` is compiled alone (microseconds), and so is what the
shared validator leaves out, with only the `$defs` it needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar, cast

from plantstub._memo import IdentityMemo
from plantstub.contract.flatten import flatten_keys, merge
from plantstub.contract.model import Spec
from plantstub.contract.property_map import PropertyMap
from plantstub.contract.schema import NOT_SCHEMAS, SchemaCheck, refs_in
from plantstub.contract.shared import Shared


def places(spec: Spec) -> Iterator[object]:
    """Every schema of `spec`: parameters, request bodies, response bodies and headers."""
    for op in spec.operations:
        yield from (p.schema for p in op.parameters)
        for media in (op.body or {}).values():
            yield media.schema
            if media.item_schema is not None:  # OpenAPI 3.2: each item of a stream
                yield media.item_schema
        for response in op.responses.values():
            for media in response.content.values():
                yield media.schema
                if media.item_schema is not None:
                    yield media.item_schema
            yield from response.headers.values()


T = TypeVar("T")


class Checks:
    """The compiled checks of one spec's schemas (the places `roots`, and every subschema of them), shared by
    its request checks and answers. Keyed by object identity, holding the object."""

    def __init__(self, roots: Iterable[object] = (), annotated: frozenset[str] = frozenset(("readOnly", "writeOnly")),
                 prebuilt: PropertyMap | None = None) -> None:
        self.annotated = annotated  # the annotations some schema of the spec says: the others are looked for nowhere
        self.shared = Shared(list(roots), prebuilt)  # compiled on first use (its property map: `prebuilt` if given)
        self.compiled: IdentityMemo[SchemaCheck] = IdentityMemo()
        self.refs: IdentityMemo[frozenset[str]] = IdentityMemo()
        self.flat: IdentityMemo[tuple[object, frozenset[str]]] = IdentityMemo()
        self.merged: IdentityMemo[object] = IdentityMemo()  # (flat, branch) -> the two merged
        self.marks: IdentityMemo[bool] = IdentityMemo()  # node, keyword -> whether it marks something keyword
        self.made: IdentityMemo[object] = IdentityMemo()  # schema -> the value generated for it

    def flatten(self, schema: object, defs: dict[str, object]) -> tuple[object, frozenset[str]]:
        """flatten_keys(), kept: the same schema folds into the same object, whose checks are then compiled once."""
        return self.flat.make(schema, lambda: flatten_keys(schema, defs))

    def generated(self, schema: object, generate: Callable[[object, Checks], T]) -> T:
        """`generate(schema, self)`, kept: operations answering with the same schema share one value. (One
        generator per spec, samples.generate: what is kept is what it made.)"""
        return cast(T, self.made.make(schema, lambda: generate(schema, self)))

    def merge(self, flat: dict[str, object], branch: object, defs: dict[str, object]) -> object:
        """A oneOf/anyOf branch of `flat` merged with the keywords beside it, kept like flatten()."""
        def build() -> object:
            rest = {k: v for k, v in flat.items() if k not in ("oneOf", "anyOf")}
            return merge([rest, branch], defs)

        return self.merged.make((flat, branch), build)

    def check(self, schema: dict[str, object] | bool, defs: dict[str, object] | None = None,
              where: str = "") -> SchemaCheck:
        """The compiled check of `schema`: a place as it is, a subschema with the `$defs` it needs."""
        check = self.compiled.get(schema)
        if check is None:
            # (A schema has a name once the shared validator compiled: it is there then.)
            if isinstance(schema, dict) and (shared := self.shared.lookup(schema)) is not None:
                # compiled already: the whole `$defs` is there for jsonschema, if it is asked
                root: dict[str, object] | bool = schema if "$defs" in schema or not defs else {**schema, "$defs": defs}
                check = SchemaCheck(root, where, checked=True, shared=shared)
            else:
                root = schema
                if isinstance(schema, dict) and "$defs" not in schema and defs:
                    needed = self.closure(schema, defs)
                    root = {**schema, "$defs": {k: defs[k] for k in needed}} if needed else schema
                check = SchemaCheck(root, where, checked=True)
            self.compiled.put(schema, check)
        return check

    def valid(self, value: object, schema: object, defs: dict[str, object]) -> bool:
        """Does `schema` (a dict or bool, as a subschema is found) take `value`? False when it cannot be compiled."""
        if isinstance(schema, bool):
            return schema
        if isinstance(schema, dict) and set(schema) == {"allOf"} and isinstance(schema["allOf"], list) \
                and self.shared.name(schema, walk=False) is None:  # (whether it is shared or not, the same verdict)
            # flatten.merge()'s `allOf: [a, b]` of two subschemas: each checked as it is, not compiled anew
            return all(self.valid(value, part, defs) for part in schema["allOf"])
        try:
            return self.check(cast("dict[str, object]", schema), defs).is_valid(value)  # else refused: below
        except Exception:  # noqa: BLE001 - a schema jsonschema-rs cannot compile: the value is not known good
            return False

    def marks_inside(self, schema: object, defs: dict[str, object], keyword: str) -> bool:
        """Does `schema`, or a `$defs` entry it needs, mark something `keyword` (`writeOnly`)? One look at the
        whole `$defs` first, kept: a spec that never says it costs nothing more."""
        if keyword not in self.annotated:
            return False
        if not self._marked(defs, keyword) and not self._marked(schema, keyword):
            return False
        return self._marked(schema, keyword) or any(self._marked(defs[k], keyword) for k in self.closure(schema, defs))

    def _marked(self, node: object, keyword: str) -> bool:
        """`keyword: true` anywhere in `node` (not following `$ref`s), kept per node."""
        found = self.marks.get(node, keyword)
        if found is None:
            found, todo = False, [node]
            while todo and not found:
                item = todo.pop()
                if isinstance(item, dict):
                    found = item.get(keyword) is True
                    # Values are not schemas, and `$defs` is looked at apart (marks_inside): a bundled root holds them.
                    todo.extend(v for k, v in item.items() if k not in NOT_SCHEMAS)
                elif isinstance(item, list):
                    todo.extend(item)
            self.marks.put(node, found, keyword)
        return found

    def closure(self, schema: object, defs: dict[str, object]) -> set[str]:
        """The `$defs` keys `schema` needs, directly or through other entries."""
        needed: set[str] = set()
        todo: list[object] = [schema]
        while todo:
            for key in self._refs(todo.pop()):
                if key in defs and key not in needed:
                    needed.add(key)
                    todo.append(defs[key])
        return needed

    def _refs(self, schema: object) -> frozenset[str]:
        return self.refs.make(schema, lambda: frozenset(refs_in(schema)))
