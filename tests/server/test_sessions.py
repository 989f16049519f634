"""Sessions over HTTP: `/__session/{id}` and `X-Plantstub-Session` isolate journal, counters, scenario and store;
the admin routes that list, open and end them; expiry, the cap, bad ids, the admin guard."""

from __future__ import annotations

import asyncio
import time

import pytest

from plantstub import create_app
from plantstub.server.app import SESSIONS_KEY
from plantstub.server.limits import SESSION_SHARE
from plantstub.server.runtime import load
from plantstub.server.table import SessionLimit, Sessions
from tests.helpers import AUTH, HANG, JSON_AUTH, reload

FERN = b'{"id": 1, "name": "Fern"}'


@pytest.fixture
async def client(aiohttp_client):
    return await aiohttp_client(create_app())


async def make(aiohttp_client, **options):
    return await aiohttp_client(create_app(**options))


async def post(client, path="/plants", body=FERN, **headers):
    response = await client.post(path, data=body, headers={**JSON_AUTH, **headers})
    return response.status, await response.json()


async def calls(client, prefix="", **headers):
    response = await client.get(prefix + "/__plantstub/calls", headers=headers)
    assert response.status == 200, await response.text()
    return await response.json()


async def test_sessions_each_see_the_flaky_400(client):
    """The issue's case: two clients of `flaky` sharing one stub each get the first 400."""
    for sid in ("a", "b"):
        response = await client.put(f"/__session/{sid}/__plantstub/scenario", json={"name": "flaky"})
        assert response.status == 200, await response.text()
    assert (await post(client, "/__session/a/plants"))[0] == 400
    assert (await post(client, "/__session/b/plants"))[0] == 400
    assert (await post(client, "/__session/a/plants"))[0] == 200
    assert (await post(client, "/plants", **{"X-Plantstub-Session": "b"}))[0] == 200
    # the default session has no scenario active: the plain echo
    assert (await post(client))[0] == 200


async def test_session_journal_is_its_own_and_records_the_path_without_prefix(client):
    await post(client, "/__session/a/plants?dry_run=1")
    await post(client, "/plants", b'{"id": 2, "name": "Ivy"}', **{"X-Plantstub-Session": "b"})
    await post(client)
    mine = await calls(client, "/__session/a")
    assert [(c["seq"], c["path"], c["query"]) for c in mine] == [(1, "/plants", {"dry_run": "1"})]
    theirs = await calls(client, **{"X-Plantstub-Session": "b"})
    assert [(c["seq"], c["body"]["name"]) for c in theirs] == [(1, "Ivy")]
    assert [c["seq"] for c in await calls(client)] == [1]
    # reset in one session leaves the others alone
    assert (await client.post("/__session/a/__plantstub/reset")).status == 200
    assert await calls(client, "/__session/a") == []
    assert len(await calls(client, "/__session/b")) == 1


async def test_a_live_sessions_request_is_read_at_its_target_within_the_prefix(client):
    # Once the session is live, its pipeline reads the target within the prefix without a clone (issue 26).
    assert (await post(client, "/__session/a/plants"))[0] == 200  # opens it
    assert (await post(client, "/__session/a/plants?dry_run=1&dry_run=2"))[0] == 200
    status, answer = await post(client, "/__session/a/pl%61nts/x?y=%20")
    assert (status, answer["message"]) == (404, "path: no path in the spec matches /plants/x")
    mine = await calls(client, "/__session/a")
    assert [(c["seq"], c["path"], c["query"]) for c in mine] == [
        (1, "/plants", {}), (2, "/plants", {"dry_run": ["1", "2"]}), (3, "/plants/x", {"y": " "})]
    assert await calls(client) == []  # none of them is the default session's


