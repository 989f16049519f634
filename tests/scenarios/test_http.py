"""Scenarios over HTTP: every example of PRODUCT.md's scenario section, selection, Prefer, faults."""

from __future__ import annotations

import time

import aiohttp
import pytest

from plantstub import create_app
from tests.helpers import JSON_AUTH, REPO

CACTUS = {**JSON_AUTH, "X-Tenant": "acme"}


@pytest.fixture
async def client(aiohttp_client):
    return await aiohttp_client(create_app(scenarios=str(REPO / "scenarios"), scenario="product-example"))


async def send(client, body, headers=JSON_AUTH, path="/plants"):
    response = await client.post(path, json=body, headers=headers)
    text = await response.text()
    return response.status, response.headers, text


async def last_call(client):
    return (await (await client.get("/__plantstub/calls?limit=1")).json())[0]


async def test_rule_replies_in_sequence_and_the_last_repeats(client):
    answers = [await send(client, {"id": 1, "name": "Cactus"}, CACTUS, "/plants?dry_run=1") for _ in range(3)]
    assert [(s, t) for s, _, t in answers] == [
        (400, '{"error":503,"message":"Store is closed"}'),
        (200, '{"name":"Cactus","tag":"succulent"}'),
        (200, '{"name":"Cactus","tag":"succulent"}'),
    ]
    call = await last_call(client)
    assert (call["scenario"], call["rule"]) == ("product-example", "rules[0].replies[1]")


@pytest.mark.parametrize(
    ("headers", "path", "body"),
    [
        ({**JSON_AUTH, "X-Tenant": "other"}, "/plants?dry_run=1", {"id": 1, "name": "Cactus"}),
        (JSON_AUTH, "/plants?dry_run=1", {"id": 1, "name": "Cactus"}),
        (CACTUS, "/plants", {"id": 1, "name": "Cactus"}),
        (CACTUS, "/plants?dry_run=0", {"id": 1, "name": "Cactus"}),
        (CACTUS, "/plants?dry_run=1", {"id": 1, "name": "Cactos"}),
    ],
    ids=["wrong-header", "no-header", "no-query", "wrong-query", "wrong-body"],
)
async def test_every_criterion_must_hold(client, headers, path, body):
    status, _, text = await send(client, body, headers, path)
    assert (status, text) == (200, f'{{"name":"{body["name"]}"}}')  # the default echo
    assert (await last_call(client))["rule"] is None


async def test_header_names_are_case_insensitive(client):
    headers = {**JSON_AUTH, "x-tenant": "acme"}
    status, _, _ = await send(client, {"id": 1, "name": "Cactus"}, headers, "/plants?dry_run=1")
    assert status == 400


async def test_times_rule_answers_once_then_falls_through(client):
    started = time.monotonic()
    status, headers, text = await send(client, {"id": 2, "name": "Nightshade", "tag": "poison"})
    assert time.monotonic() - started >= 0.25  # delay_ms: 250
    assert (status, headers["X-Trace"], text) == (200, "abc", '{"name":"Nightshade"}')
    status, headers, text = await send(client, {"id": 3, "name": "Hemlock", "tag": "poison"})
    assert (status, "X-Trace" in headers, text) == (200, False, '{"name":"Hemlock","tag":"poison"}')


async def test_off_contract_reply_is_served_as_written(client):
    status, headers, text = await send(client, {"id": 4, "name": "Gremlin"})
    assert (status, headers["Content-Type"].split(";")[0], text) == (500, "text/plain", "not json at all")


async def test_fault_connection_reset_is_recorded(client):
    with pytest.raises(aiohttp.ClientError):
        await send(client, {"id": 5, "name": "Unplugged"})
    call = await last_call(client)
    assert (call["rule"], call["response"]) == (
        "rules[3]", {"status": None, "headers": {}, "body": None, "fault": "connection_reset"})


async def test_template_keeps_json_type_of_a_lone_placeholder(aiohttp_client, tmp_path):
    (tmp_path / "echo.yaml").write_text(
        "rules:\n"
        "  - match: {path: /plants}\n"
        "    off_contract: true\n"
        "    reply:\n"
        "      status: 200\n"
        "      body: {id: '{{ request.body.id }}', said: 'id {{ request.body.id }} from {{ request.headers.x-tenant }}',\n"
        "             path: '{{ request.path }}', q: '{{ request.query.q }}'}\n")
    client = await aiohttp_client(create_app(scenarios=str(tmp_path), scenario="echo"))
    response = await client.post("/plants?q=1", json={"id": 42, "name": "A"}, headers={**JSON_AUTH, "X-Tenant": "acme"})
    assert await response.json() == {"id": 42, "said": "id 42 from acme", "path": "/plants", "q": "1"}


