"""Make a small value that satisfies a bundled schema: the body of a default answer.

Each candidate (const, enum, examples, default, then values built from the type) is checked
with the same checks requests get (schema_check), so a spec example that breaks its own schema is passed over, not served.
"""

from __future__ import annotations

import math
import sys
from typing import Any, TypeVar

from plantstub.contract.flatten import defs_of, flatten, is_number, merge
from plantstub.contract.schema import SchemaCheck  # the checks requests and replies get, so samples pass them

if sys.version_info >= (3, 11):  # the regular-expression parser behind `re`, to build strings that match a pattern
    from re import _parser as sre_parse
else:  # pragma: no cover - Python 3.10
    import sre_parse

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
_T = TypeVar("_T")


def _number(schema: dict[str, Any], key: str) -> float | None:
    """`schema[key]` when it is a number (not a boolean), else None."""
    value = schema.get(key)
    return value if is_number(value) else None


def _of(schema: dict[str, Any], key: str, kind: type[_T], default: _T) -> _T:
    """`schema[key]` when it is a `kind`, else `default`: a schema written by hand may hold anything."""
    value = schema.get(key)
    return value if isinstance(value, kind) else default


def sample(schema: Any, defs: dict[str, Any] | None = None, depth: int = 0) -> Any:
    """A small value that satisfies `schema` (a bundled schema; `defs` are its `$defs`)."""
    if defs is None:
        defs = defs_of(schema)
    return _Sampler(defs).value(schema, depth)


class _Sampler:
    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs
        self.checks: dict[int, tuple[Any, SchemaCheck]] = {}

    def valid(self, value: Any, schema: Any) -> bool:
        if isinstance(schema, bool):
            return schema
        entry = self.checks.get(id(schema))
        if entry is None or entry[0] is not schema:
            root = {**schema, "$defs": self.defs} if self.defs else schema
            entry = self.checks[id(schema)] = (schema, SchemaCheck(root, "", checked=True))
        try:
            return entry[1].is_valid(value)
        except Exception:  # noqa: BLE001 - a schema jsonschema cannot run: the value is not known good
            return False

    def value(self, schema: Any, depth: int) -> Any:
        """The first candidate that validates; the first built one when none does."""
        given, built = self.candidates(schema, depth)
        for candidate in given + built:
            if self.valid(candidate, schema):
                return candidate
        return built[0] if built else given[0]

    def candidates(self, schema: Any, depth: int) -> tuple[list[Any], list[Any]]:
        """(values the spec gives: const, enum, examples, default; values built from the schema)."""
        flat = flatten(schema, self.defs)
        if flat is False or depth > 2 * MAX_DEPTH:
            return [], [None]
        if not isinstance(flat, dict):
            return [], [{}]
        given = [flat["const"]] if "const" in flat else []
        given += flat["enum"] if isinstance(flat.get("enum"), list) else []
        given += flat["examples"] if isinstance(flat.get("examples"), list) else []
        given += [flat[key] for key in ("example", "default") if key in flat]
        for key in ("oneOf", "anyOf"):
            if isinstance(flat.get(key), list) and flat[key]:
                rest = {k: v for k, v in flat.items() if k not in ("oneOf", "anyOf")}
                built: list[Any] = []
                for branch in sorted(flat[key], key=lambda b: _kind(flatten(b, self.defs)) == "null"):  # null last
                    more, made = self.candidates(merge([rest, branch], self.defs) if rest else branch, depth + 1)
                    built += more + made
                return given, built
        return given, self.build(flat, depth)

    def build(self, schema: dict[str, Any], depth: int) -> list[Any]:
        kind = _kind(schema)
        if kind == "object":
            return self.objects(schema, depth)
        if kind == "array":
            return [self.array(schema, depth)]
        if kind in ("integer", "number"):
            return _numbers(schema, kind)
        if kind == "boolean":
            return [True, False]
        if kind == "null":
            return [None]
        return _strings(schema)

    def objects(self, schema: dict[str, Any], depth: int) -> list[dict[str, Any]]:
        """The smallest object, then one with every declared property (it tells oneOf branches apart)."""
        props: dict[str, Any] = _of(schema, "properties", dict, {})
        extra = schema.get("additionalProperties", True)
        value: dict[str, Any] = {}
        required: list[Any] = _of(schema, "required", list, [])
        wanted = [n for n in required if isinstance(n, str)]
        least = int(_number(schema, "minProperties") or 0)
        wanted += [n for n in props if n not in wanted][: max(0, least - len(wanted))]
        for name in wanted:
            sub = props.get(name, extra if isinstance(extra, dict) else {})
            value[name] = self.value(sub, depth + 1) if depth < MAX_DEPTH else None
        n = 0
        while len(value) < least and extra is not False:
            n += 1
            value.setdefault(f"key{n}", self.value(extra if isinstance(extra, dict) else {}, depth + 1))
        optional = [n for n in props if n not in value]
        if not optional or depth >= 3:
            return [value]
        return [value, {**value, **{n: self.value(props[n], depth + 1) for n in optional}}]

    def array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        prefix: list[Any] = _of(schema, "prefixItems", list, [])
        items = schema.get("items", {})
        count = max(int(_number(schema, "minItems") or 0), len(prefix))
        if count == 0 and depth < 3 and items is not False:
            count = 1  # one item shows the shape; deeper down, stay small
        if is_number(schema.get("maxItems")):
            count = min(count, int(schema["maxItems"]))
        if items is False:
            count = min(count, len(prefix))
        values = [self.value(prefix[i] if i < len(prefix) else items, depth + 1) for i in range(count)]
        contains = schema.get("contains")
        if contains is not None and not any(self.valid(v, contains) for v in values):
            values = [self.value(contains, depth + 1), *values][: max(1, count)]
        if schema.get("uniqueItems") is True and len(values) > 1:
            values = self.distinct(values, items, depth)
        return values

    def distinct(self, values: list[Any], items: Any, depth: int) -> list[Any]:
        """Replace repeated items by variants that still satisfy the item schema."""
        flat = flatten(items, self.defs)
        pool = list(flat.get("enum", [])) if isinstance(flat, dict) else []
        out: list[Any] = []
        for i, item in enumerate(values):
            candidates = [item, *pool, *_variants(item, i)]
            out.append(next((c for c in candidates if c not in out and self.valid(c, items)), item))
        return out


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
    found = []
    if isinstance(schema.get("pattern"), str):
        found += _from_pattern(schema["pattern"], low)
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


