"""Make a small value that satisfies a bundled schema: the body of a default answer.

Each candidate (const, enum, examples, default, then values built from the type) is checked with the
checks requests get (contract/compiled.py), so a spec example that breaks its own schema is passed over,
not served. A oneOf whose candidates match several branches gets a property another branch refuses; a
schema met again inside itself is left out where a choice allows (REENTRIES), else the value is cut there
and `generate` says so: no finite value satisfies a schema whose required property holds it again.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from plantstub.contract.compiled import Checks
from plantstub.contract.flatten import defs_of, is_number, marked, types_of
from plantstub.contract.pattern import matching_strings

FORMAT_SAMPLES = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00Z",
    "email": "user@example.com",
    "idn-email": "user@example.com",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "uri": "https://example.com/",
    "uri-reference": "https://example.com/",
    "iri": "https://example.com/",
    "iri-reference": "https://example.com/",
    "url": "https://example.com/",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "byte": "c3RyaW5n",
    "password": "secret",
    "duration": "P1D",
    "regex": ".*",
    "json-pointer": "/a",
    "int32": "0",
    "int64": "0",
}
MAX_DEPTH = 12
REENTRIES = 2  # a schema may hold itself this often in one value; past that a choice leaves it out
SPOILER_TRIES = 64
_ONE_OF_EACH_TYPE: tuple[Any, ...] = (None, "x", 0, True, [], {})
_T = TypeVar("_T")
_NONE: Any = object()  # no candidate at all: every way on comes back to a schema entered REENTRIES times


def _number(schema: dict[str, Any], key: str) -> float | None:
    """`schema[key]` when it is a number (not a boolean), else None."""
    value = schema.get(key)
    return value if is_number(value) else None


def _of(schema: dict[str, Any], key: str, kind: type[_T], default: _T) -> _T:
    """`schema[key]` when it is a `kind`, else `default`: a schema written by hand may hold anything."""
    value = schema.get(key)
    return value if isinstance(value, kind) else default


class Sampled:
    """A generated value, and why it breaks its schema when it does (`problem` None: it satisfies it).

    `certain`: no value at all satisfies the schema (not only none that plantstub can make).
    """

    def __init__(self, value: Any, problem: str | None = None, certain: bool = False) -> None:
        self.value = value
        self.problem = problem
        self.certain = certain


def sample(schema: Any, defs: dict[str, Any] | None = None, depth: int = 0, checks: Checks | None = None) -> Any:
    """A small value that satisfies `schema` (a bundled schema; `defs` are its `$defs`) when plantstub finds one."""
    if defs is None:
        defs = defs_of(schema)
    value = _Sampler(defs, checks).value(schema, depth, ())
    return None if value is _NONE else value


def generate(schema: Any, checks: Checks | None = None) -> Sampled:
    """sample(), checked: the value, or why it breaks the schema (a required property holding its own schema)."""
    sampler = _Sampler(defs_of(schema), checks)
    value = sampler.value(schema, 0, ())
    value = None if value is _NONE else value
    if sampler.valid(value, schema):
        return Sampled(value)
    if sampler.cuts:
        return Sampled(value, f"a required property holds its own schema again ({sampler.cuts[0]})", certain=True)
    if sampler.deep:
        return Sampled(value, f"it nests required values more than {MAX_DEPTH} levels deep ({sampler.deep[0]})")
    found = sampler.checks.check(schema).errors(value, "body") if isinstance(schema, dict) else []
    closest = f"; the closest value it makes breaks it at {found[0]}" if found else ""
    return Sampled(value, f"its parts may contradict each other, or hold alternatives plantstub cannot tell apart{closest}")


class _Sampler:
    def __init__(self, defs: dict[str, Any], checks: Checks | None) -> None:
        self.defs = defs
        self.checks = checks if checks is not None else Checks()
        self.cuts: list[str] = []  # required places left empty: they hold their own schema again (`Node.child -> Node`)
        self.refused = ""  # the schema the last refused candidates() would have entered again
        self.at: list[str] = []  # the place being made (`Node.kids`), to name a cut inside an unnamed array
        self.deep: list[str] = []  # required places left empty because they lie MAX_DEPTH levels down

    def valid(self, value: Any, schema: Any) -> bool:
        return self.checks.valid(value, schema, self.defs)

    def flat(self, schema: Any) -> Any:
        return self.checks.flatten(schema, self.defs)[0]

    def value(self, schema: Any, depth: int, path: tuple[str, ...]) -> Any:
        """The first candidate that validates; else one that a oneOf spoiler fixes; else the first built one.

        `path`: the `$defs` keys entered on the way here, a key once per time (REENTRIES bounds them).
        """
        flat, given, built = self.candidates(schema, depth, path)
        for candidate in given + built:
            candidate = _made(candidate)
            if self.valid(candidate, schema):
                return candidate
        fixed = self.spoiled(schema, flat, [_made(c) for c in given + built])
        if fixed is not _NONE:
            return fixed
        return _made(built[0]) if built else given[0] if given else _NONE

    def candidates(self, schema: Any, depth: int, path: tuple[str, ...]) -> tuple[Any, list[Any], list[Any]]:
        """(the flattened schema, values the spec gives: const, enum, examples, default; values built from it)."""
        flat, keys = self.checks.flatten(schema, self.defs)
        again = [k for k in sorted(keys) if path.count(k) >= REENTRIES]
        if again:
            self.refused = again[0]
            return flat, [], []
        path = (*path, *sorted(keys))
        if flat is False or depth > 2 * MAX_DEPTH:
            return flat, [], [None]
        if not isinstance(flat, dict):
            return flat, [], [{}]
        given = [flat["const"]] if "const" in flat else []
        given += flat["enum"] if isinstance(flat.get("enum"), list) else []
        given += flat["examples"] if isinstance(flat.get("examples"), list) else []
        given += [flat[key] for key in ("example", "default") if key in flat]
        for key in ("oneOf", "anyOf"):
            if isinstance(flat.get(key), list) and flat[key]:
                alone = all(k in ("oneOf", "anyOf") for k in flat)
                built: list[Any] = []
                for branch in sorted(flat[key], key=lambda b: _kind(self.flat(b)) == "null"):  # null last
                    if alone:
                        _, more, made = self.candidates(branch, depth + 1, path)
                    else:  # merged with its siblings, the branch's own keys still count
                        entered = sorted(self.checks.flatten(branch, self.defs)[1])
                        if any(path.count(k) >= REENTRIES for k in entered):
                            continue
                        _, more, made = self.candidates(self.checks.merge(flat, branch, self.defs), depth + 1,
                                                        (*path, *entered))
                    built += more + made
                return flat, given, built
        return flat, given, self.build(flat, depth, path, sorted(keys))

    def build(self, schema: dict[str, Any], depth: int, path: tuple[str, ...], own: list[str]) -> list[Any]:
        kinds = schema.get("type")
        if isinstance(kinds, list) and len(kinds) > 1:  # candidates of each type, null last
            ordered = [k for k in kinds if isinstance(k, str) and k != "null"] + (["null"] if "null" in kinds else [])
            return [c for kind in ordered for c in self.build_one({**schema, "type": kind}, depth, path, own)]
        return self.build_one(schema, depth, path, own)

    def build_one(self, schema: dict[str, Any], depth: int, path: tuple[str, ...], own: list[str]) -> list[Any]:
        kind = _kind(schema)
        if kind == "object":
            return self.objects(schema, depth, path, own)
        if kind == "array":
            return [self.array(schema, depth, path, own)]
        if kind in ("integer", "number"):
            return _numbers(schema, kind)
        if kind == "boolean":
            return [True, False]
        if kind == "null":
            return [None]
        return _strings(schema)

    def required(self, schema: Any, depth: int, path: tuple[str, ...], place: str) -> Any:
        """A value the parent cannot leave out; None (and a cut) when it would hold its own schema again."""
        self.refused = ""
        value = self.optional(schema, depth, path, place)
        if value is _NONE:
            (self.cuts if self.refused else self.deep).append(f"{place} -> {self.refused}" if self.refused else place)
            return None
        return value

    def optional(self, schema: Any, depth: int, path: tuple[str, ...], place: str) -> Any:
        if depth >= MAX_DEPTH:
            return _NONE
        self.at.append(place)
        try:
            return self.value(schema, depth, path)
        finally:
            self.at.pop()

    def owner(self, own: list[str], array: bool) -> str:
        """How a cut names the value being made: its schema's name, or where it is (an array: where first)."""
        names = [self.at[-1]] if self.at else []
        names = [*names, *own[-1:]] if array else [*own[-1:], *names]
        return names[0] if names else "body"

    def objects(self, schema: dict[str, Any], depth: int, path: tuple[str, ...], own: list[str]) -> list[Any]:
        """The smallest object, then one with every declared property (it tells oneOf branches apart)."""
        props: dict[str, Any] = _of(schema, "properties", dict, {})
        extra = schema.get("additionalProperties", True)
        value: dict[str, Any] = {}
        required: list[Any] = _of(schema, "required", list, [])
        wanted = [n for n in required if isinstance(n, str)]
        least = int(_number(schema, "minProperties") or 0)
        wanted += [n for n in props if n not in wanted][: max(0, least - len(wanted))]
        owner = self.owner(own, array=False)
        for name in wanted:
            sub = props.get(name, extra if isinstance(extra, dict) else {})
            value[name] = self.required(sub, depth + 1, path, f"{owner}.{name}")
        patterns: dict[str, Any] = _of(schema, "patternProperties", dict, {})
        for pattern, sub in patterns.items():  # names a patternProperties key matches, before made-up ones
            key = next((k for k in matching_strings(pattern, 1) if k not in value and k not in props), None)
            if len(value) < least and key is not None:
                value[key] = self.required(sub, depth + 1, path, f"{owner}.{key}")
        n = 0
        while len(value) < least and extra is not False:
            n += 1
            value.setdefault(f"key{n}", self.required(extra if isinstance(extra, dict) else {}, depth + 1, path,
                                                      f"{owner}.key{n}"))
        # Answers are what is generated: a `writeOnly` property (a password) is left out unless required.
        optional = [n for n in props if n not in value and not marked(props[n], "writeOnly", self.defs)]
        if not optional or depth >= 3:
            return [value]

        def full() -> dict[str, Any]:
            more = {n: self.optional(props[n], depth + 1, path, f"{owner}.{n}") for n in optional}
            return {**value, **{n: v for n, v in more.items() if v is not _NONE}}

        return [value, _Later(full)]

    def array(self, schema: dict[str, Any], depth: int, path: tuple[str, ...], own: list[str]) -> list[Any]:
        prefix: list[Any] = _of(schema, "prefixItems", list, [])
        items = schema.get("items", {})
        least = max(int(_number(schema, "minItems") or 0), len(prefix))
        count = least
        if count == 0 and depth < 3 and items is not False:
            count = 1  # one item shows the shape; deeper down, stay small
        if is_number(schema.get("maxItems")):
            count = min(count, int(schema["maxItems"]))
        if items is False:
            count = min(count, len(prefix))
        owner = self.owner(own, array=True)
        values = []
        for i in range(count):
            sub = prefix[i] if i < len(prefix) else items
            if i < least:
                values.append(self.required(sub, depth + 1, path, f"{owner}[{i}]"))
            else:
                item = self.optional(sub, depth + 1, path, f"{owner}[{i}]")
                if item is _NONE:
                    break
                values.append(item)
        contains = schema.get("contains")
        if contains is not None and not any(self.valid(v, contains) for v in values):
            found = self.optional(contains, depth + 1, path, f"{owner}[0]")
            if found is not _NONE:
                values = [found, *values][: max(1, count)]
        if schema.get("uniqueItems") is True and len(values) > 1:
            values = self.distinct(values, items)
        return values

    def distinct(self, values: list[Any], items: Any) -> list[Any]:
        """Replace repeated items by variants that still satisfy the item schema."""
        flat = self.flat(items)
        pool = list(flat.get("enum", [])) if isinstance(flat, dict) else []
        out: list[Any] = []
        for i, item in enumerate(values):
            candidates = [item, *pool, *_variants(item, i)]
            out.append(next((c for c in candidates if c not in out and self.valid(c, items)), item))
        return out

    # -- oneOf: a value that matches several branches, made to fail all but one --------------------
    def spoiled(self, schema: Any, flat: Any, candidates: list[Any]) -> Any:
        """A candidate object changed (a property of a type the other branches refuse) to match one branch only."""
        branches = flat.get("oneOf") if isinstance(flat, dict) else None
        if not isinstance(branches, list):
            return _NONE
        tries = 0
        for candidate in (c for c in candidates if isinstance(c, dict)):
            matched = [b for b in branches if self.valid(candidate, b)]
            for target in matched:
                value: Any = candidate
                for other in (b for b in matched if b is not target):
                    fits = (v for v in self.spoilers(value, target, other)
                            if self.valid(v, target) and not self.valid(v, other))
                    value = next(fits, _NONE)
                    tries += 1
                    if value is _NONE or tries > SPOILER_TRIES:
                        break
                if value is not _NONE and self.valid(value, schema):
                    return value
                if tries > SPOILER_TRIES:
                    return _NONE
        return _NONE

    def spoilers(self, value: dict[str, Any], target: Any, other: Any) -> list[dict[str, Any]]:
        """`value` changed so that `other` may refuse it: the target's own value where the two disagree, a
        property `other` declares with a type it refuses, one it forbids, one it requires taken away."""
        mine, theirs = (self.flat(b) for b in (target, other))
        mine = mine if isinstance(mine, dict) else {}
        theirs = theirs if isinstance(theirs, dict) else {}
        own_props: dict[str, Any] = _of(mine, "properties", dict, {})
        their_props: dict[str, Any] = _of(theirs, "properties", dict, {})
        out = []
        for name, sub in their_props.items():
            if name in own_props:
                built = self.candidates(own_props[name], 3, ())
                out += [{**value, name: _made(v)} for v in built[1] + built[2]]
            kinds = types_of(sub, self.defs) or set()
            out += [{**value, name: v} for v in _ONE_OF_EACH_TYPE if kinds and not _admits(kinds, v)]
        if theirs.get("additionalProperties") is False:
            extra = {name: self.value(sub, 3, ()) for name, sub in own_props.items() if name not in their_props}
            out += [{**value, name: v} for name, v in extra.items() if v is not _NONE]
        out += [{k: v for k, v in value.items() if k != name} for name in _of(theirs, "required", list, [])
                if name in value]
        return out


