"""A create's lean write path (issue 41): one look at the key, the fill, one encoding, the bytes held once, the answer
shown; what a client and the admin API see is as before: the answer, the conflict, the state, the budget's figures."""

from __future__ import annotations

import sys

import orjson

from plantstub.config import build_settings
from plantstub.server.decide import decide
from plantstub.server.runtime import load
from plantstub.server.table import Sessions
from plantstub.store.records import BUCKET_OVERHEAD, RECORD_OVERHEAD
from tests.helpers import AUTH, JSON_AUTH, make_request


def _stub():
    runtime = load(build_settings({"spec": "plant-store-full", "stateful": True}))
    return runtime, Sessions(runtime).default


def _post(record: dict) -> object:
    return make_request("POST", "/plants", headers=JSON_AUTH, raw=orjson.dumps(record))


def test_a_create_answers_the_declared_fields_and_holds_the_exact_bytes():
    runtime, session = _stub()
    made = decide(runtime, session, _post({"id": 7, "name": "Fern", "tag": "indoor"}))
    assert made.out is not None and (made.out.status, made.out.payload) == (200, b'{"name":"Fern","tag":"indoor"}')
    assert made.created == {"id": 7, "name": "Fern", "tag": "indoor"}
    held = b'{"id":7,"name":"Fern","tag":"indoor"}'
    size = len(held) + sys.getsizeof("7") + RECORD_OVERHEAD + sys.getsizeof("/plants") + BUCKET_OVERHEAD
    assert session.store is not None and session.store.held() == {"/plants": [held]}
    assert session.store.figures()["bytes"] == size == session.memory.figures()["parts"]["records"]
    gone = decide(runtime, session, make_request("DELETE", "/plants/7", headers=AUTH))
    assert gone.out is not None and gone.out.status == 204
    assert session.memory.figures()["parts"].get("records", 0) == 0  # the emptied collection goes too


def test_a_duplicate_key_is_refused_and_changes_nothing():
    runtime, session = _stub()
    decide(runtime, session, _post({"id": 1, "name": "Fern"}))
    before = session.memory.figures()
    again = decide(runtime, session, _post({"id": 1, "name": "Ivy"}))
    assert again.out is not None and orjson.loads(again.out.payload) == {
        "error": 400, "message": "body.id: a record in /plants already has id 1"}
    assert again.created is None and session.memory.figures() == before
    listed = decide(runtime, session, make_request("GET", headers=AUTH))
    assert listed.out is not None and listed.out.body == [{"name": "Fern"}]


def test_many_creates_keep_the_count_and_the_bytes_as_health_shows_them():
    runtime, session = _stub()
    for n in range(1, 51):
        assert decide(runtime, session, _post({"id": n, "name": f"p{n}"})).out.status == 200
    store = session.store
    assert store is not None and store.figures()["records"] == 50
    expected = sum(len(orjson.dumps({"id": n, "name": f"p{n}"})) + sys.getsizeof(str(n)) + RECORD_OVERHEAD
                   for n in range(1, 51)) + sys.getsizeof("/plants") + BUCKET_OVERHEAD
    assert store.figures()["bytes"] == expected == session.memory.figures()["parts"]["records"]