def _from_pattern(pattern: str, min_length: int) -> list[str]:
    """Strings built to match `pattern`: repeats at their minimum, then longer; lookaheads tried two ways."""
    try:
        parsed = sre_parse.parse(pattern)
    except Exception:  # noqa: BLE001 - an ECMA-only regex; the schema check reports it
        return []
    out = []
    for extra in sorted({0, 1, 2, 4, min(max(0, min_length), 64)}):
        for inline in (True, False):
            builder = _RegexBuilder(extra, inline)
            text = builder.build(list(parsed.data)) + "".join(builder.tail)
            if text not in out:
                out.append(text)
    return out


_CATEGORY = {"DIGIT": "0", "WORD": "a", "SPACE": " ", "NOT_DIGIT": "a", "NOT_WORD": "-", "NOT_SPACE": "a"}


class _RegexBuilder:
    def __init__(self, extra: int, inline: bool) -> None:
        self.extra = extra
        self.inline = inline  # a lookahead's text written in place (True) or after the rest (False)
        self.groups: dict[int, str] = {}
        self.tail: list[str] = []

    def build(self, items: list[Any]) -> str:
        return "".join(self.item(op.name, av) for op, av in items)

    def item(self, name: str, av: Any) -> str:
        if name == "LITERAL":
            return chr(av)
        if name == "NOT_LITERAL":
            return "a" if chr(av) != "a" else "b"
        if name == "ANY":
            return "a"
        if name == "IN":
            return self.char(av)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = av
            count = low + self.extra if high == sre_parse.MAXREPEAT else min(high, low + self.extra)
            return "".join(self.build(list(sub)) for _ in range(count))
        if name == "SUBPATTERN":
            text = self.build(list(av[-1]))
            if av[0] is not None:
                self.groups[av[0]] = text
            return text
        if name == "ATOMIC_GROUP":
            return self.build(list(av))
        if name == "BRANCH":
            return self.build(list(av[1][0]))
        if name == "GROUPREF":
            return self.groups.get(av, "")
        if name == "GROUPREF_EXISTS":
            return self.build(list(av[1]))
        if name == "ASSERT" and av[0] == 1:  # positive lookahead
            text = self.build(list(av[1]))
            if self.inline:
                return text
            self.tail.append(text)
        return ""  # anchors, lookbehinds, negative lookaheads: the candidate check decides

    def char(self, items: list[Any]) -> str:
        negate = bool(items) and items[0][0].name == "NEGATE"
        if not negate:
            op, av = items[0]
            if op.name == "LITERAL":
                return chr(av)
            if op.name == "RANGE":
                return chr(av[0])
            if op.name == "CATEGORY":
                return _CATEGORY.get(av.name.replace("CATEGORY_", "").replace("UNI_", ""), "a")
            return "a"
        for candidate in "aA0_-. x":
            if not any(_in_class(candidate, op.name, av) for op, av in items[1:]):
                return candidate
        return "\u00e9"


def _in_class(ch: str, name: str, av: Any) -> bool:
    if name == "LITERAL":
        return ch == chr(av)
    if name == "RANGE":
        return av[0] <= ord(ch) <= av[1]
    if name == "CATEGORY":
        kind = av.name.replace("CATEGORY_", "").replace("UNI_", "")
        tests = {"DIGIT": ch.isdigit(), "WORD": ch.isalnum() or ch == "_", "SPACE": ch.isspace()}
        return tests.get(kind.replace("NOT_", ""), False) != kind.startswith("NOT_")
    return False
