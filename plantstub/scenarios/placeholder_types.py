"""What a lone `{{ request.X }}` placeholder gives, by the request schema, and whether the reply can take it.

A lone placeholder keeps the JSON type of the request value it points at, so `name: "{{ request.body.id }}"`
would serve an integer where the Plant Store promises a string. The scenario loader asks here, per
operation: which JSON types can this placeholder give (from the request body schema; headers, query
values, the path and the method are text), and which types does the response schema accept at the
place it sits. When none of the first is among the second, the rule is refused at load.
"""

from __future__ import annotations

from typing import NamedTuple, cast

from plantstub._json import MISSING, is_json, pick_json
from plantstub._words import did_you_mean
from plantstub.contract.flatten import JSON_TYPES, defs_of, flatten, types_of
from plantstub.contract.model import MediaType, Operation
from plantstub.contract.samples import sample
from plantstub.scenarios.templating import Ref

_UNKNOWN = None  # a schema that does not pin its type: anything may come, nothing to check


def _json_media(content: dict[str, MediaType] | None) -> MediaType | None:
    """The JSON media type a request body is read as (as the stub reads it), if one is declared."""
    name = pick_json(content or {})
    return content[name] if content and name is not None and is_json(name) else None


def fits(given: set[str], wanted: set[str]) -> bool:
    """Can a value of one of the `given` types be of a `wanted` type? (An integer is a number too.)"""
    return any(
        kind in wanted or (kind == "integer" and "number" in wanted) or (kind == "number" and "integer" in wanted)
        for kind in given
    )


def _branch_field(flat: dict[str, object], step: str, defs: dict[str, object]) -> tuple[object, bool]:
    """`step` as the branches of a oneOf/anyOf declare it: (its schemas as an anyOf, True), else (None, False)."""
    found = []
    # A valid schema's (checked at load): lists of schemas, when there
    for branch in cast("list[object]", flat.get("oneOf") or []) + cast("list[object]", flat.get("anyOf") or []):
        branch = flatten(branch, defs)
        props = branch.get("properties") if isinstance(branch, dict) else None
        if isinstance(props, dict) and step in props:
            found.append(props[step])
    return ({"anyOf": found} if len(found) > 1 else found[0], True) if found else (None, False)


def schema_at(schema: object, steps: tuple[str | int, ...]) -> tuple[object, str | None]:
    """The subschema at `steps` below `schema`: (subschema, None), (None, None) when unknowable, or (None, why not).

    Only a name that cannot be there is refused: under `additionalProperties: false`, or one that looks
    like a typo of a declared name (an open schema may carry any other name, so that is left to run time).
    """
    defs = defs_of(schema)
    node = schema
    for step in steps:
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
        properties: dict[str, object] = declared if isinstance(declared, dict) else {}
        extra = flat.get("additionalProperties")
        if step in properties:
            node = properties[step]
            continue
        branch, found = _branch_field(flat, step, defs)
        if found:
            node = branch
        elif isinstance(extra, dict):
            node = extra
        else:
            hint = did_you_mean(step, properties)
            if extra is False or hint:
                return None, f"{step!r} is not declared ({hint + ' ' if hint else ''}declared: " \
                             f"{', '.join(properties) or 'none'})"
            return None, None
    return node, None


class Source(NamedTuple):
    """What a lone placeholder gives for a request to one operation."""

    types: set[str] | None  # the JSON types it can have; None: not known
    sample: object  # a value of the request schema at that place, or MISSING
    problem: str | None  # why the placeholder cannot work, for a load error


def placeholder_source(op: Operation, ref: Ref) -> Source:
    """The types and a sample value of what a lone placeholder gives for a request to `op`."""
    if ref.field in ("path", "method") or (ref.field in ("headers", "query") and ref.steps):
        return Source({"string"}, "text", None)
    if ref.field in ("headers", "query"):
        return Source({"object"}, {}, None)
    media = _json_media(op.body)
    if media is None or media.schema is None:  # no JSON body: nothing to say before a request comes
        return Source(None, MISSING, None)
    schema, problem = schema_at(media.schema, ref.steps)
    if problem is not None:
        return Source(None, MISSING, f"the request body of {op.label}: {problem}")
    if schema is None:
        return Source(None, MISSING, None)
    defs = defs_of(media.schema)
    try:
        value = sample(schema, defs)
    except (RecursionError, ValueError, TypeError):
        value = MISSING
    return Source(types_of(schema, defs), value, None)


def wanted_types(response_schema: object, steps: tuple[str | int, ...]) -> set[str] | None:
    """The JSON types the response schema accepts at `steps` below the body (None: any, or unknowable)."""
    schema, problem = schema_at(response_schema, steps)
    if schema is None or problem is not None:
        return _UNKNOWN  # an undeclared response field is the body check's business
    return types_of(schema, defs_of(response_schema))


def describe(kinds: set[str]) -> str:
    """{"integer"} -> "an integer"; {"string", "null"} -> "a string or null"."""
    ordered = [k for k in JSON_TYPES if k in kinds]
    words = [k if k == "null" else ("an " if k[0] in "aeiou" else "a ") + k for k in ordered]
    return " or ".join(words) if words else "nothing"
