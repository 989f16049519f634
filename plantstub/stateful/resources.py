"""Resources a spec implies, for `--stateful`: collection and item paths, the key, and each answer's shape.

A collection path (`/plants`) whose POST creates and whose GET lists; an item path (the collection path plus
one parameter segment, `/plants/{id}`) whose GET reads, PUT replaces, PATCH merges and DELETE removes. The
key is the item path's parameter. Also the check of a state given by a user (a scenario's `state:`, admin
`PUT state`), so a seed is judged the same way wherever it comes from.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from plantstub._json import pick_json, shown
from plantstub.contract.answers import answer_key
from plantstub.contract.compiled import Checks
from plantstub.contract.flatten import defs_of
from plantstub.contract.model import Operation, Spec
from plantstub.contract.params import read_scalar, schema_types
from plantstub.contract.schema import SchemaCheck, location_path
from plantstub.stateful.branches import Branch, pick
from plantstub.stateful.keys import batch_of, envelope_of, has_surrogate, key_field, key_schemas, key_text, with_defs
from plantstub.stateful.pages import Page, page_of
from plantstub.stateful.shapes import Shape, choice_fields, fields_of, flat_of, shape_of

MAX_RECORDS = 10_000  # records one stub keeps, all collections together
MAX_BYTES = 64 * 2**20  # and the bytes they take as held (compact JSON, parsed when read), within --max-bytes
CREATE, LIST, READ, REPLACE, MERGE, DELETE = "create", "list", "read", "replace", "merge", "delete"
_READ_AS_OTHER = frozenset({"integer", "number", "boolean", "null"})  # types read_scalar reads a text as
_ITEM_KINDS = {"GET": READ, "PUT": REPLACE, "PATCH": MERGE, "DELETE": DELETE}
PAGE_PARAMS = ("page", "page_number", "pageNumber")  # a list's paging parameters besides limit and offset
PER_PAGE_PARAMS = ("per_page", "perPage", "page_size", "pageSize")


@dataclass(frozen=True, slots=True)
class Resource:
    """A collection of records: where they live, their key and what a record must be."""

    collection: str  # a path template: /plants, or /stores/{store}/plants
    item: str | None  # /plants/{id}
    key: str  # the record's field that holds the key
    param: str  # the item path's parameter that names it (the same name, unless the records only have `id`)
    key_types: frozenset[str]
    schema: Any  # what a record must be (the create body's schema, else the read answer's); None: any object
    defs: Any
    fields: frozenset[str]
    key_check: SchemaCheck | None = None  # the item path parameter's schema: what a path may name
    # Fields some answer requires, with a generated value: a record created or replaced without one gets it, as a
    # server assigns `createdAt`, and keeps it, so a later read agrees.
    defaults: dict[str, Any] = field(default_factory=dict)
    choices: list[tuple[Branch, ...]] = field(default_factory=list)  # answers that are a choice of objects

    def filled(self, record: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
        """`record` with each required field it lacks: the old record's value, else the generated one; an `id` the
        answers show beside another key field (`alias`) is the key itself, where its schemas take it."""
        alias = self.alias
        if alias is not None and alias not in record and self.key in record and (old is None or alias not in old) \
                and all(check.is_valid(record[self.key]) for check in self.alias_checks):
            record = {**record, alias: record[self.key]}
        missing = [name for name in self.defaults if name not in record]
        if missing:
            record = dict(record)
            for name in missing:
                record[name] = old[name] if old is not None and name in old else self.defaults[name]
        for choice in self.choices:  # an answer of a choice of objects: what the record's branch requires
            record = pick(choice, record).apply(record, old)
        return record

    field_types: frozenset[str] = frozenset()  # the records' key field's types (else the parameter's count)
    field_checks: tuple[SchemaCheck, ...] = ()  # the key field's schemas, in the records and the answers
    key_samples: tuple[str, ...] = ()  # generated keys the schemas take, whose tail a counter replaces
    key_enum: tuple[Any, ...] = ()  # the keys an enum allows, given out in order
    alias: str | None = None  # `id`, which answers show while the records are keyed by another field
    alias_checks: tuple[SchemaCheck, ...] = ()  # its schemas in those answers
    envelope: str | None = None  # the one property bodies send the record in (Asana's `{"data": {...}}`)
    batch: str | None = None  # the array property a create sends its records in (Xero's `Contacts`); "": the body

    def unwrap(self, body: Any) -> Any:
        """The record a create or update body sends: in its envelope, when it has one; for a create in an array
        (`batch`), the list of records (an update: the one record of the array)."""
        if self.envelope is not None and isinstance(body, dict) and isinstance(body.get(self.envelope), dict):
            return body[self.envelope]
        if self.batch is not None:
            rows = body if self.batch == "" else body.get(self.batch) if isinstance(body, dict) else None
            if isinstance(rows, list) and all(isinstance(r, dict) for r in rows):
                return rows
        return body

    def sent_as(self, body: dict[str, Any]) -> str | None:
        """The body field that carries the key under the item parameter's name spelt otherwise than the records'
        key field (`id` sent, `Id` answered); None when the key field is sent as it is, or not at all."""
        if self.key in body or self.param == self.key or self.param.lower() != self.key.lower():
            return None
        return self.param if self.param in body else None

    def unkeyable(self) -> str | None:
        """Why no record can be keyed at all: the key field's schema is no string nor number (an object)."""
        types = self.field_types or self.key_types
        if not types or types & {"string", "integer", "number"}:
            return None
        return (f"the records are keyed by {self.key}, which the document makes {' or '.join(sorted(types))}: no path"
                f" {self.item or self.collection + '/{' + self.param + '}'} names such a key, so the store can keep no"
                " record here")

    def fits(self, value: Any) -> bool:
        """Whether `value` can be a key: a string or an integer, as the records' key field says (else the path
        parameter); unaddressable() says whether the item path reads it back as the same key."""
        types = self.field_types or self.key_types
        if isinstance(value, int) and not isinstance(value, bool):
            return not types or "integer" in types or "number" in types
        return isinstance(value, str) and (not types or "string" in types)

    @property
    def assigns_text(self) -> bool:
        """Keys the stub assigns are "1", "2"... (a string key schema), not 1, 2..."""
        types = self.field_types or self.key_types
        return "string" in types and "integer" not in types and "number" not in types

    def assign(self, n: int) -> Any | None:
        """The `n`th key the stub assigns: `n` itself where every schema takes it, else a generated key with `n`
        in its tail (a uuid, a pattern's text) or after it, else the enum's `n`th value; None when none fits."""
        digits = str(n)
        candidates: list[Any] = [digits, n] if self.assigns_text else [n, digits]
        for text in self.key_samples:
            if len(digits) <= len(text):
                width = min(len(text), max(len(digits), 12))
                candidates.append(text[: len(text) - width] + digits.rjust(width, "0"))
            candidates.append(text + digits)  # a pattern the tail replaced breaks (`^aia_tool_.+$`): appended
        if n <= len(self.key_enum):
            candidates.append(self.key_enum[n - 1])
        for value in candidates:
            if self.unaddressable(value) is None and all(c.is_valid(value) for c in self.field_checks):
                return value
        return None

    def key_of(self, text: str) -> Any:
        """A key as its path segment spells it, read as its schema types it (`"7"` -> 7 for an integer)."""
        return read_scalar(text, set(self.key_types))

    def _reads_back(self, value: Any, text: str) -> bool:
        """Whether a path segment `text` surely reads as `value` again, without reading it (the common keys)."""
        if isinstance(value, str):
            return not self.key_types & _READ_AS_OTHER
        return len(text) < 19 and ("integer" in self.key_types or "number" in self.key_types)

    def path_refuses(self, value: Any) -> bool:
        """Whether the item parameter's schema refuses the key `value` that a path could carry (a text under an
        integer parameter): the document names records in the path's form, so the store assigns one."""
        if self.key_check is None or not self.fits(value):
            return False
        text = key_text(value)
        if not text or text in (".", "..") or (not text.isascii() and has_surrogate(text)):
            return False
        return not self.key_check.is_valid(value if self._reads_back(value, text) else self.key_of(text))

    def unaddressable(self, value: Any) -> str | None:
        """Why no item path names the key `value` (which fits()): `/words/{word}` must read it back as the same
        key, and its parameter's schema take it. None when one does (or the resource has no item path)."""
        if self.item is None:
            return None
        text = key_text(value)
        if not text:
            reason = "an empty path segment"
        elif text in (".", ".."):
            reason = "clients drop a path segment . or .. before sending"
        elif not text.isascii() and has_surrogate(text):
            reason = "a lone surrogate, which no URL carries"
        else:
            read = value if self._reads_back(value, text) else self.key_of(text)
            if key_text(read) != text:
                reason = f"the path reads {shown(text)} as {shown(read)}"
            elif self.key_check is None or self.key_check.is_valid(read):
                return None
            else:
                reason = "; ".join(f"{v.where}: {v.message}" for v in self.key_check.errors(read, f"path.{self.param}"))
        return f"no path {self.item} names it ({reason})"


