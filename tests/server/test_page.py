"""The live page's routes over HTTP: the page itself, `calls/rows` (window, filters, long poll, who answered) and
`calls/{seq}`; bad queries are 400s in our words, the token and the page."""

from __future__ import annotations

import asyncio

import pytest

from plantstub import create_app
from tests.helpers import HANG, JSON_AUTH, write

FERN = b'{"id": 1, "name": "Fern"}'
BROKEN = b'{"id": "x", "name": "Fern"}'


@pytest.fixture
async def client(aiohttp_client, tmp_path):
    write(tmp_path, "cactus.yaml", "rules:\n  - match: {path: /plants, body: {name: Cactus}}\n"
                                   "    reply: {status: 200, body: {name: Cactus}}\n")
    return await aiohttp_client(create_app(scenarios=str(tmp_path)))


async def rows(client, query=""):
    response = await client.get("/__plantstub/calls/rows" + query)
    assert response.status == 200, await response.text()
    return await response.json()


async def test_page_is_one_html_file_that_loads_nothing_from_elsewhere(client):
    response = await client.get("/__plantstub/")
    text = await response.text()
    assert response.status == 200 and response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert response.headers["Content-Security-Policy"].startswith("default-src 'none'; script-src 'unsafe-inline'")
    assert "connect-src 'self'" in response.headers["Content-Security-Policy"]
    assert "<script src" not in text and "<link" not in text
    assert "http://" not in text and "https://" not in text


async def test_rows_newest_first_with_verdict_and_who_answered(client, tmp_path):
    await client.post("/plants", data=FERN, headers=JSON_AUTH)
    await client.post("/plants", data=BROKEN, headers=JSON_AUTH)
    await client.get("/nope")
    await client.put("/__plantstub/scenario", json={"name": "cactus"})
    await client.post("/plants", data=b'{"id": 3, "name": "Cactus"}', headers=JSON_AUTH)
    await client.post("/__plantstub/rules", json={"match": {"body": {"name": "Ivy"}}, "reply": {"status": 400,
                      "body": {"error": 1, "message": "no"}}})
    await client.post("/plants", data=b'{"id": 4, "name": "Ivy"}', headers=JSON_AUTH)
    await client.post("/plants", data=FERN, headers={**JSON_AUTH, "Prefer": "code=400"})
    await client.post("/plants", data=b'{"id": 5, "name": "Moss"}', headers={**JSON_AUTH, "Prefer": "return=minimal"})
    data = await rows(client, "?before=7")
    shown = [(r["seq"], r["status"], r["verdict"], r["problems"], r["who"], r["rule"]) for r in data["calls"]]
    cactus = f"{tmp_path / 'cactus.yaml'}:3"  # the reply's line
    assert shown == [(6, 400, "ok", 0, "prefer", None), (5, 400, "ok", 0, "rule r1 (POST /__plantstub/rules)", "r1"),
                     (4, 200, "ok", 0, f"scenario cactus rules[0] ({cactus})", "rules[0]"),
                     (3, 404, "invalid", 1, "check", None), (2, 400, "invalid", 1, "check", None),
                     (1, 200, "ok", 0, "default", None)]
    assert [r["answered_by"] for r in data["calls"]] == [
        {"kind": "prefer"}, {"kind": "rule", "id": "r1", "rule": "r1", "at": "POST /__plantstub/rules"},
        {"kind": "scenario", "scenario": "cactus", "rule": "rules[0]", "at": cactus}, {"kind": "check"},
        {"kind": "check"}, {"kind": "default"}]
    assert (data["recorded"], data["kept"], data["more"], data["epoch"]) == (7, 7, False, 0)
    assert (await rows(client, "?limit=1"))["calls"][0]["who"] == "default"  # a Prefer that asks for no answer


@pytest.mark.parametrize(("query", "seqs"), [
    ("?status=404", [3]), ("?status=4xx", [3, 2]), ("?status=2XX", [4, 1]), ("?path=nop", [3]),
    ("?verdict=invalid", [3, 2]), ("?verdict=ok", [4, 1]), ("?verdict=stub", []), ("?limit=2", [4, 3]),
    ("?before=3", [2, 1]), ("?since=2", [4, 3]), ("?since=2&path=/plants", [4]),
], ids=["status", "class", "class-upper", "path", "invalid", "ok", "stub", "limit", "before", "since", "since-path"])
async def test_rows_filters(client, query, seqs):
    for body in (FERN, BROKEN):
        await client.post("/plants", data=body, headers=JSON_AUTH)
    await client.get("/nope")
    await client.post("/plants", data=FERN, headers=JSON_AUTH)
    assert [r["seq"] for r in (await rows(client, query))["calls"]] == seqs


async def test_rows_say_when_older_calls_match(client):
    for _ in range(3):
        await client.post("/plants", data=FERN, headers=JSON_AUTH)
    assert (await rows(client, "?limit=2"))["more"] is True
    assert (await rows(client, "?limit=3"))["more"] is False


@pytest.mark.parametrize(("query", "message"), [
    ("?nope=1", "query.nope: unknown filter (known: since, before, limit, wait, epoch, path, status, verdict)"),
    ("?limit=0", "query.limit: 0 is not 1 to 500"),
    ("?limit=9999", "query.limit: 9999 is not 1 to 500"),
    ("?since=-1", "query.since: '-1' is not a whole number"),
    ("?wait=forever", "query.wait: 'forever' is not 0 to 30 seconds"),
    ("?wait=nan", "query.wait: 'nan' is not 0 to 30 seconds"),
    ("?status=600", "query.status: '600' is not a status (404) or a class (4xx)"),
    ("?verdict=bad", "query.verdict: 'bad' is not one of ok, invalid, stub, upstream"),
])
async def test_rows_refuse_bad_queries_in_our_words(client, query, message):
    response = await client.get("/__plantstub/calls/rows" + query)
    assert response.status == 400
    assert (await response.json())["message"] == message


