"""Store: the records of a stateful stub, per collection in creation order, and each stateful answer.

Each record is held as its compact JSON (bytes), parsed when read: parsed, a record of small objects takes
twenty times its JSON and more. The bytes held are what the session's memory budget counts ("records").
Records are never changed in place (an update stores new bytes), so an answer or a state handed out earlier
keeps showing what it showed.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

from plantstub._budget import Budget
from plantstub._json import NO_BODY, deep_json_bytes, json_bytes, shown
from plantstub.contract.outgoing import Outgoing, error_reply, json_reply
from plantstub.stateful import MAX_BYTES, MAX_RECORDS
from plantstub.stateful.keys import key_text
from plantstub.stateful.model import CREATE, DELETE, LIST, MERGE, READ, REPLACE, Action, collection_path
from plantstub.stateful.resources import Resources
from plantstub.store.held import MAX_DEPTH, TooDeep, decode, encode, merge_patch
from plantstub.store.lists import list_answer

KIND = "records"  # the kind the memory budget counts a store's bytes under
# What Python holds for a record beyond its JSON's bytes and its key's str (measured with tracemalloc): the
# bytes object's header and a slot in its collection's dict.
RECORD_OVERHEAD = 72
# And for a collection: its object, its dict (a few slots before the first grows it), its slot in the store.
BUCKET_OVERHEAD = 200


def record_held(text: str, payload: bytes) -> int:
    """The bytes a record takes as held: its JSON, its key's str, and what holding them costs."""
    # A str is no container: getsizeof() is its __sizeof__(), called without getsizeof's own steps (every create)
    return len(payload) + (text.__sizeof__() if type(text) is str else sys.getsizeof(text)) + RECORD_OVERHEAD


def bucket_held(path: str) -> int:
    """The bytes an empty collection takes as held (its path's str included)."""
    return sys.getsizeof(path) + BUCKET_OVERHEAD


class _Bucket:
    """One concrete collection (`/plants`, `/stores/1/plants`): key text -> the record as compact JSON, and the
    next key to assign."""

    __slots__ = ("next", "records")

    def __init__(self) -> None:
        self.records: dict[str, bytes] = {}
        self.next = 1

    def remembers(self) -> bool:
        """Whether the collection says anything with no record in it: keys given out already are never again."""
        return bool(self.records) or self.next > 1