@dataclass(frozen=True, slots=True)
class Action:
    """What one operation does to its resource, and the statuses of what can go wrong."""

    kind: str
    resource: Resource
    shape: Shape
    missing: int  # an unknown key: 404 where declared, else the declared error
    conflict: int  # creating a key that exists: 409 where declared, else the declared error
    full: int  # the store holds MAX_RECORDS: 507 where declared, else the declared error
    limit: bool = False
    offset: bool = False
    filters: tuple[tuple[str, frozenset[str]], ...] = ()  # query parameters naming a record field, and their types
    page: str | None = None  # a list's page number parameter (1-based), and its page size parameter
    per_page: str | None = None
    per_page_default: int | None = None  # the page size a page is cut by when the request does not say one
    wrapper: Page | None = None  # how a list answer wraps the records (`{"data": [...]}`); None: an array


def _declares(op: Operation, status: int) -> bool:
    text = str(status)
    return any(k in op.responses for k in (text, f"{text[0]}XX", f"{text[0]}xx", "default"))


def _error_status(op: Operation, wanted: int) -> int:
    """`wanted` where the operation declares it (exactly, by range or by `default`), else 400 where it declares
    that (the Plant Store's one error), else `wanted` all the same: an honest status the spec did not list."""
    if _declares(op, wanted) or not _declares(op, 400):
        return wanted
    return 400


