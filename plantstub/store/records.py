"""Store: the records of a stateful stub, per collection in creation order, and each stateful answer.

Records are never changed in place (an update stores a new dict), so an answer or a state handed out
earlier keeps showing what it showed.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from itertools import islice
from typing import Any

import orjson

from plantstub._json import JSON, NO_BODY, json_bytes, shown
from plantstub.contract.answers import sends_no_body
from plantstub.contract.outgoing import Outgoing, error_reply, json_reply
from plantstub.contract.params import read_scalar
from plantstub.contract.resources import (
    CREATE,
    DELETE,
    LIST,
    MAX_BYTES,
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

    __slots__ = ("next", "records", "sizes")

    def __init__(self) -> None:
        self.records: dict[str, dict[str, Any]] = {}
        self.sizes: dict[str, int] = {}  # each record's size as JSON, for the store's bound in bytes
        self.next = 1


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch: objects merge member by member, `null` removes, anything else replaces.

    Level by level, without recursion: a patch nested as deep as a body may be must not exhaust the stack."""
    if not isinstance(patch, dict):
        return patch
    root = dict(target) if isinstance(target, dict) else {}
    todo = [(root, patch)]
    while todo:
        merged, part = todo.pop()
        for name, value in part.items():
            if value is None:
                merged.pop(name, None)
            elif isinstance(value, dict):
                old = merged.get(name)
                merged[name] = sub = dict(old) if isinstance(old, dict) else {}
                todo.append((sub, value))
            else:
                merged[name] = value
    return root


# Levels of objects and arrays a stored record may have: as many as orjson writes (what it refuses is
# written by the standard library later, deeper in the stack, where Python's limit would not take it).
MAX_DEPTH = 254


def _deeper_than(value: Any, most: int) -> bool:
    todo = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, (dict, list)):
            if depth > most:
                return True
            todo.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return False


def record_size(record: Any) -> int | None:
    """A record's size as JSON; None when it is nested more than MAX_DEPTH levels (not kept: the admin API and
    the answers write it again later, and Python's stack would not take it)."""
    try:
        return len(orjson.dumps(record))  # orjson refuses more than 255 levels: what it writes is shallow enough
    except orjson.JSONEncodeError:
        pass
    if _deeper_than(record, MAX_DEPTH):
        return None
    return len(json_bytes(record))


def _count(text: str) -> int | None:
    """A limit or an offset as sent; None when it is not a whole number (the request check had its say)."""
    value = read_scalar(text, {"integer"})
    return min(max(value, 0), sys.maxsize) if isinstance(value, int) else None