class Store:
    """The records of one session; `answer()` serves an operation the resources map. Every byte held is taken from
    `memory` (the session's budget) under "records", within the store's own bounds: `most` records, `most_bytes`."""

    def __init__(self, resources: Resources, most: int = MAX_RECORDS, most_bytes: int = MAX_BYTES,
                 memory: Budget | None = None) -> None:
        self.resources = resources
        self.most = most
        self.most_bytes = most_bytes
        self.memory = memory if memory is not None else Budget(most_bytes)
        self._held = self.memory.holding(KIND)  # records and collections, as the memory budget counts them
        self._created: dict[str, Any] | None = None
        self.buckets: dict[str, _Bucket] = {}
        self.count = 0

    @property
    def held_bytes(self) -> int:
        """The bytes held: records and collections, as the memory budget counts them."""
        return self._held.held

    @property
    def created(self) -> dict[str, Any] | None:
        """The record the last answer() created (what webhooks carry), handed over once: the store holds records as
        bytes, and keeping the parsed one until the next answer would hold twenty times more."""
        record, self._created = self._created, None
        return record

    def _hold(self, action: Action, more: int, size: int) -> Outgoing | None:
        """Hold `more` records and `size` more bytes; the refusal when they do not fit (counted as lost)."""
        held = self._held
        if self.count + more <= self.most and held.held + size <= self.most_bytes and held.take(size):
            return None
        return self._refusal(action, more, size)

    def _refusal(self, action: Action, more: int, size: int) -> Outgoing:
        """The refusal of `more` records and `size` more bytes that do not fit (_hold()), counted as lost."""
        if self.count + more > self.most:
            held = f"{self.most:,} records is the most a stub keeps"
        elif self._held.held + size > self.most_bytes:
            held = f"{self.most_bytes // 2**20} MiB of records is the most a stub keeps"
        else:
            held = f"the memory budget has no room for {size:,} more bytes ({self._budget_text(size)})"
        self._held.lost(size, more)
        return error_reply(action.full, f"store: full, {held}; delete some, or reset it (POST /__plantstub/reset)")

    def _budget_text(self, size: int) -> str:
        """Which budget has no room for `size` more bytes, and its limit."""
        short = self.memory.lacking(size)
        whose = "this session holds" if short is self.memory else "all sessions together hold"
        return f"{whose} at most {short.limit:,} bytes of what clients send, --max-bytes"

    def _free(self, size: int) -> None:
        self._held.give(size)

    def figures(self) -> dict[str, int]:
        """Records and collections held, their bytes and the store's bounds, as health shows them."""
        return {"records": self.count, "collections": len(self.buckets), "bytes": self.held_bytes,
                "max_records": self.most, "max_bytes": self.most_bytes}

    # -- the whole state ---------------------------------------------------------------------
    def problems(self, state: Any, root: str = "state") -> list[tuple[str, str]]:
        """What is wrong with `state` as a whole state of this store: (location, message) pairs."""
        problems = self.resources.state_problems(state, root, self.most)
        if problems:
            return problems
        buckets, _, size = self._build(state)
        if any(type(p) is TooDeep for bucket in buckets.values() for p in bucket.records.values()):
            return [(root, f"a record is nested more than {MAX_DEPTH} levels deep; the store keeps none so deep")]
        if size > self.most_bytes:
            return [(root, f"{size:,} bytes of records as held; a stub keeps at most {self.most_bytes // 2**20} MiB")]
        if not self.memory.fits(size):
            return [(root, f"{size:,} bytes of records as held; the memory budget holds at most "
                           f"{self.memory.limit:,} bytes (--max-bytes)")]
        return []

    def _build(self, state: Mapping[str, Iterable[dict[str, Any]]]) -> tuple[dict[str, _Bucket], int, int]:
        """The collections holding `state` (checked already), how many records and the bytes they take."""
        buckets: dict[str, _Bucket] = {}
        count = size = 0
        for path, records in state.items():
            resource = self.resources.resource_at(path)
            assert resource is not None  # problems() said so
            where = path.rstrip("/") or "/"
            bucket = buckets[where] = _Bucket()
            size += bucket_held(where)
            for record in records:
                key = record[resource.key]
                text = key_text(key)
                payload = encode(record) or TooDeep(deep_json_bytes(record))  # problems() refuses it; a seed's
                bucket.records[text] = payload
                count += 1
                size += record_held(text, payload)
                if isinstance(key, int) or (isinstance(key, str) and key.isdigit() and len(key) < 19):
                    bucket.next = max(bucket.next, int(key) + 1)
        return buckets, count, size

    def replace(self, state: Mapping[str, Iterable[dict[str, Any]]], root: str = "state") -> list[tuple[str, str]]:
        """Hold exactly `state` (checked already); keys assigned later continue after the largest integer key.
        When the memory budget has no room for it, nothing changes and the one problem says so."""
        buckets, count, size = self._build(state)
        more = size - self.held_bytes
        if more > 0 and not self._held.take(more):
            self._held.lost(more, count)
            return [(root, f"{size:,} bytes of records as held; the memory budget has no room for them "
                           f"({self._budget_text(more)})")]
        if more < 0:
            self._held.give(-more)
        self.buckets, self.count = buckets, count
        return []

    def use_seed(self, seed: Mapping[str, list[dict[str, Any]]] | None) -> None:
        """Hold exactly `seed` (a scenario's `state:`, checked at load), or nothing: nothing also when the memory
        budget has no room for it (counted as lost: health shows it)."""
        if self.replace(seed or {}):
            self.replace({})

    def held(self) -> dict[str, list[bytes]]:
        """As dump(), each record as the compact JSON it is held as (nothing parsed): the admin API writes these."""
        state: dict[str, list[bytes]] = {collection_path(r.collection, {}): [] for r in self.resources.resources
                                         if "{" not in r.collection}
        for path, bucket in list(self.buckets.items()):
            state[path] = list(bucket.records.values())
        return state

    def dump(self) -> dict[str, list[dict[str, Any]]]:
        """Every collection and its records in creation order: `{"/plants": [...]}` (templated ones when filled)."""
        state: dict[str, list[dict[str, Any]]] = {
            collection_path(r.collection, {}): [] for r in self.resources.resources if "{" not in r.collection
        }
        for path, bucket in list(self.buckets.items()):
            state[path] = [decode(payload) for payload in list(bucket.records.values())]
        return state

    # -- one request -------------------------------------------------------------------------
    def answer(self, action: Action, path_params: Mapping[str, str], query: Mapping[str, list[str]],
               body: Any) -> Outgoing | None:
        """The answer of a stateful operation; None when the stub answers as without a store (a body that is
        not an object reached it: the scenario turned request validation off)."""
        self._created = None
        resource = action.resource
        path = resource.home if resource.home is not None else collection_path(resource.collection, path_params)
        kind = action.kind
        if kind == LIST:
            return self._list(action, path, query)
        if resource.envelope is not None or resource.batch is not None:
            body = resource.unwrap(body)
        if kind == CREATE:
            if resource.batch is not None and isinstance(body, list) and all(isinstance(r, dict) for r in body):
                return self._create_batch(action, path, body)
            return self._create(action, path, body) if isinstance(body, dict) else None
        if resource.batch is not None and isinstance(body, list) and len(body) == 1:
            body = body[0]  # an update sent in the create's array (Xero's `{"Contacts": [{...}]}`)
        key = resource.key_of(path_params.get(resource.param, ""))
        text = key_text(key)
        bucket = self.buckets.get(path)
        payload = bucket.records.get(text) if bucket is not None else None
        if bucket is None or payload is None:
            return error_reply(action.missing, f"path.{resource.param}: no record in {path} has {resource.key} "
                                               f"{shown(key)}")
        record = decode(payload)
        if kind == READ:
            return _shown(action, record, payload)
        if kind == DELETE:
            self._remove(path, text)
            return _shown(action, record, payload)
        if not isinstance(body, dict):
            return None
        kept = record[resource.key]  # the path names the record: its key stays
        old = record
        if kind == REPLACE:
            record = {resource.key: kept, **body}
        elif kind == MERGE:
            record = merge_patch(record, body)
        record[resource.key] = kept
        record = resource.filled(record, old)
        new = encode(record)
        if new is None:
            return _too_deep(action)
        refused = self._hold(action, 0, len(new) - len(payload))
        if refused is not None:
            return refused
        bucket.records[text] = new
        return _shown(action, record, new)

    def _list(self, action: Action, path: str, query: Mapping[str, list[str]]) -> Outgoing:
        bucket = self.buckets.get(path)
        held: dict[str, bytes] = bucket.records if bucket is not None else {}
        # Parsed one by one as the answer takes them: a page of ten parses ten.
        return list_answer(action, map(decode, held.values()), len(held), query)

    def _create_batch(self, action: Action, path: str, rows: list[dict[str, Any]]) -> Outgoing | None:
        """Each record of an array created in turn, answered together (resource.batch); when one is refused, the
        ones created before it are taken back and the refusal answered."""
        made: list[dict[str, Any]] = []
        for row in rows:
            self._created = None
            answer = self._create(action, path, row)
            created = self._created
            if created is None:
                for record in made:
                    self._remove(path, key_text(record[action.resource.key]))
                return answer
            made.append(created)
        self._created = made[0] if made else None
        shape = action.shape
        if shape.silent:
            return Outgoing(shape.status, NO_BODY, b"", None)
        if not made and not shape.many and not shape.rows:
            return None  # nothing sent, and no record to show: the default answer
        return json_reply(shape.status, shape.show_batch(made), content_type=shape.media)

    def _remove(self, path: str, text: str) -> None:
        """Take the record `text` out of the collection `path` (and the collection, when it can go)."""
        bucket = self.buckets[path]
        payload = bucket.records.pop(text)
        self.count -= 1
        freed = record_held(text, payload)
        if not bucket.remembers():  # an emptied collection goes, unless it must not give its keys again
            del self.buckets[path]
            freed += bucket_held(path)
        self._free(freed)

    def _create(self, action: Action, path: str, body: dict[str, Any]) -> Outgoing:
        """Create a record from `body`: one look at its key (resource.admit()), filled, encoded once, its bytes held once
        (their size known from the encoding), shown."""
        resource = action.resource
        key = resource.key
        bucket = self.buckets.get(path)
        fresh = bucket is None  # a new collection is kept only with its first record: a refused create leaves nothing
        if bucket is None:
            bucket = _Bucket()
        if resource.spelt is not None:
            sent = resource.sent_as(body)
            if sent is not None:  # the key under the parameter's name, spelt in another case than the answers' (id, Id)
                body = {key: body[sent], **{name: value for name, value in body.items() if name != sent}}
        text: str | None = None
        if key in body:
            value = body[key]
            text, why = resource.admit(value)
            if why is not None:  # only when request validation is off, or no item path names it
                return error_reply(action.conflict, f"body.{key}: {why}")
            if text is None:  # the item parameter's schema refuses it: assigned below, and shown
                body = {name: v for name, v in body.items() if name != key}
            elif text in bucket.records:
                return error_reply(action.conflict, f"body.{key}: a record in {path} already has {key} {shown(value)}")
        if text is None:
            unkeyed = resource.unkeyable()
            if unkeyed is not None:
                return error_reply(action.conflict, f"body.{key}: {unkeyed}")
            assigned = _assign(resource, bucket)
            if assigned is None:
                return error_reply(action.conflict, f"body.{key}: the store has no key left to give a record in {path} "
                                                    f"(each key {resource.item} takes is given out); send one")
            text = key_text(assigned)
            record = {key: assigned, **body}
        else:
            record = body
        record = resource.filled(record)
        payload = encode(record)
        if payload is None:
            return _too_deep(action)
        size = record_held(text, payload)
        if fresh:
            size += bucket_held(path)
        held = self._held  # _hold(action, 1, size), without its frame: every create comes here
        if not (self.count < self.most and held.held + size <= self.most_bytes and held.take(size)):
            return self._refusal(action, 1, size)
        if fresh:
            self.buckets[path] = bucket
        if key not in body:
            bucket.next += 1  # given out only now: a refused create takes no key
        bucket.records[text] = payload
        self.count += 1
        self._created = record
        return _shown(action, record, payload)


