"""The building blocks of generated values: candidate numbers and strings, a schema's kind, and a candidate
made only when needed (contract/samples.py puts them together)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from plantstub.contract.flatten import is_number
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
_T = TypeVar("_T")
NONE: Any = object()  # no candidate at all: every way on comes back to a schema entered too often


def number(schema: dict[str, Any], key: str) -> float | None:
    """`schema[key]` when it is a number (not a boolean), else None."""
    value = schema.get(key)
    return value if is_number(value) else None


def of(schema: dict[str, Any], key: str, kind: type[_T], default: _T) -> _T:
    """`schema[key]` when it is a `kind`, else `default`: a schema written by hand may hold anything."""
    value = schema.get(key)
    return value if isinstance(value, kind) else default


class Later:
    """A candidate made only when the ones before it failed (an object with every property costs a lot)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make
        self.made: Any = NONE

    def __call__(self) -> Any:
        if self.made is NONE:
            self.made = self.make()
        return self.made


def made(candidate: Any) -> Any:
    return candidate() if isinstance(candidate, Later) else candidate


def admits(kinds: set[str], value: Any) -> bool:
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


def kind_of(schema: Any) -> str:
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


def variants(item: Any, i: int) -> list[Any]:
    if isinstance(item, bool):
        return [not item]
    if isinstance(item, (int, float)):
        return [item + i, item - i, item + i * 0.5]
    if isinstance(item, str):
        return [f"{item}{i}", item[:-1] + chr(ord("a") + i % 26) if item else str(i)]
    if isinstance(item, dict):
        return [{**item, f"key{i}": i}]
    return []


def numbers(schema: dict[str, Any], kind: str) -> list[int | float]:
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
    step = number(schema, "multipleOf")
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


def strings(schema: dict[str, Any]) -> list[str]:
    low: int = of(schema, "minLength", int, 0)
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