async def test_session_active_scenario_is_its_own(client):
    await client.put("/__session/a/__plantstub/scenario", json={"name": "store-closed"})
    health = await (await client.get("/__session/a/__plantstub/health")).json()
    assert health["active"] == "store-closed"
    assert (await (await client.get("/__plantstub/health")).json())["active"] is None
    assert (await post(client, "/__session/a/plants"))[0] == 400
    assert (await post(client, "/__session/b/plants"))[0] == 200
    # the per-request scenario header works inside a session too
    assert (await post(client, "/__session/b/plants", **{"X-Plantstub-Scenario": "store-closed"}))[0] == 400


async def test_a_session_starts_with_the_stubs_scenario(aiohttp_client):
    client = await make(aiohttp_client, scenario="store-closed")
    await client.put("/__plantstub/scenario", json={"name": None})
    assert (await post(client))[0] == 200
    assert (await post(client, "/__session/new/plants"))[0] == 400


async def test_session_store_records_are_its_own(aiohttp_client):
    client = await make(aiohttp_client, spec="plant-store-full", stateful=True)
    assert (await post(client, "/__session/a/plants"))[0] == 200
    listed = await client.get("/__session/b/plants", headers=AUTH)
    assert await listed.json() == []
    listed = await client.get("/__session/a/plants", headers=AUTH)
    assert await listed.json() == [{"name": "Fern"}]
    state = await (await client.get("/__plantstub/state")).json()
    assert state == {"/plants": []}


async def test_sessions_listed_opened_and_ended(client):
    await post(client, "/__session/a/plants")
    await post(client, "/__session/a/plants")
    response = await client.post("/__plantstub/sessions")
    assert response.status == 201
    opened = await response.json()
    assert set(opened) == {"id", "url", "instance"} and opened["url"].endswith(f"/__session/{opened['id']}/")
    response = await client.post("/__plantstub/sessions", json={"id": "ci-42"})
    assert (await response.json())["id"] == "ci-42"
    listing = await (await client.get("/__plantstub/sessions")).json()
    assert [(s["id"], s["calls"]) for s in listing["sessions"]] == [("ci-42", 0), (opened["id"], 0), ("a", 2)]
    assert listing["count"] == 3 and listing["max_sessions"] == 100 and listing["session_idle"] == 600
    assert listing["sessions"][0]["last_used"].endswith("Z")
    assert (await (await client.get("/__plantstub/health")).json())["sessions"] == 3
    instance = next(s["instance"] for s in listing["sessions"] if s["id"] == "a")
    response = await client.delete("/__plantstub/sessions/a")
    assert (response.status, await response.json()) == (200, {"ended": "a", "instance": instance,
                                                                      "dynamic_answers": 0})
    response = await client.delete("/__plantstub/sessions/a")
    assert response.status == 404
    assert (await response.json())["message"] == "path: no session 'a' (it ended, or never began)"
    # a session used again after its end starts afresh
    assert await calls(client, "/__session/a") == []


async def test_coverage_per_session_and_in_total(client):
    await post(client, "/__session/a/plants")
    await post(client, "/__session/b/plants", b'{"id": "x"}')
    await post(client)
    await client.delete("/__plantstub/sessions/b")  # an ended session still counts in the total

    def plants(report):
        return {r["status"]: r["calls"] for r in report["operations"][0]["responses"]}

    a = await (await client.get("/__session/a/__plantstub/coverage")).json()
    assert plants(a) == {"200": 1, "400": 0}
    default = await (await client.get("/__plantstub/coverage")).json()
    assert plants(default) == {"200": 1, "400": 0}
    total = await (await client.get("/__plantstub/coverage?total=true")).json()
    assert plants(total) == {"200": 2, "400": 1}
    assert total["covered"] == 2
    response = await client.get("/__plantstub/coverage?total=maybe")
    assert (await response.json())["message"] == "query.total: 'maybe' is not true or false"