@pytest.mark.parametrize(
    ("fault", "error"),
    [("empty_reply", aiohttp.ServerDisconnectedError), ("malformed_body", aiohttp.ContentTypeError)],
    ids=["empty_reply", "malformed_body"],
)
async def test_faults(aiohttp_client, tmp_path, fault, error):
    (tmp_path / "f.yaml").write_text(f"rules:\n  - match: {{path: /plants}}\n    reply: {{fault: {fault}}}\n")
    client = await aiohttp_client(create_app(scenarios=str(tmp_path), scenario="f"))
    response = None
    try:
        response = await client.post("/plants", json={"id": 1, "name": "A"}, headers=JSON_AUTH)
        await response.json()
    except Exception as exc:  # the client must meet the fault
        assert isinstance(exc, (error, aiohttp.ClientPayloadError, ValueError)), exc
    else:
        raise AssertionError(f"no fault: {response.status}")
    call = (await (await client.get("/__plantstub/calls")).json())[0]
    assert call["rule"] == "rules[0]"


async def test_invalid_request_is_caught_before_the_rules(client):
    status, _, text = await send(client, {"id": "x", "name": "Cactus"}, CACTUS, "/plants?dry_run=1")
    assert (status, text) == (400, '{"error":400,"message":"body.id: \'x\' is not of type \'integer\'"}')


async def test_validate_requests_false_lets_rules_see_broken_requests(aiohttp_client, tmp_path):
    (tmp_path / "lax.yaml").write_text(
        "validate_requests: false\nrules:\n  - match: {body: {name: Cactus}}\n"
        "    reply: {status: 200, body: {name: took it}}\n")
    client = await aiohttp_client(create_app(scenarios=str(tmp_path), scenario="lax"))
    response = await client.post("/plants", json={"id": "x", "name": "Cactus"}, headers=JSON_AUTH)
    assert (response.status, await response.json()) == (200, {"name": "took it"})
    call = (await (await client.get("/__plantstub/calls")).json())[0]
    assert (call["valid"], call["errors"], call["rule"]) == (False, ["body.id: 'x' is not of type 'integer'"], "rules[0]")


async def test_scenario_header_selects_for_one_request(aiohttp_client):
    client = await aiohttp_client(create_app(scenarios=str(REPO / "scenarios")))
    headers = {**JSON_AUTH, "X-Plantstub-Scenario": "store-closed"}
    assert (await send(client, {"id": 1, "name": "A"}, headers))[0] == 400
    assert (await send(client, {"id": 1, "name": "A"}))[0] == 200
    status, _, text = await send(client, {"id": 1, "name": "A"}, {**JSON_AUTH, "X-Plantstub-Scenario": "nope"})
    assert status == 400
    assert text.startswith('{"error":400,"message":"headers.X-Plantstub-Scenario: unknown scenario \'nope\' (known: ')


async def test_put_scenario_switches_and_resets_counters(aiohttp_client):
    client = await aiohttp_client(create_app(scenarios=str(REPO / "scenarios")))
    response = await client.put("/__plantstub/scenario", json={"name": "flaky"})
    assert (response.status, await response.json()) == (200, {"active": "flaky"})
    assert [(await send(client, {"id": 1, "name": "A"}))[0] for _ in range(2)] == [400, 200]
    await client.put("/__plantstub/scenario", json={"name": "flaky"})
    assert (await send(client, {"id": 1, "name": "A"}))[0] == 400  # the sequence starts again
    await client.post("/__plantstub/reset")
    assert (await send(client, {"id": 1, "name": "A"}))[0] == 400
    response = await client.put("/__plantstub/scenario", json={"name": "nope"})
    assert response.status == 404
    assert (await response.json())["message"].startswith("body.name: unknown scenario 'nope' (known: dropped-connection, flaky")
    response = await client.put("/__plantstub/scenario", json={"name": None})
    assert (await response.json()) == {"active": None}
    assert (await send(client, {"id": 1, "name": "A"}))[0] == 200


async def test_get_scenarios_lists_names_descriptions_active(client):
    body = await (await client.get("/__plantstub/scenarios")).json()
    assert body["active"] == "product-example"
    assert {s["name"] for s in body["scenarios"]} == {
        "dropped-connection", "flaky", "product-example", "slow", "store-closed"}
    assert body["errors"] == []