def _assign(resource: Any, bucket: _Bucket) -> Any | None:
    """The next key to give a record in `bucket` (its counter moved to it), one the item path takes and no record
    has; None when none is left (an enum's values all given out) within the next 1,000 numbers."""
    for n in range(bucket.next, bucket.next + 1000):  # keys a state gave records, and numbers no schema takes
        value = resource.assign(n)  # (below a `minimum`), are passed over
        if value is not None and key_text(value) not in bucket.records:
            bucket.next = n
            return value
    return None


def _too_deep(action: Action) -> Outgoing:
    return error_reply(action.full, f"body: nested more than {MAX_DEPTH} levels deep; the store keeps no record so "
                                    "deep")


def _shown(action: Action, record: dict[str, Any], payload: bytes) -> Outgoing:
    """The answer showing `record` (held as `payload`: sent as it is when the answer shows the whole record)."""
    shape = action.shape
    if shape.silent:
        return Outgoing(shape.status, NO_BODY, b"", None)
    if shape.whole:
        return Outgoing(shape.status, record, payload, shape.media)
    picks = shape.picks
    if picks is None:
        body = shape.show(record)
    else:  # the declared fields (the Plant Store's `name` and `tag`): Shape.show() without its other steps
        body = {}
        for name in picks:
            if name in record:
                body[name] = record[name]
    return _new(Outgoing, (shape.status, body, json_bytes(body), shape.media, _NO_HEADERS, None, ()))


_new = tuple.__new__  # an Outgoing from a tuple (as decide.py makes its Decision): faster than its __new__, per answer
_NO_HEADERS: dict[str, str] = {}  # never changed in place (Outgoing.headers)
assert Outgoing._fields[4:] == ("headers", "ours", "more")
