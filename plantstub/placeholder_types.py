"""What a lone `{{ request.X }}` placeholder gives, by the request schema, and whether the reply can take it.

A lone placeholder keeps the JSON type of the request value it points at, so `name: "{{ request.body.id }}"`
would serve an integer where the Plant Store promises a string. The scenario loader asks here, per
operation: which JSON types can this placeholder give (from the request body schema; headers, query
values, the path and the method are text), and which types does the response schema accept at the
place it sits. When none of the first is among the second, the rule is refused at load.
"""

from __future__ import annotations

import difflib
from typing import Any

from .generate import flatten
from .spec import MediaType, Operation
from .templating import Ref

JSON_TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")
_UNKNOWN = None  # a schema that does not pin its type: anything may come, nothing to check


def _defs(schema: Any) -> dict[str, Any]:
    return schema.get("$defs", {}) if isinstance(schema, dict) else {}


def _json_media(content: dict[str, MediaType] | None) -> MediaType | None:
    for media in (content or {}).values():
        name = media.name.split(";", 1)[0].strip().lower()
        if name == "application/json" or name.endswith("+json"):
            return media
    return None


def types_of(schema: Any, defs: dict[str, Any], depth: int = 0) -> set[str] | None:
    """The JSON types `schema` admits, or None when it does not say (no `type`, `const` or `enum`)."""
    if schema is True or depth > 16:
        return _UNKNOWN
    if schema is False:
        return set()
    flat = flatten(schema, defs)
    if not isinstance(flat, dict):
        return _UNKNOWN
    kind = flat.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list) and all(isinstance(k, str) for k in kind):
        return set(kind)
    values = [flat["const"]] if "const" in flat else flat.get("enum")
    if isinstance(values, list):
        return {_type_of(v) for v in values}
    branches = flat.get("anyOf") or flat.get("oneOf")
    if isinstance(branches, list) and branches:
        found: set[str] = set()
        for branch in branches:
            kinds = types_of(branch, defs, depth + 1)
            if kinds is None:
                return _UNKNOWN
            found |= kinds
        return found
    return _UNKNOWN


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def fits(given: set[str], wanted: set[str]) -> bool:
    """Can a value of one of the `given` types be of a `wanted` type? (An integer is a number too.)"""
    return any(
        kind in wanted or (kind == "integer" and "number" in wanted) or (kind == "number" and "integer" in wanted)
        for kind in given
    )


def schema_at(schema: Any, steps: tuple[str | int, ...]) -> tuple[Any, str | None]:
    """The subschema at `steps` below `schema` ((schema, None)), None when unknowable, or (None, why not)."""
    defs = _defs(schema)
    node = schema
    for at, step in enumerate(steps):
        flat = flatten(node, defs)
        if not isinstance(flat, dict):
            return None, None
        if isinstance(step, int):
            prefix = flat.get("prefixItems")
            if isinstance(prefix, list) and step < len(prefix):
                node = prefix[step]
            elif isinstance(flat.get("items"), (dict, bool)):
                node = flat["items"]
            else:
                return None, None
            continue
        declared = flat.get("properties")
        properties: dict[str, Any] = declared if isinstance(declared, dict) else {}
        extra = flat.get("additionalProperties")
        if step in properties:
            node = properties[step]
        elif isinstance(extra, dict):
            node = extra
        elif properties or extra is False:
            # A name the schema does not declare is most likely a typo: say so at load, not at run time.
            close = difflib.get_close_matches(step, list(properties), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            known = ", ".join(properties) or "none"
            where = "a field of it" if at == 0 else "declared there"
            return None, f"{step!r} is not {where} ({hint}fields: {known})"
        else:
            return None, None
    return node, None


def placeholder_types(op: Operation, ref: Ref) -> tuple[set[str] | None, str | None]:
    """The JSON types a lone placeholder can give for a request to `op` (None: any), or why it gives nothing."""
    if ref.field in ("path", "method"):
        return {"string"}, None
    if ref.field in ("headers", "query"):
        return ({"string"} if ref.steps else {"object"}), None
    if not op.body:
        return None, f"{op.label} declares no request body, so this is always missing"
    media = _json_media(op.body)
    if media is None or media.schema is None:
        return _UNKNOWN, None
    schema, problem = schema_at(media.schema, ref.steps)
    if problem is not None:
        return None, f"the request body of {op.label}: {problem}"
    if schema is None:
        return _UNKNOWN, None
    return types_of(schema, _defs(media.schema)), None


def wanted_types(response_schema: Any, steps: tuple[str | int, ...]) -> set[str] | None:
    """The JSON types the response schema accepts at `steps` below the body (None: any, or unknowable)."""
    schema, problem = schema_at(response_schema, steps)
    if schema is None or problem is not None:
        return _UNKNOWN  # an undeclared response field is the body check's business
    return types_of(schema, _defs(response_schema))


def describe(kinds: set[str]) -> str:
    """{"integer"} -> "an integer"; {"string", "null"} -> "a string or null"."""
    ordered = [k for k in JSON_TYPES if k in kinds]
    words = [k if k == "null" else ("an " if k[0] in "aeiou" else "a ") + k for k in ordered]
    return " or ".join(words) if words else "nothing"
