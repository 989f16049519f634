"""Values for the sweep's requests: minimal values generated from a schema, and the one believed valid.

A value is believed valid when it passes `Document.errors` (see `sweep_oas.py`); the spec's own
examples are tried first, then generated values (schema examples and defaults, then without them,
then other `oneOf`/`anyOf` options). Patterns are met by guesses, then by a string built from the
pattern's parse (first branch, minimum repeats).
"""

from __future__ import annotations

import math
import re
from typing import Any

from sweep_oas import Document, NoValue, mapping, pointer_get

FORMATS = {
    "date-time": "2024-01-15T10:20:30Z", "date": "2024-01-15", "time": "10:20:30Z", "email": "user@example.com",
    "idn-email": "user@example.com", "uuid": "3fa85f64-5717-4562-b3fc-2c963f66afa6", "uri": "https://example.com/x",
    "url": "https://example.com/x", "iri": "https://example.com/x", "uri-reference": "/x", "hostname": "example.com",
    "ipv4": "192.0.2.1", "ipv6": "2001:db8::1", "byte": "eHl6", "binary": "x", "password": "secret", "duration": "P1D",
    "json-pointer": "/a", "regex": "a", "phone": "+12025550100", "uri-template": "https://example.com/{x}",
}
GUESSES = ["x", "a", "A", "1", "abc", "ABC", "123", "a1", "2024-01-15", "user@example.com", "+12025550100",
           "3fa85f64-5717-4562-b3fc-2c963f66afa6", "US", "USD", "en", "en-US", "https://example.com", "ab_cd", "a-b",
           "AB12", "1.0", "10:20", "abc123"]


def fits(text: str, pattern: str | None, lo: int, hi: float) -> bool:
    if not lo <= len(text) <= hi:
        return False
    if pattern is None:
        return True
    try:
        import regex
        return regex.search(pattern, text, timeout=0.1) is not None
    except Exception:
        return False


try:
    import re._parser as _sre  # type: ignore[import-not-found]
except ImportError:  # Python 3.10
    import sre_parse as _sre  # type: ignore[no-redef]

_PROPS = {"L": "[a-zA-Z]", "Lu": "[A-Z]", "Ll": "[a-z]", "N": "[0-9]", "Nd": "[0-9]"}


def from_pattern(pattern: str, extra: int) -> str:
    """A string the pattern matches: the first branch, each repeat its minimum plus `extra` (capped)."""
    pattern = re.sub(r"\\[pP]\{(\w+)\}", lambda m: _PROPS.get(m.group(1), "[a-zA-Z0-9]"), pattern)
    return _emit(_sre.parse(pattern), extra)


def _emit(items: Any, extra: int) -> str:
    out = []
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "NOT_LITERAL":
            out.append("a" if arg != ord("a") else "b")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(_one_of(arg))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            lo, hi, sub = arg
            count = lo + extra if hi == _sre.MAXREPEAT else min(hi, lo + extra)
            out.append(_emit(sub, extra) * count)
        elif name == "SUBPATTERN":
            out.append(_emit(arg[-1], extra))
        elif name == "ATOMIC_GROUP":
            out.append(_emit(arg, extra))
        elif name == "BRANCH":
            out.append(_emit(arg[1][0], extra))
        elif name == "CATEGORY":
            out.append(_category(str(arg)))
        elif name in ("AT", "ASSERT", "ASSERT_NOT") or name == "GROUPREF":
            continue
        else:
            raise NoValue(f"pattern element {name}")
    return "".join(out)


def _category(name: str) -> str:
    return {"CATEGORY_DIGIT": "0", "CATEGORY_SPACE": " ", "CATEGORY_WORD": "a"}.get(name, "a")


def _one_of(items: list) -> str:
    negate = any(str(op) == "NEGATE" for op, _ in items)
    if negate:
        for c in "aA0-_x":
            if not any(_in(op, arg, c) for op, arg in items if str(op) != "NEGATE"):
                return c
        raise NoValue("negated class")
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            return chr(arg)
        if name == "RANGE":
            return chr(arg[0])
        if name == "CATEGORY":
            return _category(str(arg))
    raise NoValue("empty class")


