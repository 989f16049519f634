"""Resources a spec implies, for `--stateful`: collection and item paths, the key, and each answer's shape.

A collection path (`/plants`) whose POST creates and whose GET lists; an item path (the collection path plus
one parameter segment, `/plants/{id}`) whose GET reads, PUT replaces, PATCH merges and DELETE removes. The
key is the item path's parameter. Also the check of a state given by a user (a scenario's `state:`, admin
`PUT state`), so a seed is judged the same way wherever it comes from.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from plantstub._json import pick_json, shown
from plantstub.contract.answers import answer_key
from plantstub.contract.compiled import Checks
from plantstub.contract.flatten import defs_of
from plantstub.contract.model import Operation, Spec
from plantstub.contract.params import schema_types
from plantstub.contract.schema import SchemaCheck, location_path
from plantstub.stateful import MAX_RECORDS
from plantstub.stateful.keys import batch_of, envelope_of, key_field, key_schemas, key_text, with_defs
from plantstub.stateful.model import CREATE, DELETE, LIST, MERGE, READ, REPLACE, Action, Resource
from plantstub.stateful.pages import Page, page_of
from plantstub.stateful.shapes import choice_fields, fields_of, flat_of, shape_of

_ITEM_KINDS = {"GET": READ, "PUT": REPLACE, "PATCH": MERGE, "DELETE": DELETE}
PAGE_PARAMS = ("page", "page_number", "pageNumber")  # a list's paging parameters besides limit and offset
PER_PAGE_PARAMS = ("per_page", "perPage", "page_size", "pageSize")


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
