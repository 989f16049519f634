"""The admin API over HTTP: health, calls with filters, reset, coverage, unknown routes and methods."""

from __future__ import annotations

import asyncio

import pytest

from plantstub import create_app
from tests.helpers import JSON_AUTH


@pytest.fixture
async def client(aiohttp_client, tmp_path):
    return await aiohttp_client(create_app(scenarios=str(tmp_path)))


async def traffic(client):
    await client.post("/plants", data=b'{"id": 1, "name": "Fern"}', headers=JSON_AUTH)
    await client.post("/plants?dry_run=1&tag=a&tag=b", data=b'{"id": "x", "name": "Fern"}', headers=JSON_AUTH)
    await client.get("/nope")
    await client.post("/plants", data=b'{"id": 2, "name": "Ivy"}', headers={"Content-Type": "application/json"})


async def get_calls(client, query=""):
    response = await client.get("/__plantstub/calls" + query)
    assert response.status == 200, await response.text()
    return await response.json()


async def test_calls_show_every_field(client):
    await traffic(client)
    calls = await get_calls(client)
    assert [c["seq"] for c in calls] == [1, 2, 3, 4]
    first = calls[0]
    assert set(first) == {"seq", "time", "method", "path", "query", "headers", "body", "valid", "errors",
                          "scenario", "rule", "response", "stub_errors", "pending", "proxied", "upstream",
                          "answered_by"}
    assert first["pending"] is False
    assert [c["answered_by"] for c in calls] == [{"kind": "default"}, {"kind": "check"}, {"kind": "check"},
                                                 {"kind": "check"}]
    assert first["proxied"] is False and first["upstream"] is None  # no --proxy: the stub answered
    assert first["time"].endswith("Z") and first["time"][10] == "T"
    assert (first["method"], first["path"], first["body"], first["valid"], first["errors"]) == (
        "POST", "/plants", {"id": 1, "name": "Fern"}, True, [])
    assert first["headers"]["Authorization"] == "Bearer t"
    assert first["response"] == {"status": 200, "headers": {"Content-Type": "application/json"},
                                 "body": {"name": "Fern"}}
    assert calls[1]["query"] == {"dry_run": "1", "tag": ["a", "b"]}
    assert calls[1]["errors"] == ["body.id: 'x' is not of type 'integer'"]
    assert calls[3]["response"]["status"] == 401


@pytest.mark.parametrize(
    ("query", "seqs"),
    [
        ("?method=post", [1, 2, 4]),
        ("?method=GET", [3]),
        ("?path=/plants", [1, 2, 4]),
        ("?path=/{anything}", [1, 2, 3, 4]),
        ("?status=400", [2]),
        ("?valid=false", [2, 3, 4]),
        ("?valid=true", [1]),
        ("?method=POST&valid=false", [2, 4]),
        ("?since=2", [3, 4]),
        ("?limit=2", [3, 4]),
    ],
    ids=["method-lower", "method-get", "path", "path-template", "status", "invalid", "valid", "combined",
         "since", "limit"],
)
async def test_calls_filters(client, query, seqs):
    await traffic(client)
    assert [c["seq"] for c in await get_calls(client, query)] == seqs


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("?stauts=400", "query.stauts: unknown filter (known: method, path, status, valid, scenario, rule, since, limit)"),
        ("?status=abc", "query.status: 'abc' is not an integer"),
        ("?valid=maybe", "query.valid: 'maybe' is not true or false"),
    ],
    ids=["unknown", "status-not-int", "valid-not-bool"],
)
async def test_calls_bad_filter_is_a_400(client, query, message):
    response = await client.get("/__plantstub/calls" + query)
    assert response.status == 400
    assert await response.json() == {"error": 400, "message": message}


async def test_delete_calls_and_reset_empty_the_journal(client):
    await traffic(client)
    response = await client.delete("/__plantstub/calls")
    assert await response.json() == {"deleted": 4}
    assert await get_calls(client) == []
    await traffic(client)
    assert [c["seq"] for c in await get_calls(client)] == [1, 2, 3, 4]  # a new epoch, numbered from 1 (issue 24)
    response = await client.post("/__plantstub/reset")
    assert response.status == 200
    assert await get_calls(client) == []


async def test_admin_requests_are_not_recorded(client):
    await client.get("/__plantstub/health")
    await client.get("/__plantstub/calls")
    assert await get_calls(client) == []


async def test_coverage_counts_calls_per_declared_response(client):
    await traffic(client)
    response = await client.get("/__plantstub/coverage")
    assert await response.json() == {
        "operations": [{
            "operation": "POST /plants",
            "operationId": "createPlant",
            "responses": [{"status": "200", "calls": 1}, {"status": "400", "calls": 1}],
            "undeclared": {"401": 1},
        }],
        "covered": 2, "total": 2, "percent": 100.0,
    }


async def test_coverage_shows_the_untested_400(client):
    await client.post("/plants", data=b'{"id": 1, "name": "Fern"}', headers=JSON_AUTH)
    report = await (await client.get("/__plantstub/coverage")).json()
    assert report["operations"][0]["responses"] == [{"status": "200", "calls": 1}, {"status": "400", "calls": 0}]
    assert (report["covered"], report["total"], report["percent"]) == (1, 2, 50.0)