def _in(op: Any, arg: Any, c: str) -> bool:
    name = str(op)
    if name == "LITERAL":
        return chr(arg) == c
    if name == "RANGE":
        return arg[0] <= ord(c) <= arg[1]
    if name == "CATEGORY":
        return bool(re.match({"CATEGORY_DIGIT": r"\d", "CATEGORY_SPACE": r"\s"}.get(str(arg), r"\w"), c))
    return False


def string_for(s: dict) -> str:
    lo, hi = int(s.get("minLength", 0) or 0), s.get("maxLength", math.inf)
    pattern = s.get("pattern") if isinstance(s.get("pattern"), str) else None
    fmt = FORMATS.get(str(s.get("format")))
    for guess in ([fmt] if fmt else []) + GUESSES + ["x" * max(lo, 1), "1" * max(lo, 1), "a" * max(lo, 1)]:
        if fits(guess, pattern, lo, hi):
            return guess
    if pattern:
        for extra in (0, 1, 2, 4, 8, 16, 32, 64, 128):
            try:
                text = from_pattern(pattern, extra)
            except (NoValue, re.error, RecursionError, OverflowError):
                break
            if fits(text, pattern, lo, hi):
                return text
    raise NoValue("no string fits")


def number_for(s: dict, integer: bool) -> int | float:
    lo, hi = s.get("minimum"), s.get("maximum")
    xlo, xhi = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
    step = s.get("multipleOf") if isinstance(s.get("multipleOf"), int | float) and s.get("multipleOf") else None
    low = -math.inf if lo is None else lo
    if isinstance(xlo, int | float) and not isinstance(xlo, bool):
        low = max(low, xlo + (step or (1 if integer else 1e-6)))
    high = math.inf if hi is None else hi
    if isinstance(xhi, int | float) and not isinstance(xhi, bool):
        high = min(high, xhi - (step or (1 if integer else 1e-6)))
    value: float = 1 if low <= 1 <= high else (low if low != -math.inf else high)
    if step:
        value = math.ceil(value / step) * step
    if integer or (float(value).is_integer() and not step):
        return math.ceil(value) if integer else int(value)
    return value


