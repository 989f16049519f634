"""One jsonschema-rs validator over a spec's `$defs` and its places, each place one property of it (and a second,
compiled on first use, for the subschemas holding a `$ref` that are checked on their own).

jsonschema-rs compiles every `$ref` target a schema reaches, and two validators share nothing: compiled one
by one, the places of a big spec compiled their components again each time (Stripe: 1,700 places, 12 s and
1.9 GB). Here every target is compiled once, in about the time the document takes to read, and a value is
checked against a place as that property of a one-key object: `{"12": value}`.
"""

from __future__ import annotations

from plantstub.contract.property_map import PropertyMap
from plantstub.contract.schema import compile_fast, jsonschema_rs


class Shared:
    """The shared validator of the places `roots` (bundled schemas holding one `$defs` mapping). Its property map
    (contract/property_map.py: each place, each `$defs` entry and every subschema with a `$ref` in it, as a JSON
    pointer into the document, is one property) is walked at build() unless given (`prebuilt`, from the spec
    cache). The places and `$defs` entries are compiled at build(), what the pointers name (a second validator
    over the same `$defs`) when one of them is first asked for: a start compiles what its requests check.
    A subschema with no `$ref` in it compiles alone in microseconds.

    Left out, to be compiled alone as before: what jsonschema-rs cannot compile (a pattern it refuses), what
    means something else away from its own document (a dynamic reference), and whatever reaches either.
    """

    def __init__(self, roots: list[object], prebuilt: PropertyMap | None = None) -> None:
        self.roots = roots
        self.map = prebuilt
        self.validator: jsonschema_rs.Validator | None = None  # of the places and `$defs` entries
        self.pointed: jsonschema_rs.Validator | None = None  # of the pointers: compiled on first use
        self.pointed_tried = False
        self.built = False

    def name(self, schema: object, walk: bool = True) -> str | None:
        """The property that checks `schema` (that very object), or None when it is not shared (or, with `walk`
        False, not named yet: a map read from the cache is not walked for it)."""
        if not self.built:
            self.build()
        if self.validator is None:
            return None
        return self.found.name(schema, self.roots) if walk else self.found.names.get(schema)

    def lookup(self, schema: object) -> tuple[jsonschema_rs.Validator, str] | None:
        """The validator and property that check `schema`, or None when it is not shared."""
        name = self.name(schema)
        if name is None or self.validator is None:
            return None
        if not self.found.is_pointer(name):
            return self.validator, name
        if not self.pointed_tried:
            self.pointed_tried = True
            self.pointed = self._compile(self.found.pointers)
        return None if self.pointed is None else (self.pointed, name)

    def compiles(self, schema: object) -> bool:
        """False when jsonschema-rs is known to refuse `schema` (a pattern it cannot run, held or reached)."""
        if not self.built:
            self.build()
        if self.found.pending:
            self.found.walk_rest(self.roots)
        return schema not in self.found.hopeless

    @property
    def found(self) -> PropertyMap:
        if self.map is None:
            self.map = PropertyMap.of(self.roots)
        return self.map

    def build(self) -> None:
        """Compile the shared validator of the places and `$defs` entries; when jsonschema-rs refuses it, nothing
        is shared."""
        self.built = True
        if jsonschema_rs is None or self.found.defs is None:
            return
        self.validator = self._compile(self.found.core)

    def _compile(self, properties: dict[str, object]) -> jsonschema_rs.Validator | None:
        found = self.found
        if properties is found.pointers:  # a pointer into a place (`#/properties/N/...`) needs that place beside it
            properties = {**{name: found.core[name] for name in found.pointed_places()}, **properties}
        try:
            return compile_fast({"$defs": found.defs, "properties": properties})
        except ValueError:  # whatever jsonschema-rs refuses: each schema is then compiled alone
            return None