async def test_concurrent_clients_lose_and_duplicate_nothing(client):
    async def one(i):
        body = f'{{"id": {i}, "name": "P{i}"}}'.encode()
        response = await client.post("/plants", data=body, headers=JSON_AUTH)
        assert response.status == 200

    await asyncio.gather(*(one(i) for i in range(300)))
    calls = await get_calls(client)
    assert len(calls) == 300
    assert sorted(c["seq"] for c in calls) == list(range(1, 301))
    assert sorted(c["body"]["id"] for c in calls) == list(range(300))


async def test_journal_cap_keeps_the_newest_and_counts_the_dropped(aiohttp_client, tmp_path):
    client = await aiohttp_client(create_app(scenarios=str(tmp_path), journal_size=3))
    for i in range(5):
        await client.post("/plants", data=f'{{"id": {i}, "name": "P"}}'.encode(), headers=JSON_AUTH)
    response = await client.get("/__plantstub/calls")
    assert [c["seq"] for c in await response.json()] == [3, 4, 5]
    assert (response.headers["X-Plantstub-Recorded"], response.headers["X-Plantstub-Dropped"]) == ("5", "2")


async def test_admin_wrong_method_is_json_405(client):
    response = await client.post("/__plantstub/calls")
    assert response.status == 405
    assert response.headers["Allow"] == "DELETE, GET, HEAD"
    assert await response.json() == {
        "error": 405, "message": "method: POST is not allowed on /__plantstub/calls (allowed: DELETE, GET, HEAD)"}


async def test_health_route(client):
    response = await client.get("/__plantstub/health")
    assert response.status == 200
    body = await response.json()
    assert body["status"] == "ok"
    assert body["spec"] == {"title": "Plant Store", "version": "1.0.0", "operations": 1}


async def test_unknown_admin_route_gets_json_404(client):
    response = await client.get("/__plantstub/nothing")
    assert response.status == 404
    assert await response.json() == {
        "error": 404, "message": "path: /__plantstub/nothing is not an admin route (see GET /__plantstub/health)"}


async def test_admin_webhooks_delete_brings_back_the_start_up_subscriptions(aiohttp_client):
    client = await aiohttp_client(create_app(spec="plant-store-full", webhook=["http://127.0.0.1:9/start"]))
    response = await client.put("/__plantstub/webhooks", json={"/plant/webhook": "http://127.0.0.1:9/test"})
    assert (response.status, await response.json()) == (200, {"/plant/webhook": "http://127.0.0.1:9/test"})
    response = await client.delete("/__plantstub/webhooks")
    assert (response.status, await response.json()) == (200, {"*": "http://127.0.0.1:9/start"})


JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize(
    ("method", "route", "example"),
    [
        ("PUT", "scenario", '{"name": "SCENARIO"} or {"name": null}'),
        ("PUT", "state", '{"/plants": [{"id": 1, "name": "Fern"}]}'),
        ("PUT", "webhooks", '{"WEBHOOK NAME or *": "http://URL", ...} ({} for none)'),
        ("POST", "rules", '{"match": {...}, "reply": {...}}'),
        ("POST", "calls/wait", '{"n": 1, "timeout": 5, "path": "/plants"}'),
        ("POST", "sessions", 'nothing, or {"id": "SESSION"}'),
    ],
)
async def test_admin_bodies_are_read_alike_and_refuse_nan(aiohttp_client, method, route, example):
    """One reader for every admin body: strict JSON (no NaN, as request bodies), one wording with an example."""
    client = await aiohttp_client(create_app(stateful=True, max_body=64))
    for raw, reason in ((b'{"n": NaN}', "NaN is not valid JSON"), (b'[-Infinity]', "-Infinity is not valid JSON"),
                        (b"[1e999]", "1e999 is too large for a JSON number")):
        response = await client.request(method, "/__plantstub/" + route, data=raw, headers=JSON)
        assert (response.status, await response.json()) == (  # what and where, as a request body's 400 says
            400, {"error": 400, "message": f"body: not valid JSON: {reason}; send {example}"})
    response = await client.request(method, "/__plantstub/" + route, data=b"{nope", headers=JSON)
    message = (await response.json())["message"]
    assert response.status == 400 and message.startswith("body: not valid JSON: ") and message.endswith(
        f" at line 1 column 2; send {example}")
    response = await client.request(method, "/__plantstub/" + route, data=b"[" * 65, headers=JSON)
    assert (response.status, (await response.json())["message"]) == (
        413, "body: larger than the limit of 64 bytes (--max-body)")


async def test_admin_problem_lists_have_one_shape(aiohttp_client):
    client = await aiohttp_client(create_app(stateful=True))
    state = await (await client.put("/__plantstub/state", json={"/pots": []})).json()
    rule = await (await client.post("/__plantstub/rules", json={"match": {"path": "/plant"}, "reply": {}})).json()
    for answer in (state, rule):
        assert answer["problems"] and all(set(p) == {"at", "message"} for p in answer["problems"])
        assert answer["message"] == "; ".join(f"{p['at']}: {p['message']}" for p in answer["problems"])
    assert rule["problems"][0]["at"] == "body.match.path"


async def test_admin_calls_are_written_by_the_one_json_writer(client):
    """GET calls goes through orjson like every admin answer: compact, whatever the header names' type."""
    await traffic(client)
    raw = await (await client.get("/__plantstub/calls")).read()
    assert raw.startswith(b'[{"seq":1,"time":') and b'"headers":{' in raw