class Generator:
    """A minimal value for a schema of a document; `plain` ignores schema examples, `choice` picks oneOf options."""

    def __init__(self, doc: Document, plain: bool, choice: int, flavor: str = "request") -> None:
        self.doc, self.plain, self.choice, self.flavor = doc, plain, choice, flavor

    def value(self, s: Any, uri: str, depth: int = 0) -> Any:
        if depth > 15:
            raise NoValue("too deep")
        if not isinstance(s, dict):
            if s is False:
                raise NoValue("false schema")
            return "x"
        if "$ref" in s:
            target, uri, _ = self.doc.deref({"$ref": s["$ref"]}, uri, "", self.flavor)
            rest = {k: v for k, v in s.items() if k != "$ref"}
            return self.value({**target, **rest} if rest and isinstance(target, dict) else target, uri, depth + 1)
        if "const" in s:
            return s["const"]
        if isinstance(s.get("enum"), list) and s["enum"]:
            return next((e for e in s["enum"] if e is not None), None)
        if not self.plain:
            for key in ("example", "default"):
                if key in s and s[key] is not None:
                    return s[key]
            if isinstance(s.get("examples"), list) and s["examples"]:
                return s["examples"][0]
        if isinstance(s.get("allOf"), list):
            return self.value(self.merge(s, uri, depth), uri, depth + 1)
        for key in ("oneOf", "anyOf"):
            options = s.get(key)
            if isinstance(options, list) and options:
                picked = options[self.choice % len(options)]
                picked, puri, _ = self.doc.deref(picked, uri, "", self.flavor)
                rest = {k: v for k, v in s.items() if k not in (key, "discriminator")}
                if isinstance(picked, dict) and rest:
                    return self.value({"allOf": [rest, picked]} if puri == uri else picked, puri, depth + 1)
                return self.value(picked, puri, depth + 1)
        kind = s.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind is None:
            kind = ("object" if "properties" in s or "required" in s else "array" if "items" in s
                    else "string" if {"pattern", "format", "minLength"} & set(s) else None)
        if kind == "object":
            return self.object(s, uri, depth)
        if kind == "array":
            count = int(s.get("minItems", 0) or 0)
            if count == 0:
                return []
            items = s.get("items", s.get("prefixItems", [{}]))
            if isinstance(items, list):
                return [self.value(items[min(i, len(items) - 1)] if items else {}, uri, depth + 1) for i in range(count)]
            return [self.value(items, uri, depth + 1) for _ in range(count)]
        if kind in ("integer", "number"):
            return number_for(s, kind == "integer")
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        if kind == "string":
            return string_for(s)
        return "x"

    def object(self, s: dict, uri: str, depth: int) -> dict:
        props = mapping(s, "properties")
        out = {}
        for name in s.get("required") or []:
            sub = props.get(name, s.get("additionalProperties", {}))
            if isinstance(sub, dict) and sub.get("readOnly") is True and self.flavor == "request":
                continue
            out[name] = self.value(sub if sub is not True else {}, uri, depth + 1)
        for name, sub in props.items():
            if len(out) >= int(s.get("minProperties", 0) or 0):
                break
            out.setdefault(name, self.value(sub, uri, depth + 1))
        return out

    def merge(self, s: dict, uri: str, depth: int) -> dict:
        """allOf folded into one schema: properties and required joined, other keys the first seen."""
        merged: dict = {k: v for k, v in s.items() if k != "allOf"}
        for part in s["allOf"]:
            part, _, _ = self.doc.deref(part, uri, "", self.flavor)
            if isinstance(part, dict) and isinstance(part.get("allOf"), list):
                part = self.merge(part, uri, depth + 1)
            if not isinstance(part, dict):
                continue
            for key, value in part.items():
                if key == "properties" and isinstance(value, dict):
                    merged["properties"] = {**value, **merged.get("properties", {})}
                elif key == "required" and isinstance(value, list):
                    merged["required"] = list(dict.fromkeys([*merged.get("required", []), *value]))
                else:
                    merged.setdefault(key, value)
        return merged


ATTEMPTS = [(False, 0), (True, 0), (True, 1), (True, 2)]


def examples_of(node: dict, doc: Document, uri: str) -> list:
    out = [node["example"]] if "example" in node else []
    if isinstance(node.get("examples"), dict):
        for ex in node["examples"].values():
            try:
                ex, _, _ = doc.deref(ex, uri, "")
            except NoValue:
                continue
            if isinstance(ex, dict) and "value" in ex:
                out.append(ex["value"])
    return out


def believed_valid(doc: Document, holder: dict, uri: str, ptr: str, nonempty: bool = False) -> Any:
    """An example of `holder` (a parameter or media type) or a generated value that passes the check."""
    if holder.get("schema") is None:
        return "x"
    schema = pointer_get(doc.converted(uri, "request"), f"{ptr}/schema")
    candidates = examples_of(holder, doc, uri)
    for plain, choice in ATTEMPTS:
        try:
            value = Generator(doc, plain, choice).value(schema, uri)
        except (NoValue, RecursionError):
            continue
        except Exception:
            continue
        candidates.append(value)
        if nonempty and value in ([], {}, ""):
            try:
                inner = Generator(doc, plain, choice).value(schema.get("items", {}), uri) if isinstance(schema, dict) else None
                candidates.append([inner])
            except Exception:
                pass
    for value in candidates:
        if nonempty and value in ([], {}, "", None):
            continue
        if doc.errors(value, uri, f"{ptr}/schema", "request") is None:
            return value
    raise NoValue("no value passes the schema" if candidates else "no value could be made")
