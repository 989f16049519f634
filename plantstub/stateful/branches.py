"""A `--stateful` answer that is a choice of objects (`oneOf`/`anyOf`): the branch a record is shown in (Qovery's
credentials by the fields the record has, Discord's rules by their `trigger_type`), the required fields that branch
asks for, nested ones too, and the fields a closed branch (`additionalProperties: false`) leaves out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plantstub.contract.compiled import Checks
from plantstub.contract.flatten import flatten
from plantstub.contract.samples import sample
from plantstub.contract.schema import SchemaCheck

MAX_NESTED = 4  # levels of objects inside a record whose required fields are filled


@dataclass(frozen=True, slots=True)
class Fill:
    """The required fields of an object schema, each with a generated value, and those of its object fields."""

    defaults: tuple[tuple[str, Any], ...]
    nested: tuple[tuple[str, Fill], ...] = ()

    def apply(self, record: dict[str, Any], old: Any = None) -> dict[str, Any]:
        """`record` with each field it lacks: the old record's value, else the generated one; an object field it has
        filled the same way (Discord's `trigger_metadata: {}`). A new dict when anything was added."""
        out = record
        for name, value in self.defaults:
            if name not in out:
                out = dict(out) if out is record else out
                out[name] = old[name] if isinstance(old, dict) and name in old else value
        for name, inner in self.nested:
            sub = out.get(name)
            if isinstance(sub, dict):
                before = old.get(name) if isinstance(old, dict) else None
                filled = inner.apply(sub, before if isinstance(before, dict) else None)
                if filled is not sub:
                    out = dict(out) if out is record else out
                    out[name] = filled
        return out


@dataclass(frozen=True, slots=True)
class Branch:
    """One object of a choice: its fields, the values its `const`/`enum` fields take, what it requires, and the only
    fields it allows (None: any)."""

    fields: frozenset[str]
    pinned: tuple[tuple[str, tuple[Any, ...]], ...]
    fill: Fill
    closed: frozenset[str] | None
    check: SchemaCheck | None = None  # the branch's schema: a record valid under it already is shown in it

    def apply(self, record: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
        """fill.apply(), an old value this branch's `const`/`enum` refuses not taken (a replace into another branch)."""
        if old is not None:
            old = {n: v for n, v in old.items() if all(n != name or any(_same(v, w) for w in values)
                                                       for name, values in self.pinned)}
        return self.fill.apply(record, old)

    def score(self, record: dict[str, Any]) -> tuple[bool, int, int, int, int]:
        """How well `record` fits: valid under the branch as it is first (Okta's apps, valid under one of branches
        that overlap), then no `const`/`enum` field refused, those it matches, the fields it shares, the fewest
        required fields it lacks."""
        refused = matched = 0
        for name, values in self.pinned:
            if name in record:
                if any(_same(record[name], v) for v in values):
                    matched += 1
                else:
                    refused += 1
        lacking = sum(1 for name, _ in self.fill.defaults if name not in record)
        valid = self.check is not None and self.check.is_valid(record)
        return (valid, -refused, matched, len(self.fields & record.keys()), -lacking)


def _same(a: Any, b: Any) -> bool:
    return (type(a) is type(b) and a == b) or (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                            and not isinstance(a, bool) and not isinstance(b, bool) and a == b)


def flat_of(schema: Any, defs: dict[str, Any]) -> dict[str, Any]:
    flat = flatten(schema, defs)
    return flat if isinstance(flat, dict) else {}


def pick(branches: tuple[Branch, ...], record: dict[str, Any]) -> Branch:
    """The branch `record` fits best (the first of equals)."""
    return max(branches, key=lambda b: b.score(record))


def fill_of(flat: dict[str, Any], defs: dict[str, Any], checks: Checks, depth: int = 0) -> Fill:
    """The Fill of an object schema (flattened): its required properties, and below them, MAX_NESTED levels."""
    props = flat.get("properties")
    if not isinstance(props, dict):
        return Fill(())
    listed = flat.get("required")
    required = [n for n in listed if isinstance(n, str) and n in props] if isinstance(listed, list) else []
    defaults = tuple((name, sample(props[name], defs, checks=checks)) for name in required)
    nested = []
    if depth < MAX_NESTED:
        for name, sub in props.items():
            inner = flat_of(sub, defs)
            if isinstance(inner.get("properties"), dict) and not inner.get("oneOf") and not inner.get("anyOf"):
                fill = fill_of(inner, defs, checks, depth + 1)
                if fill.defaults or fill.nested:
                    nested.append((name, fill))
    return Fill(defaults, tuple(nested))


def branch_of(schema: Any, defs: dict[str, Any], checks: Checks) -> Branch:
    """A choice's branch (an object of properties) as Branch."""
    flat = flat_of(schema, defs)
    props: dict[str, Any] = flat.get("properties") or {}
    pinned = []
    for name, sub in props.items():
        inner = flat_of(sub, defs)
        if "const" in inner:
            pinned.append((name, (inner["const"],)))
        elif isinstance(inner.get("enum"), list) and inner["enum"]:
            pinned.append((name, tuple(inner["enum"])))
    closed = frozenset(props) if flat.get("additionalProperties") is False and not flat.get("patternProperties") else None
    return Branch(frozenset(props), tuple(pinned), fill_of(flat, defs, checks), closed,
                  checks.check(schema, defs or None))