@pytest.mark.parametrize(
    ("path", "headers", "message"),
    [
        ("/__session/a.b/plants", {}, "path: 'a.b' is not a session id (expected 1 to 64 letters, digits, '_' or "
                                      "'-', as in /__session/ci-42/plants)"),
        ("/__session//plants", {}, "path: '' is not a session id (expected 1 to 64 letters, digits, '_' or '-', "
                                   "as in /__session/ci-42/plants)"),
        ("/__session/" + "x" * 65 + "/plants", {}, "path: '" + "x" * 65 + "' is not a session id (expected 1 to "
                                                   "64 letters, digits, '_' or '-', as in /__session/ci-42/plants)"),
        ("/__session/a%20b/plants", {}, "path: 'a%20b' is not a session id (expected 1 to 64 letters, digits, "
                                        "'_' or '-', as in /__session/ci-42/plants)"),
        ("/plants", {"X-Plantstub-Session": "../etc"}, "headers.X-Plantstub-Session: '../etc' is not a session id "
                                                       "(expected 1 to 64 letters, digits, '_' or '-')"),
        ("/__session/a/plants", {"X-Plantstub-Session": "b"}, "headers.X-Plantstub-Session: 'b' names another "
                                                              "session than the path ('a'); send one of them"),
    ],
    ids=["dot", "empty", "too-long", "encoded", "header", "both-differ"],
)
async def test_bad_session_ids_get_400(client, path, headers, message):
    status, body = await post(client, path, **headers)
    assert (status, body) == (400, {"error": 400, "message": message})
    listing = await (await client.get("/__plantstub/sessions")).json()
    assert listing["count"] == 0  # nothing was opened
    assert await calls(client) == []


async def test_same_id_in_path_and_header_is_fine(client):
    assert (await post(client, "/__session/a/plants", **{"X-Plantstub-Session": "a"}))[0] == 200


async def test_session_cap_answers_503_once_the_admin_api_opened_every_session(aiohttp_client):
    client = await make(aiohttp_client, max_sessions=2)
    for sid in ("a", "b"):
        assert (await client.post("/__plantstub/sessions", json={"id": sid})).status == 201
    status, body = await post(client, "/__session/c/plants")
    assert status == 503
    assert body["message"] == (
        "session 'c': this stub already serves 2 sessions, its cap (--max-sessions, PLANTSTUB_MAX_SESSIONS); end "
        "one with DELETE /__plantstub/sessions/ID, or wait: a session unused for 600 s ends (--session-idle)")
    assert (await client.post("/__plantstub/sessions")).status == 503
    assert (await post(client, "/__session/a/plants"))[0] == 200  # a live one goes on
    await client.delete("/__plantstub/sessions/b")
    assert (await post(client, "/__session/c/plants"))[0] == 200


async def test_at_the_cap_the_least_recently_used_implicit_session_makes_room(aiohttp_client):
    client = await make(aiohttp_client, max_sessions=2)
    assert (await post(client, "/__session/a/plants"))[0] == 200
    assert (await post(client, "/__session/b/plants"))[0] == 200
    assert (await post(client, "/__session/a/plants"))[0] == 200  # b is the least recently used now
    assert (await post(client, "/__session/c/plants"))[0] == 200
    listing = await (await client.get("/__plantstub/sessions")).json()
    assert [(s["id"], s["opened"]) for s in listing["sessions"]] == [("c", "implicit"), ("a", "implicit")]
    assert (listing["ended"], listing["evicted"]) == (1, 1)
    assert await calls(client, "/__session/b") == []  # evicted with its calls (this look opens b afresh: a goes)
    health = await (await client.get("/__plantstub/health")).json()
    assert health["session_counts"] == {"admin": 0, "implicit": 2, "evicted": 2}


async def test_an_admin_token_on_a_plain_request_opens_its_session_as_the_admin_api(aiohttp_client):
    client = await make(aiohttp_client, admin_token="s3cret", max_sessions=2)
    bearer = {"Authorization": "Bearer s3cret"}
    assert (await post(client, "/__session/a/plants"))[0] == 200  # the fixture's `Bearer t`: not the token
    assert (await post(client, "/__session/b/plants", Authorization="BEARER s3cret"))[0] == 200
    assert (await post(client, "/__session/a/plants", **bearer))[0] == 200  # promoted
    listing = await (await client.get("/__plantstub/sessions", headers=bearer)).json()
    assert {s["id"]: s["opened"] for s in listing["sessions"]} == {"a": "admin", "b": "admin"}
    assert (await post(client, "/__session/c/plants"))[0] == 503



