"""Reading a bundled schema: follow its local `$ref`s and fold `allOf` into one schema.

Bundled schemas (contract/bundle.py) keep every reference target under the root's `$defs`; everything
that looks inside a schema (samples, default answers, parameter types, placeholder types) reads it here, and
`public` takes out of a value what its schema marks `writeOnly` (the one filter of every answer).
"""

from __future__ import annotations

from typing import TypeGuard, cast

from plantstub._memo import IdentityMemo

JSON_TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")
DEFS = "#/$defs/"  # where a bundled schema keeps what its `$ref`s name
_UNKNOWN = None  # a schema that does not pin its type: anything may come
_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")


def defs_of(schema: object) -> dict[str, object]:
    """The `$defs` of a bundled schema (empty when it has none)."""
    defs = schema.get("$defs") if isinstance(schema, dict) else None
    return defs if isinstance(defs, dict) else {}


def def_key(ref: object) -> str | None:
    """The `$defs` key a bundled schema's `$ref` value names (None: not a `#/$defs/` reference)."""
    return ref[len(DEFS):] if isinstance(ref, str) and ref.startswith(DEFS) else None


def is_number(value: object) -> TypeGuard[int | float]:
    """A JSON number: an int or a float, not a boolean."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def resolve(schema: object, defs: dict[str, object]) -> object:
    """Follow a local `#/$defs/X` reference of a bundled schema (one level at a time)."""
    return _resolve(schema, defs, frozenset())[0]


def marked(prop: object, keyword: str, defs: dict[str, object]) -> bool:
    """Is a property's schema marked `keyword` (`readOnly`, `writeOnly`): itself, or the schema its `$ref` names?"""
    if not isinstance(prop, dict):
        return False
    if prop.get(keyword) is True:
        return True
    key = def_key(prop.get("$ref"))
    target = None if key is None else defs.get(key)
    return isinstance(target, dict) and target.get(keyword) is True


def merge(parts: list[object], defs: dict[str, object]) -> object:
    """Merge an allOf list into one schema: properties and required united, the stricter bound kept."""
    return _merge(parts, defs, frozenset())


def flatten(schema: object, defs: dict[str, object]) -> object:
    """The schema with its top-level $ref and allOf folded in."""
    return _flatten(schema, defs, frozenset())[0]


def flatten_keys(schema: object, defs: dict[str, object]) -> tuple[object, frozenset[str]]:
    """flatten(), and the `$defs` keys it went through in place (to see a schema come back to itself)."""
    return _flatten(schema, defs, frozenset())


# `within`: the `$defs` keys being folded in at this place of the value. A `$ref` back to one of them (an
# allOf loop: A is allOf [B], B is allOf [A]) adds nothing that is not being added already: it reads as `true`,
# as jsonschema-rs reads it when it meets the same schema again at the same place.
def _resolve(schema: object, defs: dict[str, object], within: frozenset[str]) -> tuple[object, frozenset[str]]:
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        key = schema["$ref"].rsplit("/", 1)[-1]
        rest = {k: v for k, v in schema.items() if k not in ("$ref", "$defs")}
        if key in within:
            return (rest or True), within
        within = within | {key}
        target = defs.get(key, True)
        schema = _merge([target, rest], defs, within) if rest else target
    return schema, within


def _flatten(schema: object, defs: dict[str, object], within: frozenset[str]) -> tuple[object, frozenset[str]]:
    schema, within = _resolve(schema, defs, within)
    if isinstance(schema, dict) and isinstance(schema.get("allOf"), list):
        schema = _merge([{k: v for k, v in schema.items() if k != "allOf"}, *schema["allOf"]], defs, within)
    return schema, within


def _merge(parts: list[object], defs: dict[str, object], within: frozenset[str]) -> object:
    out: dict[str, object] = {}
    for part in parts:
        part = _flatten(part, defs, within)[0]
        if part is False:
            return False
        if not isinstance(part, dict):
            continue
        for key, value in part.items():
            if key not in out:
                out[key] = value
            elif key == "properties" and isinstance(value, dict):
                props = dict(cast("dict[str, object]", out[key]))  # a valid schema's: checked at load
                for name, sub in value.items():
                    props[name] = {"allOf": [props[name], sub]} if name in props else sub
                out[key] = props
            elif key == "required" and isinstance(value, list):
                kept = cast("list[object]", out[key])  # a valid schema's: checked at load
                out[key] = [*kept, *[r for r in value if r not in kept]]
            elif key in _LOWER_BOUNDS and is_number(value) and is_number(bound := out[key]):
                out[key] = max(bound, value)
            elif key in _UPPER_BOUNDS and is_number(value) and is_number(bound := out[key]):
                out[key] = min(bound, value)
            elif key == "type":
                out[key] = _meet_types(out[key], value)
            elif key == "enum" and isinstance(value, list) and isinstance(enum := out[key], list):
                both = [v for v in enum if v in value]
                out[key] = both or enum
            elif key in ("items", "additionalProperties", "contains", "propertyNames"):
                out[key] = False if False in (value, out[key]) else {"allOf": [out[key], value]}
    return out


def _meet_types(a: object, b: object) -> object:
    """The types both `a` and `b` allow (an integer is a number too); `a` when they share none."""
    left, right = (t if isinstance(t, list) else [t] for t in (a, b))

    def admits(kinds: list[object], kind: object) -> bool:
        return kind in kinds or (kind == "integer" and "number" in kinds)

    both = list(dict.fromkeys(t for t in [*left, "integer"] if admits(left, t) and admits(right, t)))
    return (both[0] if len(both) == 1 else both) if both else a


def types_of(schema: object, defs: dict[str, object], depth: int = 0) -> set[str] | None:
    """The JSON types `schema` admits, or None when it does not say (no `type`, `const` or `enum`)."""
    return _types(schema, defs, depth, frozenset())


def _types(schema: object, defs: dict[str, object], depth: int, within: frozenset[str]) -> set[str] | None:
    if schema is True or depth > 16:
        return _UNKNOWN
    if schema is False:
        return set()
    flat, keys = _flatten(schema, defs, within)
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
            kinds = _types(branch, defs, depth + 1, keys)  # a branch back to `schema` itself: anything (True)
            if kinds is None:
                return _UNKNOWN
            found |= kinds
        return found
    return _UNKNOWN


def _type_of(value: object) -> str:
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


def public(value: object, schema: object, defs: dict[str, object], seen: IdentityMemo[tuple[dict[str, object], frozenset[str], object]] | None = None, depth: int = 0) -> object:
    """`value` without the members its schema marks `writeOnly`: what an answer may show of it (an echoed request
    field, a declared example: no password).

    `seen` keeps each schema's reading, so a list of 30,000 items costs one flatten, not 30,000."""
    seen = IdentityMemo() if seen is None else seen
    entry = seen.get(schema)
    if entry is None:
        flat = flatten(schema, defs)
        props: dict[str, object] = flat["properties"] if isinstance(flat, dict) and isinstance(
            flat.get("properties"), dict) else {}
        hidden = frozenset(name for name, sub in props.items() if marked(sub, "writeOnly", defs))
        items = flat.get("items") if isinstance(flat, dict) and isinstance(flat.get("items"), dict) else None
        entry = seen.put(schema, (props, hidden, items))
    props, hidden, items = entry
    if depth > 32:
        return value
    if isinstance(value, dict) and props:
        return {k: public(v, props[k], defs, seen, depth + 1) if k in props else v
                for k, v in value.items() if k not in hidden}
    if isinstance(value, list) and items is not None:
        return [public(v, items, defs, seen, depth + 1) for v in value]
    return value
