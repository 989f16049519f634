"""Random values that keep a bundled schema (--dynamic): enums, formats, patterns, lengths, ranges, multipleOf,
array sizes and unique items, optional properties, null, oneOf/anyOf branches.

Where a schema uses what this walker does not read (`not`, `if`, `patternProperties`, `contains`...), or comes back
to itself too often, the value there is the fixed one contract/samples.py makes. contract/dynamic.py checks the whole.
"""

from __future__ import annotations

import math
import random
from decimal import Decimal
from typing import Any

from plantstub._json import json_bytes
from plantstub._memo import IdentityMemo
from plantstub.contract.compiled import Checks
from plantstub.contract.flatten import marked, types_of
from plantstub.contract.random_strings import FORMATS, random_match, words
from plantstub.contract.sample_values import MAX_GENERATED, NONE, Room, admits, kind_of, number, of, strings
from plantstub.contract.samples import sample

MAX_DEPTH = 8  # past it, the fixed value
REENTRIES = 2  # a `$defs` schema met this often on the way down: the fixed value (it cuts recursion)
OPTIONAL = (0.7, 0.7, 0.5, 0.3)  # chance of an optional property by depth; deeper: none
NULL = 0.15  # chance of null where the schema allows it beside another type
SPREAD = 3  # array items past minItems, at most
PATTERN_TRIES = 4
LONGEST = 256  # a minLength or minItems above it: the fixed value (made once, not per call)
DRAW = MAX_GENERATED // 16  # bytes one random value may take (arrays of arrays add up): past it, the fixed answer
NEAR = 10_000  # the span most numbers are drawn from when the schema's is wider
# Keywords whose meaning the walker does not build: a schema holding one gets the fixed value.
_UNREAD = frozenset((
    "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "patternProperties", "propertyNames",
    "unevaluatedProperties", "unevaluatedItems", "prefixItems", "contains", "minContains", "maxContains",
    "$dynamicRef", "$recursiveRef",
))
_INT32 = (-(2**31), 2**31 - 1)


class Plan:
    """What a folded schema asks of a random value, read once (`plan()`), so each call only draws."""

    __slots__ = ("how", "kinds", "null", "optional", "required", "values")

    def __init__(self, how: str, values: list[object] | None = None, kinds: list[str] | None = None,
                 null: bool = False) -> None:
        self.how = how  # const, enum, fixed, branch, typed
        self.values = values or []  # the enum values its type takes (the const alone)
        self.kinds = kinds or []  # the types a value may take, null apart
        self.null = null  # whether null is one of them
        self.required: list[tuple[str, object]] = []  # an object's required properties and their schemas
        self.optional: list[tuple[str, object]] = []  # the others, but those marked writeOnly


def plan(flat: dict[str, object], defs: dict[str, object]) -> Plan:
    """The Plan of a folded schema (a dict)."""
    if "const" in flat:
        return Plan("const", [flat["const"]])
    if isinstance(enum := flat.get("enum"), list) and enum:
        types = types_of(flat, defs)
        allowed = [v for v in enum if types is None or admits(types, v)]  # its `type` may refuse some
        return Plan("enum", allowed) if allowed else Plan("fixed")
    if not _UNREAD.isdisjoint(flat):
        return Plan("fixed")
    if any(isinstance(flat.get(key), list) and flat[key] for key in ("oneOf", "anyOf")):
        return Plan("branch")
    kinds = flat.get("type")
    if isinstance(kinds, list):
        named = [k for k in kinds if isinstance(k, str) and k != "null"]
        found = Plan("typed", kinds=named or ["null"], null="null" in kinds and bool(named))
    else:
        found = Plan("typed", kinds=[kind_of(flat)])
    if "object" in found.kinds:
        props: dict[str, object] = of(flat, "properties", dict, {})
        extra = flat.get("additionalProperties", True)
        names = [n for n in of(flat, "required", list, []) if isinstance(n, str)]
        found.required = [(n, props.get(n, extra if isinstance(extra, dict) else {})) for n in dict.fromkeys(names)]
        found.optional = [(n, sub) for n, sub in props.items() if n not in names and not marked(sub, "writeOnly", defs)]
    return found


# A schema folded, the `$defs` keys it went through, its Plan. The folded schema stays Any: it is a dict exactly when
# there is a Plan, which a tuple type cannot say without a check on every draw.
Planned = tuple[Any, frozenset[str], Plan | None]


