"""Calls alike share in memory what they have in common (issue 41: a kept call costs less): the method, query,
verdict, status, reply headers and who answered are kept once for calls alike, and a refusal's body is made again
from its errors. Every view still shows each call exactly as it was sent and answered: `GET /__plantstub/calls`, the
`--journal` file, HAR, the live page's rows, the Python API and a waiter."""

from __future__ import annotations

import json
from pathlib import Path

from plantstub import Stub
from tests.helpers import AUTH, JSON_AUTH, call, raw_call


def test_calls_alike_and_unlike_each_read_back_as_sent_and_answered(tmp_path: Path) -> None:
    with Stub(journal=tmp_path / "calls.jsonl", journal_flush="call") as stub:
        # Two rules whose replies carry the same headers in another order: equal mappings, shown each in its own order
        stub.when(method="POST", path="/plants", body={"name": "Ivy"}).reply(
            200, {"name": "Ivy"}, headers={"X-A": "1", "X-B": "2"})
        stub.when(method="POST", path="/plants", body={"name": "Moss"}).reply(
            200, {"name": "Moss"}, headers={"X-B": "2", "X-A": "1"})
        plan: list[tuple[str, str, bytes | None, dict[str, str]]] = [
            ("POST", "/plants", b'{"id": 1, "name": "Fern"}', JSON_AUTH),
            ("POST", "/plants", b'{"id": 2, "name": "Fern"}', JSON_AUTH),  # alike: shares the first's
            ("POST", "/plants", b'{"id": "x1", "name": "Fern"}', JSON_AUTH),  # refused: its body made from its errors
            ("POST", "/plants", b'{"id": "x2", "name": "Fern"}', JSON_AUTH),
            ("POST", "/plants", b'{"id": 3, "name": "Fern"}', JSON_AUTH),
            ("POST", "/plants", b'{"id": 4, "name": "Ivy"}', JSON_AUTH),
            ("POST", "/plants", b'{"id": 5, "name": "Moss"}', JSON_AUTH),
            ("POST", "/plants", b'{"id": 6, "name": "Ivy"}', JSON_AUTH),
            ("POST", "/plants", b'{"name": 7}', JSON_AUTH),  # two errors, one body naming both
            ("GET", "/nowhere", None, AUTH),  # 404, refused by the route
            ("POST", "/plants", b'{"id": 8, "name": "Fern"}', {**JSON_AUTH, "X-Extra": "yes"}),
            ("POST", "/plants", b'{"id": 9, "name": "Fern"}', {**JSON_AUTH, "Prefer": "code=400"}),
            ("POST", "/plants", b'{"id": 10, "name": "Fern"}', JSON_AUTH),
        ]
        answers = [raw_call(stub.url, method, path, body, headers) for method, path, body, headers in plan]
        listed = call(stub.url, "GET", "/__plantstub/calls")[1]
        har = call(stub.url, "GET", "/__plantstub/calls?format=har")[1]
        kept = stub.calls
        rows = call(stub.url, "GET", "/__plantstub/calls/rows?limit=100")[1]
        waited = stub.wait_for_calls(12, method="POST", path="/plants")
    lines = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert isinstance(listed, list) and isinstance(har, dict) and isinstance(rows, dict)
    # the live page's rows, newest first: each call's own status, verdict and who answered
    assert [(r["seq"], r["method"], r["path"], r["status"], r["verdict"], r["answered_by"]) for r in rows["calls"]] == [
        (c["seq"], c["method"], c["path"], c["response"]["status"], "ok" if c["valid"] else "invalid",
         c["answered_by"]) for c in reversed(listed)]
    assert len(listed) == len(lines) == len(kept) == len(plan)
    for (method, path, body, headers), (status, payload, sent), shown, line, mine, entry in zip(
            plan, answers, listed, lines, kept, har["log"]["entries"], strict=True):
        assert (shown["method"], shown["path"]) == (method, path)
        assert shown["body"] == (None if body is None else json.loads(body))
        assert shown["headers"]["Authorization"] == "Bearer t" and ("X-Extra" in shown["headers"]) == (
            "X-Extra" in headers)
        reply = shown["response"]
        assert reply["status"] == status and reply["body"] == json.loads(payload)
        # the reply's headers the stub chose, in the order it sent them
        assert list(reply["headers"]) == [name for name in sent if name in reply["headers"]]
        assert shown["valid"] == (status < 400 or "Prefer" in headers) and bool(shown["errors"]) == (not shown["valid"])
        if not shown["valid"] and status == 400:  # the refusal names the errors, this call's own
            assert json.loads(payload)["message"] == "; ".join(shown["errors"])
        assert {k: v for k, v in line.items() if k not in ("session", "epoch")} == shown  # the --journal file
        assert mine.to_dict() == shown  # the Python API
        assert json.loads(entry["response"]["content"]["text"]) == json.loads(payload)  # HAR
        assert entry["response"]["status"] == status
    assert [c.to_dict() for c in waited] == [c for c in listed if c["method"] == "POST"]
    assert [c["response"]["headers"].get("X-A") for c in listed[5:8]] == ["1", "1", "1"]
    assert list(listed[5]["response"]["headers"])[:2] == ["X-A", "X-B"]
    assert list(listed[6]["response"]["headers"])[:2] == ["X-B", "X-A"]
    assert listed[2]["errors"] != listed[3]["errors"]  # each refusal its own text ('x1', 'x2')


def test_a_body_with_a_lone_surrogate_escape_reads_back_in_every_view(tmp_path: Path) -> None:
    """JSON allows `\\udc00` alone, and the stub takes it (echoed escaped); the HAR export answered 500 on it."""
    sent = b'{"id": 1, "name": "a\\udc00b"}'
    with Stub(journal=tmp_path / "calls.jsonl", journal_flush="call") as stub:
        status, payload, _ = raw_call(stub.url, "POST", "/plants", sent, JSON_AUTH)
        listed_status, listed = call(stub.url, "GET", "/__plantstub/calls")
        har_status, har = call(stub.url, "GET", "/__plantstub/calls?format=har")
    assert (status, json.loads(payload)) == (200, {"name": "a\udc00b"})
    assert listed_status == har_status == 200 and isinstance(listed, list) and isinstance(har, dict)
    [entry] = har["log"]["entries"]
    assert json.loads(entry["request"]["postData"]["text"]) == listed[0]["body"] == json.loads(sent)
    assert json.loads(entry["response"]["content"]["text"]) == {"name": "a\udc00b"}
    [line] = (tmp_path / "calls.jsonl").read_text().splitlines()
    assert json.loads(line)["body"] == json.loads(sent)