async def test_a_live_session_by_header_is_promoted_and_ended_as_by_prefix(aiohttp_client):
    """The header's straight path to a live session's pipeline (issue 26) keeps the token's promotion, the order of
    last use, and a session ended then named again starts afresh."""
    client = await make(aiohttp_client, admin_token="s3cret", max_sessions=2)
    bearer = {"Authorization": "Bearer s3cret"}
    named = {"X-Plantstub-Session": "a"}
    assert (await post(client, **named))[0] == 200
    assert (await post(client, **named))[0] == 200  # live now: the straight path
    assert (await post(client, **named, **bearer))[0] == 200  # promoted there
    assert (await post(client, **{"X-Plantstub-Session": "b"}))[0] == 200
    listing = await (await client.get("/__plantstub/sessions", headers=bearer)).json()
    assert {s["id"]: s["opened"] for s in listing["sessions"]} == {"a": "admin", "b": "implicit"}
    assert len(await calls(client, "/__session/a", **bearer)) == 3
    assert (await client.delete("/__plantstub/sessions/a", headers=bearer)).status == 200
    assert (await post(client, **named))[0] == 200
    assert len(await calls(client, "/__session/a", **bearer)) == 1

def test_sessions_table_evicts_only_implicit_sessions_least_recently_used_first():
    sessions = Sessions(load(create_app(max_sessions=3)[SESSIONS_KEY].runtime.settings))
    t = time.monotonic()  # listing() looks at the clock: the times below are within --session-idle of it
    sessions.open("kept", now=t + 1)
    sessions.open("x", by_admin=False, now=t + 2)
    sessions.open("y", by_admin=False, now=t + 3)
    assert sessions.use("x", now=t + 4) is not None  # y is the least recently used implicit one
    assert sessions.use("nobody", now=t + 4) is None and len(sessions) == 3  # use() opens nothing
    sessions.open("z", by_admin=False, now=t + 5)
    assert [sid for sid, _, _ in sessions.listing()] == ["z", "x", "kept"]
    sessions.open("x", now=t + 6)  # promoted
    sessions.open("w", now=t + 7)
    assert sessions.counts() == {"admin": 3, "implicit": 0, "evicted": 2}
    with pytest.raises(SessionLimit):
        sessions.open("v", by_admin=False, now=t + 8)
    assert (sessions.ended, sessions.evicted) == (2, 2)


def test_a_session_unused_for_the_idle_time_ends_on_the_next_use_of_another():
    """use() walks the table only once a session may be due (the oldest last use + --session-idle): none ends early,
    none late, however often another is used meanwhile."""
    sessions = Sessions(load(create_app(session_idle=10)[SESSIONS_KEY].runtime.settings))
    t = 1000.0
    sessions.open("a", by_admin=False, now=t)
    sessions.open("b", by_admin=False, now=t + 1)
    for n in range(2, 10):
        assert sessions.use("b", now=t + n) is not None and len(sessions) == 2
    assert sessions.use("b", now=t + 10) is not None  # a: unused for 10 s
    assert (len(sessions), sessions.ended, sessions.use("a", now=t + 10)) == (1, 1, None)
    assert sessions.use("b", now=t + 19.9) is not None and len(sessions) == 1
    sessions.open("c", by_admin=False, now=t + 29.8)  # b: unused for 9.9 s
    assert sessions.use("c", now=t + 29.85) is not None and len(sessions) == 2 and sessions.ended == 1
    assert sessions.use("c", now=t + 29.9) is not None and (len(sessions), sessions.ended) == (1, 2)  # b: 10 s


