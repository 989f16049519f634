"""Sessions routable by their id alone (issue 29): a client-chosen id opens the session on first use, opening and
ending carry the id in the header (a load balancer hashes on it), and each opening of an id has its own instance."""

from __future__ import annotations

import pytest

from plantstub import create_app
from tests.helpers import JSON_AUTH

FERN = b'{"id": 1, "name": "Fern"}'
HEADER = "X-Plantstub-Session"


@pytest.fixture
async def client(aiohttp_client):
    return await aiohttp_client(create_app())


async def listing(client) -> dict[str, dict]:
    answer = await (await client.get("/__plantstub/sessions")).json()
    return {s["id"]: s for s in answer["sessions"]}


async def test_a_chosen_id_opens_its_session_on_first_use_by_prefix_or_header(client):
    response = await client.post("/__session/Ab_9-x/plants", data=FERN, headers=JSON_AUTH)
    assert response.status == 200
    response = await client.post("/plants", data=FERN, headers={**JSON_AUTH, HEADER: "by-header"})
    assert response.status == 200
    live = await listing(client)
    assert {sid: s["opened"] for sid, s in live.items()} == {"Ab_9-x": "implicit", "by-header": "implicit"}
    assert (await (await client.get("/__session/by-header/__plantstub/calls")).json())[0]["path"] == "/plants"
    assert await (await client.get("/__plantstub/calls")).json() == []  # the default session saw neither


async def test_opening_by_header_alone_opens_the_named_session(client):
    response = await client.post("/__plantstub/sessions", headers={HEADER: "ci-7"})
    opened = await response.json()
    assert response.status == 201 and opened["id"] == "ci-7" and opened["url"].endswith("/__session/ci-7/")
    assert (await listing(client))["ci-7"]["instance"] == opened["instance"]
    assert (await listing(client))["ci-7"]["opened"] == "admin"


async def test_opening_with_header_and_body_naming_the_same_id(client):
    response = await client.post("/__plantstub/sessions", json={"id": "ci-8"}, headers={HEADER: "ci-8"})
    assert response.status == 201 and (await response.json())["id"] == "ci-8"
    # the listing and the ending by header are the default session's routes too, not session ci-8's
    live = await (await client.get("/__plantstub/sessions", headers={HEADER: "ci-8"})).json()
    assert [s["id"] for s in live["sessions"]] == ["ci-8"]


@pytest.mark.parametrize(("method", "path", "body", "header", "message"), [
    ("POST", "/__plantstub/sessions", {"id": "a"}, "b",
     f"headers.{HEADER}: 'b' names another session than the body.id ('a'); send one of them"),
    ("POST", "/__plantstub/sessions", None, "a.b",
     f"headers.{HEADER}: 'a.b' is not a session id (expected 1 to 64 letters, digits, '_' or '-')"),
    ("DELETE", "/__plantstub/sessions/a", None, "b",
     f"headers.{HEADER}: 'b' names another session than the path ('a'); send one of them"),
], ids=["open-other-id", "open-bad-id", "end-other-id"])
async def test_a_header_that_disagrees_is_refused_and_opens_nothing(client, method, path, body, header, message):
    await client.post("/__plantstub/sessions", json={"id": "a"})
    response = await client.request(method, path, json=body, headers={HEADER: header})
    assert (response.status, (await response.json())["message"]) == (400, message)
    assert list(await listing(client)) == ["a"]


async def test_ending_by_header_names_the_instance_ended(client):
    opened = await (await client.post("/__plantstub/sessions", json={"id": "t1"}, headers={HEADER: "t1"})).json()
    response = await client.delete("/__plantstub/sessions/t1", headers={HEADER: "t1"})
    assert (response.status, await response.json()) == (200, {"ended": "t1", "instance": opened["instance"],
                                                                      "dynamic_answers": 0})
    response = await client.delete("/__plantstub/sessions/t1", headers={HEADER: "t1"})
    assert response.status == 404


async def test_an_id_opened_again_is_another_instance(client):
    first = await (await client.post("/__plantstub/sessions", json={"id": "t2"})).json()
    await client.delete("/__plantstub/sessions/t2")
    await client.get("/__session/t2/__plantstub/calls")  # used again: opened anew, implicitly
    again = (await listing(client))["t2"]
    assert again["opened"] == "implicit" and again["instance"] != first["instance"]
    # opening it by the admin API keeps the instance that is live (it is promoted, not replaced)
    promoted = await (await client.post("/__plantstub/sessions", json={"id": "t2"})).json()
    assert promoted["instance"] == again["instance"]


@pytest.mark.parametrize(("header", "values"), [
    (HEADER, ("a", "b")),
    ("X-Plantstub-Scenario", ("store-closed", "flaky")),
], ids=["session", "scenario"])
def test_a_control_header_sent_twice_naming_different_things_is_refused(header, values):
    """Sent twice (a proxy adding its own, say), the first value was followed silently: the calls went to a session,
    or were answered by a scenario, the client may not have meant."""
    import http.client
    import json

    from plantstub import Stub
    from tests.helpers import address

    with Stub() as stub:
        host, port = address(stub.url)
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        connection.putrequest("POST", "/plants")
        for name, value in [*JSON_AUTH.items(), ("Content-Length", str(len(FERN))), (header, values[0]),
                            (header, values[1])]:
            connection.putheader(name, value)
        connection.endheaders(FERN)
        response = connection.getresponse()
        answer = json.loads(response.read())
        connection.close()
        assert (response.status, answer["message"]) == (
            400, f"headers.{header}: sent more than once, naming {values[0]!r}, {values[1]!r}; send it once")
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        connection.request("GET", "/__plantstub/sessions")
        assert json.loads(connection.getresponse().read())["sessions"] == []  # none opened by it
        connection.close()
