"""Whether echoing a valid request's fields into an answer can break the answer's schema (decided once per answer).

The default answer copies request fields onto a body that fits the response schema, then checks the result. When
the request passed its own schema, that check can only fail if some echoed field may hold a value the response's
property refuses, or if the response schema constrains the object as a whole (a `maxProperties`, an `allOf`...).
`echo_keeps()` says True only when neither can happen, seen in the schemas themselves; any doubt says False.
"""

from __future__ import annotations

from collections.abc import Iterator

from plantstub.contract.flatten import def_key, defs_of
from plantstub.contract.model import Operation

# Keywords of a response schema that say nothing about properties it does not list, or that a body of its type
# keeps whatever values those properties take (`required`: echoing adds members, never takes one away).
_PLAIN = frozenset((
    "type", "properties", "required", "additionalProperties", "title", "description", "example", "examples",
    "default", "deprecated", "xml", "externalDocs", "$comment", "$defs",
))
_ANYTHING: tuple[object, ...] = (True, {})
_DEPTH = 32


def echo_keeps(op: Operation, response_schema: object, echo: tuple[str, ...]) -> bool:
    """True when a dict fitting `response_schema` stays fitting after any of `echo` is set from a request body
    that passed every request body schema of `op` (each property either taken by anything, or held to the same
    schema on the request side, or the request's whole body held to the response schema itself)."""
    defs = defs_of(response_schema)
    target = _target(response_schema, defs)
    if not isinstance(target, dict) or not set(target) <= _PLAIN:
        return False
    props = target.get("properties")
    if not isinstance(props, dict) or any(name not in props for name in echo):
        return False
    wanted = [name for name in echo if props.get(name) not in _ANYTHING]
    if not wanted:
        return True
    media = list((op.body or {}).values())
    if not media:
        return False
    for each in media:  # a body of any declared media type must keep the answer's schema
        schema = each.schema
        if not isinstance(schema, dict) or defs_of(schema) is not defs:  # refs read in one set of $defs only
            return False
        held = list(_implied(schema, defs, 0))
        if any(node is target for node in held):
            continue  # the request body itself passed the response schema
        for name in wanted:
            if not any(isinstance(theirs := node.get("properties"), dict) and name in theirs
                       and theirs[name] == props[name] for node in held):
                return False
    return True


def _target(schema: object, defs: dict[str, object]) -> object:
    """The schema a root that is only a `$ref` (and its `$defs`) names, followed to the end; else the root."""
    for _ in range(_DEPTH):
        if not isinstance(schema, dict) or set(schema) - {"$defs"} != {"$ref"}:
            return schema
        key = def_key(schema["$ref"])
        if key is None or key not in defs:
            return None
        schema = defs[key]
    return None


def _implied(schema: object, defs: dict[str, object], depth: int) -> Iterator[dict[str, object]]:
    """The schemas a value that passed `schema` surely passed too: itself, what its `$ref` names (its siblings left
    out: OpenAPI 3.0 ignores them), its `allOf` members, and so on down."""
    if depth > _DEPTH or not isinstance(schema, dict):
        return
    if "$ref" in schema:
        key = def_key(schema["$ref"])
        if key is not None and key in defs:
            yield from _implied(defs[key], defs, depth + 1)
        return
    yield schema
    members = schema.get("allOf")
    if isinstance(members, list):
        for member in members:
            yield from _implied(member, defs, depth + 1)