async def test_idle_sessions_expire(aiohttp_client):
    client = await make(aiohttp_client, session_idle=0.2)
    await post(client, "/__session/old/plants")
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:  # expiry is lazy: the next look at the table ends it
        listing = await (await client.get("/__plantstub/sessions")).json()
        if listing["count"] == 0:
            break
    assert listing["count"] == 0 and listing["ended"] == 1
    assert await calls(client, "/__session/old") == []  # the same id starts afresh


async def test_admin_token_guards_prefixed_admin_routes(aiohttp_client):
    client = await make(aiohttp_client, admin_token="s3cret")
    response = await client.get("/__session/a/__plantstub/calls")
    assert response.status == 401
    assert (await response.json())["message"].startswith("Authorization: is missing")
    response = await client.get("/__plantstub/calls", headers={"X-Plantstub-Session": "a"})
    assert response.status == 401
    listing = await client.get("/__plantstub/sessions", headers={"Authorization": "Bearer s3cret"})
    assert (await listing.json())["count"] == 0  # a refused admin call opens no session
    response = await client.get("/__session/a/__plantstub/calls", headers={"Authorization": "Bearer s3cret"})
    assert response.status == 200
    response = await client.get("/__session/a/__plantstub/health")  # health stays open, as unprefixed
    assert response.status == 200
    response = await client.get("/__plantstub/sessions")
    assert response.status == 401


async def test_cross_site_guard_applies_in_a_session(client):
    response = await client.post("/__session/a/__plantstub/reset", headers={"Origin": "http://evil.example"})
    assert response.status == 403
    response = await client.put("/__session/a/__plantstub/scenario", data=b'{"name": "flaky"}',
                                headers={"Content-Type": "text/plain"})
    assert response.status == 415


async def test_cors_in_a_session(aiohttp_client):
    client = await make(aiohttp_client, cors=True)
    response = await client.options("/__session/a/plants", headers={
        "Origin": "http://app.example", "Access-Control-Request-Method": "POST"})
    assert response.status == 204
    assert "POST" in response.headers["Access-Control-Allow-Methods"]
    response = await client.post("/__session/a/plants", data=FERN, headers={**JSON_AUTH, "Origin": "http://app.example"})
    assert response.headers["Access-Control-Allow-Origin"] == "http://app.example"
    response = await client.get("/__session/a/__plantstub/calls", headers={"Origin": "http://app.example"})
    assert "Access-Control-Allow-Origin" not in response.headers  # the admin API stays out of CORS


async def test_session_admin_routes_exist_only_on_the_default_session(client):
    response = await client.get("/__session/a/__plantstub/sessions")
    assert response.status == 404


async def test_a_session_inside_a_session_is_just_a_path(client):
    status, body = await post(client, "/__session/a/__session/b/plants")
    assert (status, body["message"]) == (404, "path: no path in the spec matches /__session/b/plants")
    listing = await (await client.get("/__plantstub/sessions")).json()
    assert [s["id"] for s in listing["sessions"]] == ["a"]


async def test_opening_a_session_with_a_bad_body(aiohttp_client):
    client = await make(aiohttp_client, max_body=64)
    for body, status, message in (
        (b"[NaN]", 400, 'body: not valid JSON: NaN is not valid JSON; send nothing, or {"id": "SESSION"}'),
        (b'{"id": 7}', 400, 'body: expected nothing, or {"id": "SESSION"} (and "seed_key": "KEY", optional)'),
        (b'{"name": "x"}', 400, 'body: expected nothing, or {"id": "SESSION"} (and "seed_key": "KEY", optional)'),
        (b'{"id": "a b"}', 400, "body.id: 'a b' is not a session id (expected 1 to 64 letters, digits, '_' or '-')"),
        (b'{"seed_key": 7}', 400, "body.seed_key: expected a string (a test's node id, say), not int"),
    ):
        response = await client.post("/__plantstub/sessions", data=body, headers={"Content-Type": "application/json"})
        assert (response.status, (await response.json())["message"]) == (status, message)

    async def chunks():
        yield b'{"id": "' + b"x" * 100 + b'"}'

    response = await client.post("/__plantstub/sessions", data=chunks(), headers={"Content-Type": "application/json"})
    assert response.status == 413 and response.content_type == "application/json"
    assert (await (await client.get("/__plantstub/sessions")).json())["count"] == 0