class _Later:
    """A candidate made only when the ones before it failed (an object with every property costs a lot)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make
        self.made: Any = _NONE

    def __call__(self) -> Any:
        if self.made is _NONE:
            self.made = self.make()
        return self.made


def _made(candidate: Any) -> Any:
    return candidate() if isinstance(candidate, _Later) else candidate


def _admits(kinds: set[str], value: Any) -> bool:
    """Does a schema of these JSON types take `value` (an integer is a number too)?"""
    if value is None:
        kind = "null"
    elif isinstance(value, bool):
        kind = "boolean"
    elif isinstance(value, int):
        return "integer" in kinds or "number" in kinds
    else:
        kind = "string" if isinstance(value, str) else "array" if isinstance(value, list) else "object"
    return kind in kinds


def _kind(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if isinstance(kind, str):
        return kind
    if "properties" in schema or "required" in schema or "additionalProperties" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    if any(key in schema for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")):
        return "number"
    return "string" if any(key in schema for key in ("format", "pattern", "minLength", "maxLength")) else "object"


def _variants(item: Any, i: int) -> list[Any]:
    if isinstance(item, bool):
        return [not item]
    if isinstance(item, (int, float)):
        return [item + i, item - i, item + i * 0.5]
    if isinstance(item, str):
        return [f"{item}{i}", item[:-1] + chr(ord("a") + i % 26) if item else str(i)]
    if isinstance(item, dict):
        return [{**item, f"key{i}": i}]
    return []


def _numbers(schema: dict[str, Any], kind: str) -> list[int | float]:
    """Candidate numbers in order of preference: 0, then near the lower bound, the upper, the middle."""
    low = max((schema[k] for k in ("minimum", "exclusiveMinimum") if is_number(schema.get(k))), default=None)
    high = min((schema[k] for k in ("maximum", "exclusiveMaximum") if is_number(schema.get(k))), default=None)
    points: list[float] = [0, 1, -1] + ([0.5] if kind == "number" else [])
    if low is not None:
        points += [low, low + 1, low + 0.5, math.floor(low) + 1]
    if high is not None:
        points += [high, high - 1, high - 0.5, math.ceil(high) - 1]
    if low is not None and high is not None:
        points.append((low + high) / 2)
    step = _number(schema, "multipleOf")
    if step is not None and step > 0:
        points = [p for q in points for p in (math.ceil(q / step) * step, math.floor(q / step) * step, round(q))]
        points += [(math.ceil(low / step) + 1) * step] if low is not None else []
    out: list[int | float] = []
    for p in points:
        if kind == "integer" or p == int(p):
            p = int(p) if p == int(p) else math.ceil(p)
        if p not in out:
            out.append(p)
    return out


def _strings(schema: dict[str, Any]) -> list[str]:
    low: int = _of(schema, "minLength", int, 0)
    high = schema["maxLength"] if isinstance(schema.get("maxLength"), int) else None
    found: list[str] = []
    if isinstance(schema.get("pattern"), str):
        found += matching_strings(schema["pattern"], low)
    fmt = schema.get("format")
    found.append(FORMAT_SAMPLES.get(fmt, "string") if isinstance(fmt, str) else "string")
    out = []
    for text in found:
        if len(text) < low:
            text += "x" * (low - len(text))
        if high is not None and len(text) > high:
            text = text[:high]
        out.append(text)
    return out