class RandomValues:
    """A random value per call of `value()`, drawn from `rng`, for schemas whose `$defs` are `defs`."""

    def __init__(self, rng: random.Random, checks: Checks, defs: dict[str, object], plans: IdentityMemo[Planned],
                 fixes: IdentityMemo[tuple[object, int]]) -> None:
        self.rng = rng
        self.checks = checks
        self.defs = defs
        self.plans = plans  # by schema, kept by the stub's Dynamic
        self.fixes = fixes  # by schema and depth, likewise: each fixed value with its size in bytes
        self.room = Room(DRAW)  # what the value being drawn may still take (the caller gives each draw its own)

    def fixed(self, schema: object, depth: int) -> object:
        """The value contract/samples.py makes (the one a plain default answer holds), made once per place and depth
        (never changed: a body holding it is only written out); its bytes charged to the draw.

        :raises TooLarge: the draw has no room for it."""
        value, size = self.fixes.make(schema, lambda: _sized(sample(schema, self.defs, depth, self.checks)), depth)
        self.room.take(size, "a fixed value")
        return value

    def value(self, schema: object, depth: int = 0, path: tuple[str, ...] = ()) -> object:
        kept = self.plans.get(schema)
        if kept is None:
            flat, keys = self.checks.flatten(schema, self.defs)
            kept = self.plans.put(schema, (flat, keys, plan(flat, self.defs) if isinstance(flat, dict) else None))
        flat, keys, found = kept
        if depth > MAX_DEPTH or (path and keys and any(path.count(k) >= REENTRIES for k in keys)):
            return self.fixed(schema, depth)
        if keys:
            path = (*path, *keys)
        if found is None:
            return self.words() if flat is True else None
        how = found.how
        if how == "typed":
            if found.null and self.rng.random() < NULL:
                return None
            kinds = found.kinds
            kind = kinds[0] if len(kinds) == 1 else self.rng.choice(kinds)
            if kind == "object":
                return self.properties(found, flat, schema, depth, path)
            return self.of_kind(kind, flat, schema, depth, path)
        if how == "const":
            return found.values[0]
        if how == "enum":
            return self.rng.choice(found.values)
        if how == "branch":
            key = "oneOf" if isinstance(flat.get("oneOf"), list) and flat["oneOf"] else "anyOf"
            return self.branch(schema, flat, flat[key], depth, path)
        return self.fixed(schema, depth)

    def branch(self, schema: object, flat: dict[str, object], branches: list[object], depth: int,
               path: tuple[str, ...]) -> object:
        """A value of a oneOf/anyOf branch chosen at random (merged with the keywords beside it), the next when
        it does not fit the whole (a oneOf's value matching two branches); the fixed value when none does."""
        alone = all(k in ("oneOf", "anyOf") for k in flat)
        order = list(range(len(branches)))
        self.rng.shuffle(order)
        for i in order[:3]:
            part = branches[i] if alone else self.checks.merge(flat, branches[i], self.defs)
            found = self.value(part, depth + 1, path)
            if found is not NONE and self.checks.valid(found, schema, self.defs):
                return found
        return self.fixed(schema, depth)

    def of_kind(self, kind: str, flat: dict[str, object], schema: object, depth: int, path: tuple[str, ...]) -> object:
        if kind == "string":
            text = self.string(flat)
            return self.fixed(schema, depth) if text is None else text
        if kind == "array":
            return self.array(flat, schema, depth, path)
        if kind == "integer":
            return self.integer(flat, schema, depth)
        if kind == "number":
            return self.number(flat, schema, depth)
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "null":
            return None
        return self.words()

    def words(self) -> str:
        return words(self.rng, 0, None)

    def properties(self, found: Plan, flat: dict[str, object], schema: object, depth: int, path: tuple[str, ...]) -> object:
        """Every required property; each optional one by chance (fewer deeper down; never a `writeOnly` one)."""
        out = {name: self.value(sub, depth + 1, path) for name, sub in found.required}
        required = set(out)
        chance = OPTIONAL[depth] if depth < len(OPTIONAL) else 0.0
        random = self.rng.random
        for name, sub in found.optional:
            if random() < chance:
                out[name] = self.value(sub, depth + 1, path)
        if "minProperties" not in flat and "maxProperties" not in flat:
            return out
        least, most = number(flat, "minProperties"), number(flat, "maxProperties")
        if least is not None and len(out) < least:
            return self.fixed(schema, depth)
        if most is not None:
            for name in [n for n in out if n not in required][: max(0, len(out) - int(most))]:
                del out[name]
        return out

    def array(self, flat: dict[str, object], schema: object, depth: int, path: tuple[str, ...]) -> object:
        """minItems to SPREAD more (deeper down, minItems), maxItems kept; distinct items when uniqueItems says."""
        items = flat.get("items", {})
        low = int(number(flat, "minItems") or 0)
        high = number(flat, "maxItems")
        if low > LONGEST:
            return self.fixed(schema, depth)
        count = self.rng.randint(low, low + SPREAD) if depth < 3 else low
        if high is not None:
            count = min(count, int(high))
        self.room.take(2 * count + 2, "arrays")  # `x,` each at least
        if items is False:
            return [] if low == 0 else self.fixed(schema, depth)
        unique = flat.get("uniqueItems") is True
        out: list[object] = []
        for _ in range(3 * count if unique else count):
            if len(out) >= count:
                break
            item = self.value(items, depth + 1, path)
            if not unique or item not in out:
                out.append(item)
        return out if len(out) >= low else self.fixed(schema, depth)

    def bounds(self, flat: dict[str, object], integer: bool) -> tuple[float | None, float | None, bool, bool]:
        """(low, high, low excluded, high excluded) of a number schema."""
        low, high = number(flat, "minimum"), number(flat, "maximum")
        low_out = high_out = False
        above, below = number(flat, "exclusiveMinimum"), number(flat, "exclusiveMaximum")
        if above is not None and (low is None or above >= low):
            low, low_out = above, True
        if below is not None and (high is None or below <= high):
            high, high_out = below, True
        if integer:  # as whole numbers, the bounds included
            low = None if low is None else (math.floor(low) + 1 if low_out else math.ceil(low))
            high = None if high is None else (math.ceil(high) - 1 if high_out else math.floor(high))
            low_out = high_out = False
        return low, high, low_out, high_out

    def integer(self, flat: dict[str, object], schema: object, depth: int) -> object:
        try:
            low, high, _, _ = self.bounds(flat, integer=True)
            if flat.get("format") == "int32":
                low = max(low, _INT32[0]) if low is not None else _INT32[0] // 2**21
                high = min(high, _INT32[1]) if high is not None else _INT32[1] // 2**21
            low, high = self.near(*_span(low, high))
            step = number(flat, "multipleOf")
            if step is not None and step > 0:
                return self.multiple(step, low, high, schema, depth)
            if low > high:
                return self.fixed(schema, depth)
            return self.rng.randint(int(low), int(high))
        except (OverflowError, ValueError):  # bounds past what a float holds
            return self.fixed(schema, depth)

    def near(self, low: float, high: float) -> tuple[float, float]:
        """Wide bounds (a format's int32 range): mostly the 10,000 values from 0 or the lower bound up, sometimes
        anywhere (a big value shakes out a client's parsing too)."""
        if high - low <= NEAR or self.rng.random() < 0.1:
            return low, high
        start = max(low, min(0, high - NEAR))
        return start, min(high, start + NEAR)

    def number(self, flat: dict[str, object], schema: object, depth: int) -> object:
        try:
            low, high, low_out, high_out = self.bounds(flat, integer=False)
            low, high = _span(low, high)
            step = number(flat, "multipleOf")
            if step is not None and step > 0:
                return self.multiple(step, low, high, schema, depth)
            value = round(self.rng.uniform(low, high), 2)
            if (low_out and value <= low) or (high_out and value >= high) or not low <= value <= high:
                value = (low + high) / 2
            return value
        except (OverflowError, ValueError):
            return self.fixed(schema, depth)

    def multiple(self, step: float, low: float, high: float, schema: object, depth: int) -> object:
        """A random multiple of `step` within the bounds, written with no more decimals than `step` has."""
        first, last = math.ceil(low / step), math.floor(high / step)
        if first > last:
            return self.fixed(schema, depth)
        if isinstance(step, int):
            return self.rng.randint(first, min(last, first + NEAR)) * step
        exponent = Decimal(str(step)).as_tuple().exponent
        places = -exponent if isinstance(exponent, int) and exponent < 0 else 0
        for _ in range(PATTERN_TRIES):
            value = round(self.rng.randint(first, min(last, first + NEAR)) * step, places)
            quotient = value / step
            if quotient == int(quotient) and low <= value <= high:  # exact in floats: every validator agrees
                return int(value) if value == int(value) else value
        return self.fixed(schema, depth)

    def string(self, flat: dict[str, object]) -> str | None:
        """A match of its pattern, else a value of its format, else words; within minLength and maxLength (None:
        none found, the fixed value goes there)."""
        low: int = of(flat, "minLength", int, 0)
        high = most if isinstance(most := flat.get("maxLength"), int) else None
        if low > LONGEST:  # made once, not per call
            return None
        text = self._string(flat, low, high)
        if text is not None:
            self.room.take(len(text) + 3, "texts")
        return text

    def _string(self, flat: dict[str, object], low: int, high: int | None) -> str | None:
        pattern, fmt = flat.get("pattern"), flat.get("format")
        if isinstance(pattern, str):
            for _ in range(PATTERN_TRIES):
                text = random_match(pattern, self.rng, low)
                if text is not None and low <= len(text) <= (high if high is not None else len(text)):
                    return text
            return None
        if isinstance(fmt, str):
            made = FORMATS.get(fmt)
            text = made(self.rng) if made is not None else strings(flat)[0]
            return text if low <= len(text) <= (high if high is not None else len(text)) else None
        return words(self.rng, low, high)


def _sized(value: object) -> tuple[object, int]:
    return value, len(json_bytes(value))


def _span(low: float | None, high: float | None) -> tuple[float, float]:
    """Bounds for a draw: 0-10,000 when both sides are open; an open side 10,000 past the other (or 0)."""
    if low is None:
        return (0 if high is None or high >= 0 else high - 10_000), (10_000 if high is None else high)
    return low, (low + 10_000 if high is None else high)
