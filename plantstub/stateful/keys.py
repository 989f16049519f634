"""Which field of a `--stateful` record holds its key, what assigning keys needs, and the envelope or array a body
may send records in."""

from __future__ import annotations

from typing import Any

from plantstub._json import shown
from plantstub.contract.compiled import Checks
from plantstub.contract.flatten import defs_of, types_of
from plantstub.contract.params import schema_types
from plantstub.contract.samples import sample
from plantstub.stateful.shapes import fields_of, flat_of, is_record, wrapper


def with_defs(schema: Any) -> tuple[Any, dict[str, Any]]:
    """A schema and its `$defs`."""
    return schema, defs_of(schema)


def _boundary(name: str, at: int) -> bool:
    """Whether a word of `name` starts at `at`: after `_`, `-` or `.`, or a capital after a small letter."""
    before, first = name[at - 1], name[at]
    return before in "_-." or (first.isupper() and before.islower())


def key_field(param: str, names: frozenset[str] | set[str]) -> str:
    """The records' field an item parameter names, as a server's would be found: the field named as the parameter,
    else so named in another case (Twilio's `sid` for `Sid`), else the longest whose name ends the parameter's at a
    word's start (Asana's `gid` for `allocation_gid`, `id` for `service_id`), else `id`, else the parameter."""
    if param in names:
        return param
    lower = param.lower()
    same = sorted(n for n in names if n.lower() == lower)
    if same:
        return same[0]
    tails = [n for n in names if 0 < len(n) < len(param) and lower.endswith(n.lower())
             and _boundary(param, len(param) - len(n))]
    if tails:
        return max(tails, key=lambda n: (len(n), n))
    return "id" if "id" in names else param


def envelope_of(body: Any, answers: list[Any]) -> str | None:
    """The one property a create body sends the record in, an object, that an answer also has (Asana's and
    PagerDuty's `{"data": {...}}`, `{"addon": {...}}`); None when the body is the record."""
    if body is None or isinstance(body, bool):
        return None
    defs = defs_of(body)
    props = flat_of(body, defs).get("properties")
    if not isinstance(props, dict) or len(props) != 1:
        return None
    (name, sub), = props.items()
    if not is_record(flat_of(sub, defs), defs):
        return None
    for whole in answers:
        if whole is None or isinstance(whole, bool):
            continue
        answer = flat_of(whole, defs_of(whole))
        if answer.get("type") == "array" or "items" in answer:
            continue
        found = answer.get("properties")
        if isinstance(found, dict) and name in found and is_record(flat_of(found[name], defs_of(whole)), defs_of(whole)):
            return name
    return None


def _rows(sub: Any, defs: dict[str, Any]) -> Any:
    """The items' schema of an array of objects with properties; None for anything else."""
    flat = flat_of(sub, defs)
    if flat.get("type") != "array" and "items" not in flat:
        return None
    items = flat.get("items", True)
    return items if fields_of(flat_of(items, defs)) is not None else None


def batch_of(body: Any, answers: list[Any], name: str) -> tuple[str, Any] | None:
    """Where a create body sends its records in an array: ("", the items' schema) for a body that is the array
    (Xero payroll's `[{...}]`), else (the property, its items' schema) for the array property of an object body that
    an answer has too, its only property or named as the collection, `name` (Xero's `{"Contacts": [{...}]}`), beside
    objects and arrays only."""
    if body is None or isinstance(body, bool):
        return None
    defs = defs_of(body)
    items = _rows(body, defs)
    if items is not None:
        return "", items
    props = flat_of(body, defs).get("properties")
    if not isinstance(props, dict):
        return None
    answered: set[str] = set()
    for whole in answers:
        if whole is not None and not isinstance(whole, bool):
            found = flat_of(whole, defs_of(whole)).get("properties")
            answered |= {p for p, sub in found.items() if _rows(sub, defs_of(whole)) is not None} \
                if isinstance(found, dict) else set()
    rows = {p: items for p, sub in props.items() if p in answered and (p.lower() == name.lower() or len(props) == 1)
            and (items := _rows(sub, defs)) is not None}
    # not a record's own array field (Xero's `Warnings`, opsramp's `escalations` beside a policy's `name`): the
    # body's other properties are objects and arrays (`pagination`, `Warnings`), none a record's text or number
    if any(not (types_of(flat_of(sub, defs), defs) or set()) <= {"object", "array"} for sub in props.values()):
        return None
    return next(iter(rows.items())) if len(rows) == 1 else None


def key_text(value: Any) -> str:
    """One spelling per key, as a path segment reads: 7 and "7" are the same record (every digit counts)."""
    kind = type(value)  # parsed JSON's own types first: a key is read on every create and read
    if kind is str:
        return value
    if kind is int:
        return str(value)
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else shown(value)


def has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def key_schemas(checks: Checks, key: str, param: Any, fields: frozenset[str],
                 records: list[tuple[Any, dict[str, Any]]]) -> dict[str, Any]:
    """What assigning keys needs: the key field's types and checks (in the records' and the answers'
    schemas, each with its `$defs`), generated keys the parameter and the field take, and an enum's values."""
    schemas: list[tuple[Any, dict[str, Any]]] = [(param, defs_of(param))] if param is not None else []
    for whole, defs in records:
        if whole is None or isinstance(whole, bool):
            continue
        flat = flat_of(whole, defs)
        wrapped = wrapper(flat, defs, fields | {key}, key)
        props = (wrapped[1] if wrapped else flat).get("properties")
        if isinstance(props, dict) and key in props and not isinstance(props[key], bool):
            schemas.append((props[key], defs))
    held = schemas[1:] if param is not None else schemas
    samples = [sample(s, d, checks=checks) for s, d in schemas]
    enums = [flat_of(s, d).get("enum") for s, d in schemas]
    return {
        "field_types": frozenset(schema_types(flat_of(*held[0]))) if held else frozenset(),
        "field_checks": tuple(checks.check(s, d or None) for s, d in held),
        "key_samples": tuple(dict.fromkeys(v for v in samples if isinstance(v, str) and v)),
        "key_enum": next((tuple(e) for e in enums if isinstance(e, list)), ()),
    }
