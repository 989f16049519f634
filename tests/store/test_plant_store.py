"""--stateful with the whole Plant Store over HTTP: create, list, limit, delete, and what goes wrong."""

from __future__ import annotations

import pytest

from plantstub import create_app
from tests.helpers import AUTH


@pytest.fixture
async def client(aiohttp_client, tmp_path):
    return await aiohttp_client(create_app(spec="plant-store-full", scenarios=str(tmp_path), stateful=True))


async def create(client, body):
    response = await client.post("/plants", json=body, headers=AUTH)
    return response.status, await response.json()


async def listed(client, query=""):
    response = await client.get("/plants" + query, headers=AUTH)
    assert response.status == 200, await response.text()
    return await response.json()


async def test_plant_store_create_list_limit_delete(client):
    assert await listed(client) == []
    for plant in ({"id": 3, "name": "Fern", "tag": "fern"}, {"id": 1, "name": "Cactus"}, {"id": 2, "name": "Ivy"}):
        assert await create(client, plant) == (200, {k: v for k, v in plant.items() if k != "id"})
    # creation order, in the declared shape (Plant: name and tag, not the id)
    assert await listed(client) == [{"name": "Fern", "tag": "fern"}, {"name": "Cactus"}, {"name": "Ivy"}]
    assert await listed(client, "?limit=2") == [{"name": "Fern", "tag": "fern"}, {"name": "Cactus"}]
    assert await listed(client, "?limit=0") == []
    response = await client.delete("/plants/1", headers=AUTH)
    assert response.status == 204 and await response.read() == b""
    assert await listed(client) == [{"name": "Fern", "tag": "fern"}, {"name": "Ivy"}]


async def test_plant_store_delete_unknown_answers_the_declared_error_naming_the_id(client):
    await create(client, {"id": 1, "name": "Fern"})
    response = await client.delete("/plants/7", headers=AUTH)
    assert response.status == 400  # DELETE /plants/{id} declares 204 and 400, no 404
    assert await response.json() == {"error": 400, "message": "path.id: no record in /plants has id 7"}
    await client.delete("/plants/1", headers=AUTH)
    again = await client.delete("/plants/1", headers=AUTH)
    assert (again.status, (await again.json())["message"]) == (400, "path.id: no record in /plants has id 1")


async def test_plant_store_duplicate_create_answers_400_and_keeps_the_first(client):
    await create(client, {"id": 1, "name": "Fern"})
    assert await create(client, {"id": 1, "name": "Impostor"}) == (
        400, {"error": 400, "message": "body.id: a record in /plants already has id 1"})
    assert await listed(client) == [{"name": "Fern"}]


async def test_plant_store_invalid_create_stores_nothing(client):
    status, body = await create(client, {"name": "No id"})
    assert status == 400 and "id" in body["message"]
    assert await listed(client) == []


async def test_plant_store_prefer_and_rules_answer_first(aiohttp_client, tmp_path):
    (tmp_path / "closed.yaml").write_text(
        "rules:\n  - match: {method: POST, path: /plants}\n    reply: {status: 400, body: {error: 400, message: closed}}\n",
        encoding="utf-8")
    client = await aiohttp_client(create_app(spec="plant-store-full", scenarios=str(tmp_path), stateful=True))
    preferred = await client.post("/plants", json={"id": 1, "name": "Fern"}, headers={**AUTH, "Prefer": "code=400"})
    assert preferred.status == 400
    await client.put("/__plantstub/scenario", json={"name": "closed"})
    ruled = await client.post("/plants", json={"id": 2, "name": "Ivy"}, headers=AUTH)
    assert (ruled.status, await ruled.json()) == (400, {"error": 400, "message": "closed"})
    assert await (await client.get("/__plantstub/state")).json() == {"/plants": []}


async def test_plant_store_without_stateful_nothing_is_remembered(aiohttp_client, tmp_path):
    client = await aiohttp_client(create_app(spec="plant-store-full", scenarios=str(tmp_path)))
    for _ in range(2):  # the same id twice: no store, no conflict
        assert (await client.post("/plants", json={"id": 1, "name": "Fern"}, headers=AUTH)).status == 200
    deleted = await client.delete("/plants/1", headers=AUTH)
    assert deleted.status == 204
    listing = await client.get("/plants", headers=AUTH)
    assert listing.status == 200 and (await listing.json()) != [{"name": "Fern"}]  # the generated default answer
    state = await client.get("/__plantstub/state")
    assert state.status == 409
    assert (await state.json())["message"] == (
        "state: this stub keeps no records; start it with --stateful (PLANTSTUB_STATEFUL=1, Stub(stateful=True), "
        "pytest --plantstub-stateful)")
    put = await client.put("/__plantstub/state", json={"/plants": []})
    assert put.status == 409


async def test_plant_store_is_bounded_with_a_clear_answer(client):
    full = {"/plants": [{"id": i, "name": f"P{i}"} for i in range(1, 10_001)]}
    response = await client.put("/__plantstub/state", json=full)
    assert response.status == 200
    refused = await client.post("/plants", json={"id": 20_000, "name": "One too many"}, headers=AUTH)
    assert refused.status == 400  # POST /plants declares 200 and 400: the declared error, not an undeclared 507
    assert (await refused.json())["message"] == (
        "store: full, 10,000 records is the most a stub keeps; delete some, or reset it (POST /__plantstub/reset)")
    assert (await client.delete("/plants/5", headers=AUTH)).status == 204
    assert (await create(client, {"id": 20_000, "name": "Fits now"}))[0] == 200
    over = await client.put("/__plantstub/state", json={"/plants": [*full["/plants"], {"id": 0, "name": "x"}]})
    assert (over.status, (await over.json())["message"]) == (400, "state: 10,001 records; a stub keeps at most 10,000")


async def test_plant_store_journal_sees_stateful_answers_as_valid(client):
    await create(client, {"id": 1, "name": "Fern"})
    await client.delete("/plants/9", headers=AUTH)
    calls = await (await client.get("/__plantstub/calls")).json()
    assert [(c["response"]["status"], c["valid"], c["errors"]) for c in calls] == [(200, True, []), (400, True, [])]
    assert calls[0]["response"]["body"] == {"name": "Fern"}


async def test_plant_store_odd_limits_do_not_break_the_list(client):
    await create(client, {"id": 1, "name": "Fern"})
    for junk in ("abc", "99999999999999999999", "1.5"):  # refused by the request check, before the store
        response = await client.get(f"/plants?limit={junk}", headers=AUTH)
        assert response.status == 400, junk
    response = await client.get("/plants?limit=-5", headers=AUTH)  # the spec sets no minimum: none listed
    assert (response.status, await response.json()) == (200, [])
    head = await client.head("/plants", headers=AUTH)
    assert head.status == 200 and await head.read() == b""