class Store:
    """The records of one stub. `answer()` serves an operation the resources map."""

    def __init__(self, resources: Resources, most: int = MAX_RECORDS, most_bytes: int = MAX_BYTES) -> None:
        self.resources = resources
        self.most = most
        self.most_bytes = most_bytes
        self.created: dict[str, Any] | None = None  # the record the last answer() created (what webhooks carry)
        self.buckets: dict[str, _Bucket] = {}
        self.count = 0
        self.bytes = 0

    def _put(self, bucket: _Bucket, text: str, record: dict[str, Any], size: int) -> None:
        self.bytes += size - bucket.sizes.get(text, 0)
        self.count += text not in bucket.records
        bucket.records[text] = record
        bucket.sizes[text] = size

    def _full(self, action: Action, more: int, more_bytes: int) -> Outgoing | None:
        """The answer when `more` records of `more_bytes` would not fit; None when they do."""
        if self.count + more > self.most:
            held = f"{self.most:,} records"
        elif self.bytes + more_bytes > self.most_bytes:
            held = f"{self.most_bytes // 2**20} MiB of records"
        else:
            return None
        return error_reply(action.full, f"store: full, {held} is the most a stub keeps; delete some, or reset "
                                        "it (POST /__plantstub/reset)")

    # -- the whole state ---------------------------------------------------------------------
    def problems(self, state: Any, root: str = "state") -> list[tuple[str, str]]:
        """What is wrong with `state` as a whole state of this store: (location, message) pairs."""
        problems = self.resources.state_problems(state, root, self.most)
        if not problems:
            sizes = [record_size(r) for records in state.values() for r in records]
            if None in sizes:
                return [(root, f"a record is nested more than {MAX_DEPTH} levels deep; the store keeps none so deep")]
            size = sum(s for s in sizes if s is not None)
            if size > self.most_bytes:
                problems.append((root, f"{size:,} bytes of records as JSON; a stub keeps at most "
                                       f"{self.most_bytes // 2**20} MiB"))
        return problems

    def replace(self, state: Mapping[str, Iterable[dict[str, Any]]]) -> None:
        """Hold exactly `state` (checked already); keys assigned later continue after the largest integer key."""
        self.buckets.clear()
        self.count = self.bytes = 0
        for path, records in state.items():
            resource = self.resources.resource_at(path)
            assert resource is not None  # problems() said so
            bucket = self.buckets.setdefault(path.rstrip("/") or "/", _Bucket())
            for record in records:
                key = record[resource.key]
                self._put(bucket, key_text(key), dict(record), record_size(record) or 0)
                if isinstance(key, int) or (isinstance(key, str) and key.isdigit() and len(key) < 19):
                    bucket.next = max(bucket.next, int(key) + 1)

    def use_seed(self, seed: Mapping[str, list[dict[str, Any]]] | None) -> None:
        """Hold exactly `seed` (a scenario's `state:`, checked at load), or nothing."""
        self.replace(seed or {})

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
        self.created = None
        resource = action.resource
        path = _fill(resource.collection, path_params)
        kind = action.kind
        if kind == LIST:
            return self._list(action, path, query)
        if kind == CREATE:
            return self._create(action, path, body) if isinstance(body, dict) else None
        text = path_params.get(resource.param, "")
        key = resource.key_of(text)
        bucket = self.buckets.get(path)
        record = bucket.records.get(key_text(key)) if bucket is not None else None
        if bucket is None or record is None:
            return error_reply(action.missing, f"path.{resource.param}: no record in {path} has {resource.key} "
                                               f"{shown(key)}")
        if kind == READ:
            return _shown(action, record)
        if kind == DELETE:
            text = key_text(key)
            del bucket.records[text]
            self.bytes -= bucket.sizes.pop(text)
            self.count -= 1
            return _shown(action, record)
        if not isinstance(body, dict):
            return None
        if kind == REPLACE:
            record = {resource.key: record[resource.key], **body}
        elif kind == MERGE:
            record = merge_patch(record, body)
        text = key_text(key)
        record[resource.key] = bucket.records[text][resource.key]  # the path names the record: its key stays
        size = record_size(record)
        if size is None:
            return _too_deep(action)
        full = self._full(action, 0, size - bucket.sizes[text])
        if full is not None:
            return full
        self._put(bucket, text, record, size)
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
            records = islice(records, start, None if stop is None else min(start + stop, sys.maxsize))
        shape = action.shape
        return json_reply(shape.status, shape.show_all(records), content_type=shape.content_type or JSON)

    def _create(self, action: Action, path: str, body: dict[str, Any]) -> Outgoing:
        resource = action.resource
        key = resource.key
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
        size = record_size(record)
        if size is None:
            return _too_deep(action)
        full = self._full(action, 1, size)
        if full is not None:
            return full
        if key not in body:
            bucket.next += 1  # given out only now: a refused create takes no key
        self._put(bucket, key_text(record[key]), record, size)
        self.created = record
        return _shown(action, record)


def _too_deep(action: Action) -> Outgoing:
    return error_reply(action.full, f"body: nested more than {MAX_DEPTH} levels deep; the store keeps no record so "
                                    "deep")


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

