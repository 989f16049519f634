"""A scenario's `state:` seeds the store: checked at load (`file:line:` errors), seeded on activation, restored
by reset; the admin `GET`/`PUT /__plantstub/state`, and `stub.state` / `stub.set_state()` in Python."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

from plantstub import PlantstubError, ScenarioError, Stub, create_app
from plantstub.contract.load import load_spec
from plantstub.scenarios.load import load_scenarios
from tests.helpers import AUTH, SPECS, reload, same, write

FULL = load_spec("plant-store-full")
SEEDED = """\
description: two plants in the store
state:
  /plants:
    - {id: 1, name: Fern, tag: fern}
    - {id: 2, name: Ivy}
"""


def test_state_load_errors_point_at_their_lines(tmp_path):
    write(tmp_path, "bad.yaml", """\
description: a broken seed
state:
  /plants:
    - {id: 1, name: Fern}
    - {name: No key}
    - {id: 1, name: Again}
    - {id: three, name: 3}
  /trees:
    - {id: 1}
""")
    scenarios, errors = load_scenarios(tmp_path, FULL)
    assert scenarios == {}
    assert [str(e) for e in errors] == [
        f"{tmp_path}/bad.yaml:5: state./plants[1]: has no 'id': every record needs its key",
        f"{tmp_path}/bad.yaml:6: state./plants[2].id: 1 is the key of an earlier record",
        f"{tmp_path}/bad.yaml:7: state./plants[3].id: 'three' is not of type 'integer'",
        f"{tmp_path}/bad.yaml:7: state./plants[3].name: 3 is not of type 'string'",
        f"{tmp_path}/bad.yaml:8: state./trees: '/trees' is not a collection of the spec (collections: /plants)",
    ]


def test_state_shape_errors_come_from_the_scenario_schema(tmp_path):
    write(tmp_path, "shape.yaml", "state:\n  /plants: {id: 1}\n")
    write(tmp_path, "list.yaml", "state: [1]\n")
    _, errors = load_scenarios(tmp_path, FULL)
    assert [str(e) for e in errors] == [
        f"{tmp_path}/list.yaml:1: state: a list is not of type 'object'",
        f"{tmp_path}/shape.yaml:2: state./plants: a mapping is not of type 'array'",
    ]


def test_state_of_a_server_assigned_key_needs_the_key_but_not_in_the_body_schema(tmp_path):
    library = load_spec(str(SPECS / "library.yaml"))
    write(tmp_path, "books.yaml", "state:\n  /books:\n    - {bookId: b1, title: Dune, author: Herbert}\n"
                                  "    - {bookId: 2, title: Emma, author: Austen}\n")
    _, errors = load_scenarios(tmp_path, library)
    assert [str(e) for e in errors] == [f"{tmp_path}/books.yaml:4: state./books[1].bookId: 2 is not a key (string)"]


@pytest.fixture
async def client(aiohttp_client, tmp_path):
    write(tmp_path, "seeded.yaml", SEEDED)
    return await aiohttp_client(create_app(spec="plant-store-full", scenarios=str(tmp_path), stateful=True))


async def state(client):
    response = await client.get("/__plantstub/state")
    assert response.status == 200
    return await response.json()


async def test_state_activating_a_scenario_seeds_and_reset_restores(client):
    assert await state(client) == {"/plants": []}
    assert (await client.put("/__plantstub/scenario", json={"name": "seeded"})).status == 200
    seeded = {"/plants": [{"id": 1, "name": "Fern", "tag": "fern"}, {"id": 2, "name": "Ivy"}]}
    assert await state(client) == seeded
    assert await (await client.get("/plants", headers=AUTH)).json() == [{"name": "Fern", "tag": "fern"}, {"name": "Ivy"}]
    await client.delete("/plants/1", headers=AUTH)
    created = await client.post("/plants", json={"id": 3, "name": "Aloe"}, headers=AUTH)
    assert created.status == 200
    assert [p["id"] for p in (await state(client))["/plants"]] == [2, 3]
    assert (await client.post("/__plantstub/reset")).status == 200
    assert await state(client) == seeded
    await client.put("/__plantstub/scenario", json={"name": None})
    assert await state(client) == {"/plants": []}


async def test_state_put_replaces_and_is_checked(client):
    put = await client.put("/__plantstub/state", json={"/plants": [{"id": 7, "name": "Moss"}]})
    assert (put.status, await put.json()) == (200, {"/plants": [{"id": 7, "name": "Moss"}]})
    assert await (await client.get("/plants", headers=AUTH)).json() == [{"name": "Moss"}]
    bad = await client.put("/__plantstub/state", json={"/plants": [{"id": 8}], "/pots": []})
    assert (bad.status, await bad.json()) == (400, {"error": 400, "message": (
        "state./plants[0]: 'name' is a required property; "
        "state./pots: '/pots' is not a collection of the spec (collections: /plants)"), "problems": [
        {"at": "state./plants[0]", "message": "'name' is a required property"},
        {"at": "state./pots", "message": "'/pots' is not a collection of the spec (collections: /plants)"}]})
    assert await state(client) == {"/plants": [{"id": 7, "name": "Moss"}]}  # unchanged
    twice = await client.put("/__plantstub/state", json={"/plants": [{"id": 1, "name": "A"}],
                                                          "/plants/": [{"id": 1, "name": "B"}]})
    assert (twice.status, (await twice.json())["message"]) == (
        400, "state./plants/: '/plants/' is the collection '/plants' again; list its records once")
    for body, message in ((b"[1", re.compile(r'body: not valid JSON: .* at line 1 column 3; send '
                                             r'\{"/plants": \[\{"id": 1, "name": "Fern"\}\]\}')),
                          (b"[]", 'state: expected a mapping of collection paths to lists of records, '
                                  'e.g. {"/plants": []}')):
        refused = await client.put("/__plantstub/state", data=body, headers={"Content-Type": "application/json"})
        assert refused.status == 400 and same([(await refused.json())["message"]], [message])
    # the seed is not what PUT set: reset empties the store again (no scenario is active)
    await client.post("/__plantstub/reset")
    assert await state(client) == {"/plants": []}


async def test_state_put_is_an_admin_change_refused_cross_site(client):
    refused = await client.put("/__plantstub/state", json={"/plants": []}, headers={"Origin": "http://evil.example"})
    assert refused.status == 403


def test_state_stub_state_and_set_state(tmp_path):
    write(tmp_path, "seeded.yaml", SEEDED)
    with Stub(spec="plant-store-full", scenarios=tmp_path, scenario="seeded", stateful=True) as stub:
        assert stub.state == {"/plants": [{"id": 1, "name": "Fern", "tag": "fern"}, {"id": 2, "name": "Ivy"}]}
        stub.set_state({"/plants": [{"id": 5, "name": "Palm"}]})
        request = urllib.request.Request(stub.url + "/plants", headers=AUTH)
        with urllib.request.urlopen(request, timeout=5) as response:
            assert json.load(response) == [{"name": "Palm"}]
        with pytest.raises(ScenarioError) as caught:
            stub.set_state({"/plants": [{"id": "x", "name": "Bad"}]})
        assert str(caught.value) == "stub.set_state(): state./plants[0].id: 'x' is not of type 'integer'"
        stub.reset()
        assert [p["id"] for p in stub.state["/plants"]] == [1, 2]
    with Stub() as plain, pytest.raises(PlantstubError, match="start it with --stateful"):
        _ = plain.state


def test_state_reset_restores_the_seed_as_reloaded(tmp_path):
    """--watch reloads a changed `state:`; the next reset seeds what the file says now."""
    from plantstub.config import build_settings
    from plantstub.server.runtime import load
    from plantstub.server.table import Sessions

    write(tmp_path, "seeded.yaml", SEEDED)
    sessions = Sessions(load(build_settings({"spec": "plant-store-full", "scenarios": tmp_path, "scenario": "seeded",
                                             "stateful": True})))
    write(tmp_path, "seeded.yaml", "state:\n  /plants:\n    - {id: 5, name: Palm}\n")
    assert reload(sessions)[-1] == f"reloaded 1 scenario(s) from {tmp_path}"
    session = sessions.default
    assert [p["name"] for p in session.state["/plants"]] == ["Fern", "Ivy"]  # a reload alone changes nothing
    session.reset()
    assert session.state == {"/plants": [{"id": 5, "name": "Palm"}]}
