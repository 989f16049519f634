"""Make a small value that satisfies a bundled schema: the body of a default answer."""

from __future__ import annotations

from typing import Any

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
}
MAX_DEPTH = 12


def resolve(schema: Any, defs: dict[str, Any]) -> Any:
    """Follow a local `#/$defs/X` reference of a bundled schema (one level at a time)."""
    seen = 0
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < 64:
        target = defs.get(schema["$ref"].rsplit("/", 1)[-1], True)
        rest = {k: v for k, v in schema.items() if k not in ("$ref", "$defs")}
        schema = merge([target, rest], defs) if rest else target
        seen += 1
    return schema


def merge(parts: list[Any], defs: dict[str, Any]) -> Any:
    """Merge an allOf list into one schema (properties and required united, first type wins)."""
    out: dict[str, Any] = {}
    for part in parts:
        part = resolve(part, defs)
        if part is False:
            return False
        if not isinstance(part, dict):
            continue
        if "allOf" in part:
            part = {**{k: v for k, v in part.items() if k != "allOf"}, **_as_dict(merge(part["allOf"], defs))}
        for key, value in part.items():
            if key == "properties":
                out["properties"] = {**out.get("properties", {}), **value}
            elif key == "required":
                out["required"] = [*out.get("required", []), *[r for r in value if r not in out.get("required", [])]]
            elif key not in out:
                out[key] = value
    return out


def _as_dict(schema: Any) -> dict[str, Any]:
    return schema if isinstance(schema, dict) else {}


def flatten(schema: Any, defs: dict[str, Any]) -> Any:
    """The schema with its top-level $ref and allOf folded in."""
    schema = resolve(schema, defs)
    if isinstance(schema, dict) and "allOf" in schema:
        schema = merge([{k: v for k, v in schema.items() if k != "allOf"}, *schema["allOf"]], defs)
    return schema


def sample(schema: Any, defs: dict[str, Any] | None = None, depth: int = 0) -> Any:
    """A value that satisfies `schema`: const, enum, example, default, else built from the type."""
    if defs is None:
        defs = schema.get("$defs", {}) if isinstance(schema, dict) else {}
    schema = flatten(schema, defs)
    if not isinstance(schema, dict):
        return None if schema is False else {}
    for key in ("const",):
        if key in schema:
            return schema[key]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if isinstance(schema.get("examples"), list) and schema["examples"]:
        return schema["examples"][0]
    for key in ("example", "default"):
        if key in schema:
            return schema[key]
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            branches = [b for b in schema[key] if _kind(flatten(b, defs)) != "null"] or schema[key]
            rest = {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf")}
            return sample(merge([rest, branches[0]], defs) if rest else branches[0], defs, depth + 1)
    kind = _kind(schema)
    if kind == "object":
        value = {}
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            value[name] = sample(props.get(name, {}), defs, depth + 1) if depth < MAX_DEPTH else None
        return value
    if kind == "array":
        count = schema.get("minItems", 1 if depth < 3 else 0)
        if isinstance(schema.get("maxItems"), int):
            count = min(count, schema["maxItems"])
        prefix = schema.get("prefixItems", [])
        items = [sample(prefix[i] if i < len(prefix) else schema.get("items", {}), defs, depth + 1) for i in range(count)]
        return items
    if kind in ("integer", "number"):
        return _number(schema, kind)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _string(schema)


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
    if "minimum" in schema or "maximum" in schema:
        return "number"
    return "string" if ("format" in schema or "pattern" in schema or "minLength" in schema) else "object"


def _number(schema: dict[str, Any], kind: str) -> int | float:
    low = schema.get("minimum")
    if isinstance(schema.get("exclusiveMinimum"), (int, float)):
        low = schema["exclusiveMinimum"] + (1 if kind == "integer" else 0.5)
    high = schema.get("maximum")
    if isinstance(schema.get("exclusiveMaximum"), (int, float)):
        high = schema["exclusiveMaximum"] - (1 if kind == "integer" else 0.5)
    value: int | float = 0
    if isinstance(low, (int, float)) and value < low:
        value = low
    if isinstance(high, (int, float)) and value > high:
        value = high
    step = schema.get("multipleOf")
    if isinstance(step, (int, float)) and step > 0 and value % step:
        value = (value // step + 1) * step
    if kind == "integer":
        value = int(value) if value == int(value) else int(value) + 1
    return value


def _string(schema: dict[str, Any]) -> str:
    text = FORMAT_SAMPLES.get(schema.get("format", ""), "string")
    low, high = schema.get("minLength"), schema.get("maxLength")
    if isinstance(low, int) and len(text) < low:
        text = text + "x" * (low - len(text))
    if isinstance(high, int) and len(text) > high:
        text = text[:high]
    return text