async def test_long_poll_answers_when_a_call_arrives(client):
    await client.post("/plants", data=FERN, headers=JSON_AUTH)
    poll = asyncio.ensure_future(rows(client, "?since=1&wait=10&epoch=0"))
    await asyncio.sleep(0.2)
    assert not poll.done()  # held: nothing newer yet
    await client.post("/plants", data=BROKEN, headers=JSON_AUTH)
    data = await asyncio.wait_for(poll, HANG)
    assert [r["seq"] for r in data["calls"]] == [2]


async def test_long_poll_ends_after_its_wait_with_nothing(client):
    data = await asyncio.wait_for(rows(client, "?since=0&wait=0.2&epoch=0"), 5)
    assert data["calls"] == []


async def test_long_poll_after_a_reset_gives_the_new_epoch_whole(client):
    await client.post("/plants", data=FERN, headers=JSON_AUTH)
    await client.post("/plants", data=FERN, headers=JSON_AUTH)
    poll = asyncio.ensure_future(rows(client, "?since=2&wait=10&epoch=0"))
    await asyncio.sleep(0.2)
    await client.post("/__plantstub/reset")
    await client.post("/plants", data=BROKEN, headers=JSON_AUTH)
    data = await asyncio.wait_for(poll, HANG)
    if not data["calls"]:  # woken by the reset itself: the page asks again with the new epoch
        data = await rows(client, f"?since=0&wait=5&epoch={data['epoch']}")
    assert data["epoch"] == 1 and [r["seq"] for r in data["calls"]] == [1]


async def test_one_call_in_full(client):
    await client.post("/plants", data=BROKEN, headers=JSON_AUTH)
    response = await client.get("/__plantstub/calls/1")
    call = await response.json()
    assert call["errors"] == ["body.id: 'x' is not of type 'integer'"]
    assert call["response"]["status"] == 400 and call["body"] == {"id": "x", "name": "Fern"}
    # what the page says of it, from the record: its verdict, its problems by whom, who answered
    assert (call["verdict"], call["problems"], call["answered_by"], call["who"]) == (
        "invalid", {"invalid": ["body.id: 'x' is not of type 'integer'"]}, {"kind": "check"}, "check")


@pytest.mark.parametrize(("path", "status", "message"), [
    ("/__plantstub/calls/7", 404, "path: no call #7 is kept (kept: #1 to #1)"),
    ("/__plantstub/calls/x", 400, "path: 'x' is not a call number (GET calls/1)"),
    ("/__plantstub/calls/wait", 405, "method: GET is not allowed on /__plantstub/calls/wait (allowed: POST)"),
])
async def test_one_call_refusals(client, path, status, message):
    await client.post("/plants", data=FERN, headers=JSON_AUTH)
    response = await client.get(path)
    assert response.status == status
    assert (await response.json())["message"] == message


async def test_with_a_token_the_page_opens_but_its_data_needs_the_token(aiohttp_client):
    client = await aiohttp_client(create_app(admin_token="s3cret"))
    assert (await client.get("/__plantstub/")).status == 200
    for path in ("/__plantstub/calls/rows", "/__plantstub/calls/1", "/__plantstub/coverage"):
        assert (await client.get(path)).status == 401
    answer = await client.get("/__plantstub/calls/rows", headers={"Authorization": "Bearer s3cret"})
    assert answer.status == 200


async def test_a_foreign_page_cannot_switch_the_scenario(client):
    response = await client.put("/__plantstub/scenario", json={"name": "cactus"},
                                headers={"Origin": "http://evil.example"})
    assert response.status == 403
    assert (await response.json())["message"].startswith("Origin: 'http://evil.example' is another site")


async def test_no_listener_is_left_once_a_poll_ends(aiohttp_client):
    # What makes the page cost nothing per request while none is open: the journal tells no one of new calls.
    from plantstub.server.app import SESSIONS_KEY

    app = create_app()
    client = await aiohttp_client(app)
    journal = app[SESSIONS_KEY].default.journal
    await rows(client, "?since=0&wait=0.1&epoch=0")  # ended by its wait
    poll = asyncio.ensure_future(rows(client, "?since=0&wait=30&epoch=0"))
    deadline = asyncio.get_running_loop().time() + HANG
    while not journal._listeners and asyncio.get_running_loop().time() < deadline:  # the request arrived
        await asyncio.sleep(0.01)
    assert len(journal._listeners) == 1  # one page open: one listener, while its request waits
    await client.post("/plants", data=FERN, headers=JSON_AUTH)
    await asyncio.wait_for(poll, HANG)  # ended by a call
    assert journal._listeners == ()


async def test_rows_say_the_store_answered(aiohttp_client):
    client = await aiohttp_client(create_app(stateful=True))
    await client.post("/plants", data=FERN, headers=JSON_AUTH)
    await client.post("/plants", data=FERN, headers={**JSON_AUTH, "Prefer": "code=400"})
    shown = [(r["status"], r["who"]) for r in (await rows(client))["calls"]]
    assert shown == [(400, "prefer"), (200, "store")]
