"""Store: the records of a stateful stub, per collection in creation order, and each stateful answer.

Records are never changed in place (an update stores a new dict), so an answer or a state handed out
earlier keeps showing what it showed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import islice
from typing import Any

from plantstub._json import JSON, NO_BODY, shown
from plantstub.contract.answers import sends_no_body
from plantstub.contract.outgoing import Outgoing, error_reply, json_reply
from plantstub.contract.params import read_scalar
from plantstub.contract.resources import (
    CREATE,
    DELETE,
    LIST,
    MAX_RECORDS,
    MERGE,
    READ,
    REPLACE,
    Action,
    Resources,
    key_text,
)


class _Bucket:
    """One concrete collection (`/plants`, `/stores/1/plants`): key text -> record, and the next key to assign."""

    __slots__ = ("next", "records")

    def __init__(self) -> None:
        self.records: dict[str, dict[str, Any]] = {}
        self.next = 1


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch: objects merge member by member, `null` removes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = merge_patch(merged.get(name), value)
    return merged


def _count(text: str) -> int | None:
    """A limit or an offset as sent; None when it is not a whole number (the request check had its say)."""
    value = read_scalar(text, {"integer"})
    return max(value, 0) if isinstance(value, int) else None


class Store:
    """The records of one stub. `answer()` serves an operation the resources map; `seed` is what reset restores."""

    def __init__(self, resources: Resources, most: int = MAX_RECORDS) -> None:
        self.resources = resources
        self.most = most
        self.buckets: dict[str, _Bucket] = {}
        self.seed: dict[str, list[dict[str, Any]]] = {}
        self.count = 0

    # -- the whole state ---------------------------------------------------------------------
    def problems(self, state: Any, root: str = "state") -> list[tuple[str, str]]:
        """What is wrong with `state` as a whole state of this store: (location, message) pairs."""
        return self.resources.state_problems(state, root, self.most)

    def replace(self, state: Mapping[str, Iterable[dict[str, Any]]]) -> None:
        """Hold exactly `state` (checked already); keys assigned later continue after the largest integer key."""
        self.buckets.clear()
        self.count = 0
        for path, records in state.items():
            resource = self.resources.resource_at(path)
            assert resource is not None  # problems() said so
            bucket = self.buckets.setdefault(path.rstrip("/") or "/", _Bucket())
            for record in records:
                key = record[resource.key]
                bucket.records[key_text(key)] = dict(record)
                if isinstance(key, int) or (isinstance(key, str) and key.isdigit() and len(key) < 19):
                    bucket.next = max(bucket.next, int(key) + 1)
            self.count += len(bucket.records)

    def use_seed(self, seed: Mapping[str, list[dict[str, Any]]] | None) -> None:
        """Make `seed` (a scenario's `state:`, checked at load) what reset restores, and restore it."""
        self.seed = {path: list(records) for path, records in (seed or {}).items()}
        self.restore()

    def restore(self) -> None:
        self.replace(self.seed)

    def dump(self) -> dict[str, list[dict[str, Any]]]:
        """Every collection and its records in creation order: `{"/plants": [...]}` (templated ones when filled)."""
        state: dict[str, list[dict[str, Any]]] = {
            r.collection: [] for r in self.resources.resources if "{" not in r.collection
        }
        for path, bucket in self.buckets.items():
            state[path] = list(bucket.records.values())
        return state

    # -- one request -------------------------------------------------------------------------
    def answer(self, action: Action, path_params: Mapping[str, str], query: Mapping[str, list[str]],
               body: Any) -> Outgoing | None:
        """The answer of a stateful operation; None when the stub answers as without a store (a body that is
        not an object reached it: the scenario turned request validation off)."""
        resource = action.resource
        path = _fill(resource.collection, path_params)
        kind = action.kind
        if kind == LIST:
            return self._list(action, path, query)
        if kind == CREATE:
            return self._create(action, path, body) if isinstance(body, dict) else None
        text = path_params.get(resource.key, "")
        key = resource.key_of(text)
        bucket = self.buckets.get(path)
        record = bucket.records.get(key_text(key)) if bucket is not None else None
        if bucket is None or record is None:
            return error_reply(action.missing, f"path.{resource.key}: no record in {path} has {resource.key} "
                                               f"{shown(key)}")
        if kind == READ:
            return _shown(action, record)
        if kind == DELETE:
            del bucket.records[key_text(key)]
            self.count -= 1
            return _shown(action, record)
        if not isinstance(body, dict):
            return None
        if kind == REPLACE:
            record = {resource.key: record[resource.key], **body}
        elif kind == MERGE:
            record = merge_patch(record, body)
        record[resource.key] = bucket.records[key_text(key)][resource.key]  # the path names the record: its key stays
        bucket.records[key_text(key)] = record
        return _shown(action, record)

    def _list(self, action: Action, path: str, query: Mapping[str, list[str]]) -> Outgoing:
        bucket = self.buckets.get(path)
        records: Iterable[dict[str, Any]] = bucket.records.values() if bucket is not None else ()
        for name, types in action.filters:
            if name in query:
                wanted = [read_scalar(v, set(types)) for v in query[name]]
                records = [r for r in records if name in r and r[name] in wanted]
        start = _count(query["offset"][0]) if action.offset and "offset" in query else None
        stop = _count(query["limit"][0]) if action.limit and "limit" in query else None
        if start is not None or stop is not None:
            start = start or 0
            records = islice(records, start, None if stop is None else start + stop)
        shape = action.shape
        return json_reply(shape.status, shape.show_all(records), content_type=shape.content_type or JSON)

    def _create(self, action: Action, path: str, body: dict[str, Any]) -> Outgoing:
        resource = action.resource
        key = resource.key
        if self.count >= self.most:
            return error_reply(action.full, f"store: full, {self.most:,} records is the most a stub keeps; delete "
                                            "some, or reset it (POST /__plantstub/reset)")
        bucket = self.buckets.get(path)
        if bucket is None:
            bucket = self.buckets[path] = _Bucket()
        if key in body:
            record = body
            if not resource.fits(body[key]):  # only when request validation is off: kept as the stub would answer
                return error_reply(action.conflict, f"body.{key}: {shown(body[key])} cannot be a key")
            if key_text(body[key]) in bucket.records:
                return error_reply(action.conflict, f"body.{key}: a record in {path} already has {key} "
                                                    f"{shown(body[key])}")
        else:
            while str(bucket.next) in bucket.records:
                bucket.next += 1
            record = {key: str(bucket.next) if resource.assigns_text else bucket.next, **body}
            bucket.next += 1
        bucket.records[key_text(record[key])] = record
        self.count += 1
        return _shown(action, record)


def _fill(template: str, params: Mapping[str, str]) -> str:
    """The concrete collection path: `/stores/{store}/plants` with the request's `store`."""
    if "{" not in template:
        return template
    return "/".join(params.get(s[1:-1], s) if s.startswith("{") else s for s in template.split("/"))


def _shown(action: Action, record: dict[str, Any]) -> Outgoing:
    shape = action.shape
    if not shape.has_body or sends_no_body(shape.status):
        return Outgoing(shape.status, NO_BODY, b"", None)
    return json_reply(shape.status, shape.show(record), content_type=shape.content_type or JSON)