async def test_unknown_paths_in_a_session_answer_as_unprefixed(client):
    status, body = await post(client, "/__session/a/nope")
    assert (status, body["message"]) == (404, "path: no path in the spec matches /nope")
    status, body = await post(client, "/__session/a")
    assert (status, body["message"]) == (404, "path: no path in the spec matches /")


async def test_a_reload_reaches_every_session(aiohttp_client, tmp_path):
    (tmp_path / "closed.yaml").write_text(
        "rules:\n  - match: {path: /plants}\n    reply: {status: 400, body: {error: 1, message: closed}}\n")
    app = create_app(scenarios=str(tmp_path))
    client = await aiohttp_client(app)
    await client.put("/__session/a/__plantstub/scenario", json={"name": "closed"})
    (tmp_path / "closed.yaml").write_text(
        "rules:\n  - match: {path: /plants}\n    reply: {status: 400, body: {error: 2, message: shut}}\n")
    reload(app[SESSIONS_KEY])
    assert (await post(client, "/__session/a/plants"))[1] == {"error": 2, "message": "shut"}


def test_sessions_fill_up_to_the_cap_with_a_share_of_the_bounds_each():
    # Speed (opening one: 30-55 µs) is a benchmark figure (docs/sessions.md), not asserted here.
    sessions = Sessions(load(create_app(stateful=True)[SESSIONS_KEY].runtime.settings))
    for i in range(100):
        sessions.open(f"s{i}")
    with pytest.raises(SessionLimit):
        sessions.open("one-more")
    session, default = sessions.open("s0"), sessions.default
    assert session.journal.max_bytes == default.journal.max_bytes // SESSION_SHARE
    assert session.webhooks.log.max_bytes == default.webhooks.log.max_bytes // SESSION_SHARE
    assert session.store is not None and default.store is not None
    assert session.store.most_bytes == default.store.most_bytes // SESSION_SHARE


async def test_session_webhooks_are_its_own_and_stop_with_it(aiohttp_client, aiohttp_server):
    from aiohttp import web

    received = []

    async def hook(request: web.Request) -> web.Response:
        received.append(await request.json())
        return web.Response(status=200)

    receiver = web.Application()
    receiver.router.add_post("/hook", hook)
    url = str((await aiohttp_server(receiver)).make_url("/hook"))
    app = create_app(spec="plant-store-full")
    client = await aiohttp_client(app)
    answer = await client.put("/__session/a/__plantstub/webhooks", json={"*": url})
    assert answer.status == 200
    assert await (await client.get("/__session/b/__plantstub/webhooks")).json() == {}
    assert await (await client.get("/__plantstub/webhooks")).json() == {}
    await post(client, "/__session/b/plants", b'{"id": 2, "name": "Ivy"}')
    await post(client, "/__session/a/plants")
    listed: list = []
    deadline = time.monotonic() + HANG
    while not listed and time.monotonic() < deadline:
        listed = await (await client.get("/__session/a/__plantstub/deliveries")).json()
        await asyncio.sleep(0.01)
    assert [(d["url"], d["status"]) for d in listed] == [(url, 200)]
    assert received == [{"id": 1, "name": "Fern"}]
    assert await (await client.get("/__session/b/__plantstub/deliveries")).json() == []
    sender = app[SESSIONS_KEY].open("a").webhooks.sender
    assert sender.started
    await client.delete("/__plantstub/sessions/a")
    deadline = time.monotonic() + HANG
    while not sender.closed and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert sender.closed and sender.pending == 0  # the ended session sends nothing more
