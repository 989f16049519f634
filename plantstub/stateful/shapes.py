"""The shape of a `--stateful` answer: the record's fields it shows, a wrapper around them, the fields it
requires (each with a generated value) and the type it gives the key."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from plantstub._json import JSON, concrete, pick_json
from plantstub.contract.answers import answer_key, sends_no_body, status_of
from plantstub.contract.compiled import Checks
from plantstub.contract.flatten import defs_of, flatten
from plantstub.contract.model import Operation
from plantstub.contract.params import schema_types
from plantstub.contract.samples import sample
from plantstub.contract.schema import SchemaCheck
from plantstub.stateful.branches import Branch, branch_of, pick


@dataclass(frozen=True, slots=True)
class Shape:
    """How stored records appear in an answer: the declared status, and the fields its schema lists."""

    status: int
    has_body: bool
    many: bool  # an array of records
    fields: tuple[str, ...] | None  # None: the whole record
    content_type: str | None
    wrap: str | None = None  # the one property of a wrapper answer (`{"user": {...}}`) that holds the record
    defaults: tuple[tuple[str, Any], ...] = ()  # the record's required fields, each with a generated value
    key: str | None = None  # the key field, when the answer types it otherwise than records may hold it
    key_type: str | None = None  # "integer" or "string": what the answer says the key is
    # Fields the answer declares otherwise than records hold them (an array sent, a map answered): (name, the
    # answer's check, its generated value, required). A value the check refuses is shown as the generated one
    # where the answer requires the field, else left out; the record keeps what was sent.
    conform: tuple[tuple[str, SchemaCheck, Any, bool], ...] = ()
    # The wrapper's other properties it requires (Xero's `pagination`), each with a generated value.
    around: tuple[tuple[str, Any], ...] = ()
    rows: bool = False  # the wrapper's property is an array of records (Xero's `{"Contacts": [{...}], "Id": ...}`)
    # A choice of objects (`oneOf`): its branches, one picked per record (stateful/branches.py), and whether one
    # is closed (`additionalProperties: false`: the record's other fields are left out of the answer).
    choice: tuple[Branch, ...] = ()
    closed: bool = False
    only_key: str | None = None  # the answer is the record's key alone (a create answering the new id), typed key_type
    # Made from the above, once (a create, a read, an update each shows a record): whether the answer is the record as
    # held (no field left out, renamed, retyped or wrapped); the declared fields when show() only picks those (None:
    # show() has more to do, or nothing to pick); whether the answer sends no body; its media type.
    whole: bool = field(init=False, default=False)
    picks: tuple[str, ...] | None = field(init=False, default=None)
    silent: bool = field(init=False, default=False)
    media: str = field(init=False, default=JSON)

    def __post_init__(self) -> None:
        plain = not self.conform and self.wrap is None and not self.closed and self.only_key is None
        object.__setattr__(self, "whole", plain and self.fields is None)
        object.__setattr__(self, "picks", self.fields if plain and self.key is None else None)
        object.__setattr__(self, "silent", not self.has_body or sends_no_body(self.status))
        object.__setattr__(self, "media", self.content_type or JSON)

    def show(self, record: dict[str, Any]) -> Any:
        """`record` projected onto the declared fields (the Plant Store's answers show `name` and `tag`)."""
        if self.only_key is not None:
            return _as_type(record.get(self.only_key), self.key_type)
        shown = record if self.fields is None else {name: record[name] for name in self.fields if name in record}
        if self.closed:
            allowed = pick(self.choice, record).closed
            if allowed is not None:
                shown = {name: value for name, value in shown.items() if name in allowed}
        if self.key is not None and self.key in shown:
            shown = {**shown, self.key: _as_type(shown[self.key], self.key_type)}
        for name, check, value, required in self.conform:
            if name in shown and not check.is_valid(shown[name]):
                shown = dict(shown) if shown is record else shown
                if required:
                    shown[name] = value
                else:
                    del shown[name]
        if self.wrap is None:
            return shown
        return {**dict(self.around), self.wrap: [shown] if self.rows else shown}

    def show_batch(self, records: list[dict[str, Any]]) -> Any:
        """The answer to a create of several records (sent in an array): in the wrapper's array, else the array an
        answer of many is, else the first record as show() shows it."""
        if self.wrap is not None and self.rows:
            return {**dict(self.around), self.wrap: [self.show(r)[self.wrap][0] for r in records]}
        if self.many:
            return self.show_all(records)
        return self.show(records[0])

    def show_all(self, records: Iterable[dict[str, Any]]) -> list[Any]:
        """show() of each record, in one pass (a list answer's whole cost is here)."""
        fields = self.fields
        if self.wrap is not None or self.key is not None or self.conform or self.closed or self.only_key is not None:
            return [self.show(record) for record in records]
        if fields is None:
            return list(records)
        return [{name: record[name] for name in fields if name in record} for record in records]


def _as_type(value: Any, kind: str | None) -> Any:
    """A key as an answer types it: 7 for "7" where it says integer, "7" for 7 where it says string."""
    if kind == "string" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if kind == "integer" and isinstance(value, str) and value.lstrip("-").isdigit() and len(value) < 4300:
        return int(value)
    return value


def flat_of(schema: Any, defs: dict[str, Any]) -> dict[str, Any]:
    flat = flatten(schema, defs)
    return flat if isinstance(flat, dict) else {}


def fields_of(flat: dict[str, Any]) -> tuple[str, ...] | None:
    props = flat.get("properties")
    if not isinstance(props, dict) or not props or flat.get("oneOf") or flat.get("anyOf"):
        return None
    return tuple(props)


def _inner(sub: Any, defs: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """A wrapper property's flattened schema, or its items' when it is an array of objects (Xero's `Contacts`),
    and whether it is that array."""
    inner = flat_of(sub, defs)
    if inner.get("type") == "array" or "items" in inner:
        items = flat_of(inner.get("items", True), defs)
        if fields_of(items) is not None:
            return items, True
    return inner, False


def is_record(flat: dict[str, Any], defs: dict[str, Any]) -> bool:
    """Whether `flat` is what a record is: an object of properties, or a choice of them (PagerDuty's `oneOf` of
    action kinds), whose fields are then unknown (the whole record is shown)."""
    return fields_of(flat) is not None or bool(_branches(flat, defs))


def _branches(flat: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    """The flattened branches of a choice of objects (is_record()'s `oneOf`, `anyOf`); [] for anything else."""
    choice = flat.get("oneOf") or flat.get("anyOf")
    if fields_of(flat) is not None or not isinstance(choice, list):
        return []
    branches = [flat_of(c, defs) for c in choice]
    return branches if branches and all(fields_of(b) is not None for b in branches) else []


def _choice(flat: dict[str, Any], defs: dict[str, Any]) -> list[Any]:
    """The branches of a choice of objects as written (each checked as it is); [] for anything else."""
    return list(flat.get("oneOf") or flat.get("anyOf") or ()) if _branches(flat, defs) else []


def choice_fields(flat: dict[str, Any], defs: dict[str, Any]) -> frozenset[str]:
    """Every field some branch of a choice of objects has (where its key field is looked for: Discord's `id`)."""
    return frozenset(name for b in _branches(flat, defs) for name in fields_of(b) or ())


def wrapper(flat: dict[str, Any], defs: dict[str, Any], fields: frozenset[str],
            key: str | None = None) -> tuple[str, dict[str, Any], bool] | None:
    """(the property, its flattened schema) when `flat` wraps a record in a property (`{"user": {...}}`): an object
    the records have no field of that name for, its one property; or, of several properties none of which is a
    record field, the one object sharing the most fields with the records (Xero's `{"pagination", "problem",
    "employee": {...}}`, a tie: none); an array of such objects holds the record too (Xero's `{"Contacts": [{...}],
    "Id": ...}`: the third of the triple says so). Some may be record fields when the `key` is not among them and they are
    fewer than half (apideck's `{"status_code", "status", "data": {...}}`)."""
    props = flat.get("properties")
    if not isinstance(props, dict) or not props or not fields:
        return None
    named = fields & set(props)
    if named and (key is None or key in named or len(named) * 2 >= len(props)):
        return None
    if len(props) == 1:
        (name, sub), = props.items()
        inner, rows = _inner(sub, defs)
        if rows and not fields & set(fields_of(inner) or ()):
            return None  # an array of other things (PayPal's `links`): no place for the record
        return (name, inner, rows) if is_record(inner, defs) else None
    best: list[tuple[int, str, dict[str, Any], bool]] = []
    for name, sub in props.items():
        if name in named:
            continue
        inner, rows = _inner(sub, defs)
        shared = len(fields & set(fields_of(inner) or ()))
        if shared:
            best.append((shared, name, inner, rows))
    best.sort(key=lambda b: -b[0])
    if not best or (len(best) > 1 and best[0][0] == best[1][0]):
        return None
    return best[0][1], best[0][2], best[0][3]


def _names(flat: dict[str, Any]) -> list[str]:
    required = flat.get("required")
    return [n for n in required if isinstance(n, str)] if isinstance(required, list) else []


def _defaults(flat: dict[str, Any], defs: dict[str, Any], checks: Checks) -> tuple[tuple[str, Any], ...]:
    """The required properties of an object schema, each with a generated value (as default answers make them)."""
    branches = _branches(flat, defs)
    if branches:  # a choice: each record gets its branch's (Shape.choice)
        return ()
    props = flat.get("properties")
    required = flat.get("required")
    if not isinstance(props, dict) or not isinstance(required, list):
        return ()
    extra = flat.get("additionalProperties")
    other = extra if isinstance(extra, dict) else {}  # a required name not under `properties`: what others may be
    return tuple((name, sample(props.get(name, other), defs, checks=checks)) for name in required
                 if isinstance(name, str) and (name in props or extra is not False))


def _shown_fields(flat: dict[str, Any]) -> tuple[str, ...] | None:
    """The fields an answer shows: its properties, and the names it requires without listing them there."""
    fields = fields_of(flat)
    if fields is None:
        return None
    return fields + tuple(name for name in _names(flat) if name not in fields)


def _only_key(flat: dict[str, Any], key: str | None, defs: dict[str, Any]) -> str | None:
    """"integer" or "string" when an answer is a lone key (a create answering the new record's id), else None."""
    if key is None or flat.get("properties") or flat.get("oneOf") or flat.get("anyOf"):
        return None
    types = set(schema_types(flat, defs)) - {"null"}
    return types.pop() if types in ({"integer"}, {"string"}) else None


def _key_type(flat: dict[str, Any], key: str | None, defs: dict[str, Any]) -> str | None:
    """"integer" or "string" when the answer's key property is only that."""
    props = flat.get("properties")
    if key is None or not isinstance(props, dict) or key not in props:
        return None
    types = set(schema_types(flat_of(props[key], defs))) - {"null"}
    if types == {"integer"} or types == {"string"}:
        return types.pop()
    return None


def _conform(flat: dict[str, Any], defs: dict[str, Any], checks: Checks, record: tuple[dict[str, Any], dict[str, Any]],
             key: str | None) -> tuple[tuple[str, SchemaCheck, Any, bool], ...]:
    """The answer's properties whose schema is not the records' own for that field (see Shape.conform)."""
    props = flat.get("properties")
    if not isinstance(props, dict):
        return ()
    held, held_defs = record
    found, listed = held.get("properties"), flat.get("required")
    held_props: dict[str, Any] = found if isinstance(found, dict) else {}
    required: list[Any] = listed if isinstance(listed, list) else []
    out = []
    for name, sub in props.items():
        if name == key or isinstance(sub, bool):
            continue
        if name in held_props and flat_of(held_props[name], held_defs) == flat_of(sub, defs):
            continue  # the records hold it as the answer shows it: nothing to check
        value = sample(sub, defs, checks=checks) if name in required else None
        out.append((name, checks.check(sub, defs or None), value, name in required))
    return tuple(out)


def shape_of(op: Operation, checks: Checks | None = None, fields: frozenset[str] = frozenset(),
           record_key: str | None = None, within: str | None = None,
           record: tuple[dict[str, Any], dict[str, Any]] | None = None) -> Shape:
    """The shape of `op`'s success answer: its lowest declared 2xx (else what answers with no scenario).
    `fields`: the records' fields, which tell a wrapper answer (`{"user": {...}}`) from a record; `within`: the
    property of an object answer that holds the list of records (`{"data": [...]}`, stateful/pages.py);
    `record`: the records' flattened schema and its `$defs`, against which the answer's fields are compared."""
    key = answer_key(op)
    if key is None:
        return Shape(200, False, False, None, None)
    status = status_of(key)
    response = op.responses[key]
    chosen = pick_json(response.content)
    media = response.content[chosen] if chosen is not None else None
    if media is None or sends_no_body(status):
        return Shape(status, False, False, None, None)
    content_type = concrete(chosen) if chosen is not None else None
    if media.schema is None or isinstance(media.schema, bool):
        return Shape(status, True, False, None, content_type)
    defs = defs_of(media.schema)
    flat = flat_of(media.schema, defs)
    if within is not None:
        flat = flat_of(flat["properties"][within], defs)
    many = flat.get("type") == "array" or "items" in flat
    if many:
        flat = flat_of(flat.get("items", True), defs)
    only = _only_key(flat, record_key, defs) if not many and within is None else None
    if only is not None:
        return Shape(status, True, False, None, content_type, key_type=only, only_key=record_key)
    wrapped = wrapper(flat, defs, fields, record_key)
    around = _defaults(flat, defs, checks) if wrapped is not None and checks is not None else ()
    wrap, flat, rows = wrapped if wrapped is not None else (None, flat, False)
    defaults = _defaults(flat, defs, checks) if checks is not None else ()
    key_type = _key_type(flat, record_key, defs)
    conform = _conform(flat, defs, checks, record, record_key) if checks is not None and record is not None else ()
    choice = tuple(branch_of(b, defs, checks) for b in _choice(flat, defs)) if checks is not None else ()
    return Shape(status, True, many, _shown_fields(flat), content_type, wrap, defaults, record_key if key_type else None,
                 key_type, conform, tuple((n, v) for n, v in around if n != wrap), rows, choice,
                 any(b.closed is not None for b in choice))
