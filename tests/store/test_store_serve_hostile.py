"""`plantstub serve --stateful` against hostile clients over raw HTTP: nested collections (tests/data/specs/things.yaml,
`/shelves/{shelf}/words`) keep nothing for refused creates, and an emptied collection goes unless it remembers keys."""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit

from tests.helpers import SPECS, call

JSON = {"Content-Type": "application/json"}
DEEP = '{"a":' * 260 + "1" + "}" * 260  # more levels than the store keeps


def store_figures(url: str) -> tuple[dict | None, int]:
    """Health's store figures, and the records' part of the session's memory budget."""
    status, health = call(url, "GET", "/__plantstub/health")
    assert status == 200 and isinstance(health, dict)
    return health.get("store"), health["memory"]["session"]["parts"].get("records", 0)


def state(url: str) -> dict:
    status, body = call(url, "GET", "/__plantstub/state")
    assert status == 200 and isinstance(body, dict)
    return body


NO_RECORDS = {"/labels": [], "/numbers": [], "/words": []}


def test_store_refused_creates_under_many_parents_leave_nothing(serve, tmp_path):
    stub = serve("--spec", str(SPECS / "things.yaml"), "--scenarios", str(tmp_path), "--port", "0", "--stateful")
    assert call(stub.url, "POST", "/shelves/kept/words", {"word": "kept"})[0] == 201
    before = store_figures(stub.url)
    parts = urlsplit(stub.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    statuses: dict[int, int] = {}
    try:
        for i in range(2_000):  # each under a parent id of its own
            connection.request("POST", f"/shelves/s{i}/words", body=f'{{"word": "w", "x": {DEEP}}}', headers=JSON)
            response = connection.getresponse()
            response.read()
            statuses[response.status] = statuses.get(response.status, 0) + 1
    finally:
        connection.close()
    assert statuses == {507: 2_000}  # the store's full answer (undeclared): it keeps nothing so deep
    assert state(stub.url) == {**NO_RECORDS, "/shelves/kept/words": [{"word": "kept"}]}
    assert store_figures(stub.url) == before
    assert before[0] is not None and before[0]["collections"] == 1  # /shelves/kept/words


def test_store_emptied_collections_go_unless_they_remember_keys(serve, tmp_path):
    stub = serve("--spec", str(SPECS / "things.yaml"), "--scenarios", str(tmp_path), "--port", "0", "--stateful")
    empty = store_figures(stub.url)
    for i in range(200):  # created with their keys, then deleted: nothing to remember
        assert call(stub.url, "POST", f"/shelves/s{i}/words", {"word": "w"})[0] == 201
        assert call(stub.url, "DELETE", f"/shelves/s{i}/words/w")[0] == 204
    assert state(stub.url) == NO_RECORDS
    assert store_figures(stub.url) == empty
    assert empty == ({"records": 0, "collections": 0, "bytes": 0, "max_records": 10_000, "max_bytes": 64 * 2**20}, 0)
    # A key the store assigned is never given again: its emptied collection stays, and is counted
    assert call(stub.url, "POST", "/shelves/a/words", {"note": "n"}) == (201, {"word": "1"})
    assert call(stub.url, "DELETE", "/shelves/a/words/1")[0] == 204
    figures, held = store_figures(stub.url)
    assert figures is not None and (figures["records"], figures["collections"]) == (0, 1)
    assert held == figures["bytes"] > 0
    assert call(stub.url, "POST", "/shelves/a/words", {"note": "n"}) == (201, {"word": "2"})
    assert state(stub.url)["/shelves/a/words"] == [{"word": "2", "note": "n"}]