@pytest.mark.parametrize(
    ("prefer", "status", "body"),
    [
        ("code=400", 400, {"error": 400, "message": "string"}),
        ("code=200", 200, {"name": "A"}),
        ("code=418", 400, {"error": 400, "message": "headers.Prefer: code=418 is not declared for POST /plants (declared: 200, 400)"}),
    ],
    ids=["400", "200", "undeclared"],
)
async def test_prefer_code_forces_a_declared_response(client, prefer, status, body):
    response = await client.post("/plants", json={"id": 1, "name": "A"}, headers={**JSON_AUTH, "Prefer": prefer})
    assert (response.status, await response.json()) == (status, body)


async def test_unknown_scenario_at_start_is_refused():
    with pytest.raises(Exception, match=r"^scenario='nope': unknown scenario 'nope' \(known: "):
        create_app(scenarios=str(REPO / "scenarios"), scenario="nope")


async def test_builtin_scenarios_need_no_folder(aiohttp_client, tmp_path, monkeypatch):
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "trap.yaml").write_text("rules: [{reply: {status: 418}}]\n")  # must never be read
    monkeypatch.chdir(tmp_path)
    client = await aiohttp_client(create_app(scenario="store-closed"))
    status, _, text = await send(client, {"id": 1, "name": "A"})
    assert (status, text) == (400, '{"error":400,"message":"The store is closed"}')
    listed = (await (await client.get("/__plantstub/scenarios")).json())
    assert listed["folder"] is None
    assert {(s["name"], s["builtin"]) for s in listed["scenarios"]} == {
        ("dropped-connection", True), ("flaky", True), ("slow", True), ("store-closed", True)}


async def test_a_folder_scenario_overrides_the_builtin_of_that_name(aiohttp_client, tmp_path):
    (tmp_path / "store-closed.yaml").write_text(
        "rules:\n  - match: {path: /plants}\n    reply: {status: 400, body: {error: 1, message: mine}}\n")
    client = await aiohttp_client(create_app(scenarios=str(tmp_path), scenario="store-closed"))
    assert (await send(client, {"id": 1, "name": "A"}))[2] == '{"error":1,"message":"mine"}'
    listed = {s["name"]: s for s in (await (await client.get("/__plantstub/scenarios")).json())["scenarios"]}
    assert (listed["store-closed"]["builtin"], listed["store-closed"]["file"]) == (False, str(tmp_path / "store-closed.yaml"))
    assert listed["flaky"]["builtin"] is True


async def test_builtin_that_does_not_fit_another_spec_says_why(aiohttp_client, tmp_path):
    spec = tmp_path / "trees.yaml"
    spec.write_text(
        "openapi: 3.0.3\ninfo: {title: Trees, version: '1'}\npaths:\n  /trees:\n    get:\n"
        "      responses: {'200': {description: ok}}\n")
    with pytest.raises(Exception, match=r"^scenario='flaky': the built-in scenario 'flaky' does not fit this spec "
                                        r"\(rules\[0\]\.match\.path: /plants matches no path in the spec"):
        create_app(spec=str(spec), scenario="flaky")
    client = await aiohttp_client(create_app(spec=str(spec)))
    listed = await (await client.get("/__plantstub/scenarios")).json()
    assert (listed["scenarios"], sorted(listed["builtins_left_out"])) == (
        [], ["dropped-connection", "flaky", "slow", "store-closed"])
    assert listed["builtins_left_out"]["slow"].startswith("rules[0].match.path: /plants matches no path in the spec")


async def test_a_rendered_reply_that_breaks_the_contract_is_the_scenarios_fault(aiohttp_client, tmp_path):
    (tmp_path / "echo-tag.yaml").write_text(
        "rules:\n  - match: {path: /plants}\n    reply:\n      status: 200\n"
        "      body: {name: \"{{ request.body.tag }}\", tag: \"{{ request.body.tag }}\"}\n")
    client = await aiohttp_client(create_app(scenarios=str(tmp_path), scenario="echo-tag"))
    assert (await send(client, {"id": 1, "name": "A", "tag": "green"}))[::2] == (200, '{"name":"green","tag":"green"}')
    assert (await send(client, {"id": 2, "name": "B"}))[::2] == (200, "{}")  # no tag sent: both keys left out
    good, bad = await (await client.get("/__plantstub/calls")).json()
    assert (good["valid"], good["stub_errors"]) == (True, [])
    assert (bad["valid"], bad["errors"]) == (True, [])  # the consumer did nothing wrong
    assert bad["stub_errors"] == [
        f"scenario 'echo-tag' rules[0] ({tmp_path / 'echo-tag.yaml'}:3) sent a reply that breaks the contract: "
        "body: 'name' is a required property (POST /plants response 200)"]
