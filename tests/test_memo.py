"""IdentityMemo: one value per object by identity, the object kept alive with it."""

from __future__ import annotations

import gc
import weakref

from plantstub._memo import IdentityMemo


class Thing:
    pass


def test_identity_memo_tells_equal_objects_apart():
    memo: IdentityMemo[str] = IdentityMemo()
    a, b = {"type": "string"}, {"type": "string"}
    memo.put(a, "a")
    assert (memo.get(a), memo.get(b), a in memo, b in memo) == ("a", None, True, False)


def test_identity_memo_make_builds_once_per_object_and_tag():
    memo: IdentityMemo[int] = IdentityMemo()
    made: list[str] = []
    node = {"readOnly": True}
    for tag in ("readOnly", "readOnly", "writeOnly", None):
        memo.make(node, lambda tag=tag: made.append(str(tag)) or len(made), tag)
    assert made == ["readOnly", "writeOnly", "None"]
    assert [memo.get(node, tag) for tag in ("readOnly", "writeOnly", None, "other")] == [1, 2, 3, None]


def test_identity_memo_tuple_keys_are_each_object_by_identity():
    memo: IdentityMemo[str] = IdentityMemo()
    flat, branch, twin = {"oneOf": []}, {"a": 1}, {"a": 1}
    memo.put((flat, branch), "merged")
    assert (memo.get((flat, branch)), memo.get((flat, twin)), memo.get(flat)) == ("merged", None, None)


def test_identity_memo_keeps_its_objects_alive_so_no_id_is_reused():
    memo: IdentityMemo[str] = IdentityMemo()
    thing = Thing()
    alive = weakref.ref(thing)
    memo.put(thing, "kept")
    del thing
    gc.collect()
    assert alive() is not None and memo.get(alive()) == "kept"
    memo.clear()
    gc.collect()
    assert alive() is None