def _body_schema(op: Operation | None) -> Any:
    if op is None or not op.body:
        return None
    chosen = pick_json(op.body)
    return op.body[chosen].schema if chosen is not None else None


def _answer_schema(op: Operation | None) -> Any:
    key = answer_key(op) if op is not None else None
    if op is None or key is None:
        return None
    chosen = pick_json(op.responses[key].content)
    return op.responses[key].content[chosen].schema if chosen is not None else None


def _default_count(schema: Any) -> int | None:
    """A page size parameter's declared `default`, when it is a positive whole number."""
    value = flat_of(schema, defs_of(schema)).get("default")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _alias_schemas(key: str, answers: list[tuple[Any, dict[str, Any]]]) -> list[tuple[Any, dict[str, Any]]]:
    """The schemas of `id` in the answers (the create's, the read's) when the records are keyed by another field."""
    if key == "id":
        return []
    found = []
    for whole, defs in answers:
        props = flat_of(whole, defs).get("properties") if whole is not None and not isinstance(whole, bool) else None
        if isinstance(props, dict) and "id" in props and key not in props:
            found.append((props["id"], defs))
    return found


def _key_param(item: dict[str, Operation], name: str) -> Any:
    """The schema of the item path's parameter `name` (None: undeclared, any text)."""
    for op in item.values():
        for p in op.parameters:
            if p.location == "path" and p.name == name and p.schema is not None:
                return p.schema
    return None


class Resources:
    """The resources of one spec, and the Action of each operation that touches one."""

    def __init__(self, spec: Spec, checks: Checks | None = None) -> None:
        self.checks = checks if checks is not None else Checks()
        self.actions: dict[Operation, Action] = {}
        self.resources: list[Resource] = []
        by_path: dict[str, dict[str, Operation]] = {}
        for op in spec.operations:
            by_path.setdefault(op.path, {})[op.method] = op
        for path, ops in by_path.items():
            if "POST" in ops or "GET" in ops:
                self._infer(path, ops, by_path)

    def _infer(self, path: str, ops: dict[str, Operation], by_path: dict[str, dict[str, Operation]]) -> None:
        if path.rstrip("/").rsplit("/", 1)[-1].startswith("{"):
            return  # an item's path (Petstore's POST /pet/{petId} updates a pet), not a collection
        items = [p for p in by_path if p.startswith(path.rstrip("/") + "/{") and p.endswith("}")
                 and p.count("/") == path.rstrip("/").count("/") + 1 and p.count("{") == path.count("{") + 1]
        item_path = items[0] if items else None
        param = item_path.rsplit("{", 1)[1][:-1] if item_path else "id"
        item = by_path.get(item_path, {}) if item_path else {}
        create, listing = ops.get("POST"), ops.get("GET")
        schema = _body_schema(create) or _answer_schema(item.get("GET"))
        envelope = envelope_of(_body_schema(create), [_answer_schema(create), _answer_schema(item.get("GET"))])
        outer: Any = None
        batch = None if envelope is not None else batch_of(
            _body_schema(create), [_answer_schema(create), _answer_schema(item.get("GET"))],
            path.rstrip("/").rsplit("/", 1)[-1])
        if envelope is not None:  # the record is what the envelope holds
            outer = defs_of(schema)
            schema = flat_of(schema, outer)["properties"][envelope]
        elif batch is not None:  # a record is an item of the array
            outer = defs_of(_body_schema(create))
            schema = batch[1]
        page = None
        listed = shape_of(listing) if listing is not None else None
        if listed is not None and not listed.many:  # a wrapper around the list, or one object (`GET /status`)
            # a list only where records come from somewhere: a POST, an item path
            whole = _answer_schema(listing) if listed.has_body and (create is not None or item) else None
            held = outer if outer is not None else defs_of(schema)
            known = frozenset(fields_of(flat_of(schema, held)) or ()) if schema is not None else frozenset()
            name = path.rstrip("/").rsplit("/", 1)[-1]
            page = page_of(whole, defs_of(whole), self.checks, known, name) if whole is not None else None
            if page is None:
                listing = None
        if create is None and listing is None and not item:
            return
        defs: Any = outer
        if schema is None and listing is not None:
            whole = _answer_schema(listing)
            defs = defs_of(whole)
            flat = flat_of(whole, defs)
            schema = (flat_of(flat["properties"][page.items], defs) if page is not None else flat).get("items")
        defs = defs if defs is not None else defs_of(schema)
        fields = frozenset(fields_of(flat_of(schema, defs)) or ()) if schema is not None else frozenset()
        shown_fields = set(shape_of(item["GET"], None, fields).fields or ()) if "GET" in item else set()
        if not shown_fields:  # a choice of objects: any branch's fields, the read answer's first
            for whole, held in (with_defs(_answer_schema(item.get("GET"))), (schema, defs)):
                shown_fields = shown_fields or set(choice_fields(flat_of(whole, held), held) if whole else ())
        key = key_field(param, shown_fields) if shown_fields else key_field(param, fields)  # the answer's first
        key_schema = _key_param(item, param)
        key_types = frozenset(schema_types(key_schema)) if key_schema is not None else frozenset()
        key_check = self.checks.check(key_schema, where=f"{item_path}: {param}") if key_schema is not None else None
        alias_checks = tuple(self.checks.check(sub, held or None) for sub, held in _alias_schemas(key, [
            with_defs(_answer_schema(create)), with_defs(_answer_schema(item.get("GET")))]))
        resource = Resource(path, item_path, key, param, key_types, schema, defs, fields | {key}, key_check,
                            alias="id" if alias_checks else None, alias_checks=alias_checks, envelope=envelope, batch=batch[0] if batch is not None else None, **key_schemas(self.checks, key, key_schema, fields, [
                                (schema, defs), with_defs(_answer_schema(create)),
                                with_defs(_answer_schema(item.get("GET")))]))
        self.resources.append(resource)
        added = [self._add(create, CREATE, resource)] if create is not None else []
        if listing is not None:
            added.append(self._add(listing, LIST, resource, page))
        for method, op in item.items():
            if method in _ITEM_KINDS:
                added.append(self._add(op, _ITEM_KINDS[method], resource))
        for action in added:
            if action is None:
                continue
            for name, value in action.shape.defaults:
                if name != key:  # the key is assigned, not generated
                    resource.defaults.setdefault(name, value)
            if action.shape.choice and action.shape.choice not in resource.choices:
                resource.choices.append(action.shape.choice)

    def _add(self, op: Operation, kind: str, resource: Resource, page: Page | None = None) -> Action | None:
        query = {p.name: p for p in op.parameters if p.location == "query"}
        number = next((n for n in PAGE_PARAMS if n in query), None) if kind == LIST else None
        per_page = next((n for n in PER_PAGE_PARAMS if n in query), None) if kind == LIST else None
        paging = {"limit", "offset", number, per_page} if kind == LIST else set()
        filters = tuple((name, frozenset(schema_types(p.schema))) for name, p in query.items()
                        if name in resource.fields and name not in paging)
        held = (flat_of(resource.schema, resource.defs or {}), resource.defs or {}) if resource.schema is not None else None
        shape = shape_of(op, self.checks, resource.fields, resource.key, page.items if page is not None else None, held)
        if not 200 <= shape.status < 300:
            return None  # declares only an error (the Petstore's POST /pet: 405): the default answer, nothing stored
        if shape.key_type is not None and resource.field_types == {shape.key_type}:
            shape = replace(shape, key=None, key_type=None)  # records hold the key as the answer types it
        action = self.actions[op] = Action(
            kind, resource, shape, _error_status(op, 404), _error_status(op, 409),
            _error_status(op, 507),
            limit=kind == LIST and "limit" in query, offset=kind == LIST and "offset" in query, filters=filters,
            page=number, per_page=per_page, per_page_default=_default_count(query[per_page].schema) if per_page else None,
            wrapper=page,
        )
        return action

    # -- a state given by the user ---------------------------------------------------------------
    def resource_at(self, path: str) -> Resource | None:
        """The resource whose collection template matches the concrete path `path` (`/stores/1/plants`)."""
        parts = path.rstrip("/").split("/") if path != "/" else [""]
        for resource in self.resources:
            template = resource.collection.rstrip("/").split("/") if resource.collection != "/" else [""]
            if len(template) == len(parts) and all(
                t == p or (t.startswith("{") and t.endswith("}") and p) for t, p in zip(template, parts, strict=True)
            ):
                return resource
        return None

    def state_problems(self, state: Any, root: str = "state", most: int = MAX_RECORDS) -> list[tuple[str, str]]:
        """What is wrong with a whole state (`{"/plants": [{...}, ...]}`): (location, message) pairs, in order."""
        if not isinstance(state, dict):
            return [(root, 'expected a mapping of collection paths to lists of records, e.g. {"/plants": []}')]
        found: list[tuple[str, str]] = []
        total = 0
        known = ", ".join(r.collection for r in self.resources) or "none in this spec"
        seen: dict[str, str] = {}
        for path, records in state.items():
            where = location_path(root, [path])
            resource = self.resource_at(path) if isinstance(path, str) and path.startswith("/") else None
            if resource is None:
                found.append((where, f"{shown(path)} is not a collection of the spec (collections: {known})"))
                continue
            same = seen.setdefault(path.rstrip("/") or "/", path)
            if same != path:
                found.append((where, f"{shown(path)} is the collection {shown(same)} again; list its records once"))
                continue
            if not isinstance(records, list):
                found.append((where, "expected a list of records"))
                continue
            total += len(records)
            found.extend(self._record_problems(resource, records, where))
        if total > most:
            found.append((root, f"{total:,} records; a stub keeps at most {most:,}"))
        return found

    def _record_problems(self, resource: Resource, records: list[Any], where: str) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        seen: set[str] = set()
        key = resource.key
        check = self._check(resource)
        declares_key = key in (fields_of(flat_of(resource.schema, resource.defs)) or ()) if resource.schema else True
        for i, record in enumerate(records):
            at = location_path(where, [i])
            if not isinstance(record, dict):
                found.append((at, "a record is a mapping of its fields"))
                continue
            schema_found: list[tuple[str, str]] = []
            if check is not None:
                body = record if declares_key else {k: v for k, v in record.items() if k != key}
                schema_found = [(v.where, v.message) for v in check.errors(body, at)]
            at_key = location_path(at, [key])
            if key not in record:
                found.append((at, f"has no {shown(key)}: every record needs its key"))
                # said once, not again as a required property
                schema_found = [(w, m) for w, m in schema_found if w != at or shown(key) not in m]
            elif not resource.fits(record[key]):
                if not any(w == at_key for w, _ in schema_found):  # else the schema's own words say it
                    kinds = " or ".join(sorted(resource.field_types or resource.key_types)) or "a string or an integer"
                    found.append((at_key, f"{shown(record[key])} is not a key ({kinds})"))
            elif any(w == at_key for w, _ in schema_found):
                pass  # the schema's own words say what is wrong with the key
            elif (unaddressable := resource.unaddressable(record[key])) is not None:
                found.append((at_key, f"{shown(record[key])} cannot be a key: {unaddressable}"))
            elif key_text(record[key]) in seen:
                found.append((at_key, f"{shown(record[key])} is the key of an earlier record"))
            else:
                seen.add(key_text(record[key]))
            found.extend(schema_found)
        return found

    def _check(self, resource: Resource) -> SchemaCheck | None:
        if resource.schema is None or isinstance(resource.schema, bool):
            return None
        return self.checks.check(resource.schema, resource.defs or None)
