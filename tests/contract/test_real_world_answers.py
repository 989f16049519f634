"""Shapes from public OpenAPI documents (issue 14), served over HTTP as they mean: tests/data/specs/real-world.yaml.

Operations with no 2xx and no default, generated answers that must keep their own schema (oneOf, a closed allOf,
a required self-reference), allOf loops in requests and answers, and `\\p{L}`-style patterns.
"""

from __future__ import annotations

import logging

import jsonschema
import pytest

from plantstub import create_app
from plantstub.contract.load import load_spec
from tests.helpers import SPECS, write

SPEC = SPECS / "real-world.yaml"
CHAINS = ("plantstub cannot answer GET /chains/{id}: no value satisfies the schema of its response 200"
          " (application/json): a required property holds its own schema again (Link.next -> Link);"
          " a scenario rule with `off_contract: true` can answer it")
STREAM = ("plantstub cannot answer GET /stream: its response 101 is informational (1xx), which cannot end an"
          " exchange; a scenario rule with `off_contract: true` can answer it")


@pytest.fixture
async def client(aiohttp_client, tmp_path):
    return await aiohttp_client(create_app(spec=str(SPEC), scenarios=str(tmp_path)))


def response_schema(path: str, status: str = "200") -> dict:
    op = next(op for op in load_spec(SPEC).operations if op.path == path)
    return op.responses[status].content["application/json"].schema


def reference_valid(body: object, schema: dict) -> bool:
    """jsonschema, the reference, on a schema without loops: `oneOf` must match exactly one branch."""
    return jsonschema.Draft202012Validator(schema).is_valid(body)


# -- 5. no 2xx and no default: the lowest 3xx, then 4xx, then 5xx -----------------------------------
@pytest.mark.parametrize(("path", "status", "body"), [
    ("/login/redirect", 302, b""),
    ("/legacy", 400, b'{"error":400,"message":"string"}'),  # 400 before 404; the Error record says its status
    ("/ranges", 300, b""),  # 3XX before 1XX, which is never an answer
    ("/cached", 304, b""),
], ids=["only-302", "only-4xx", "ranges", "only-304"])
async def test_no_2xx_answers_the_lowest_declared_status(client, path, status, body):
    response = await client.get(path, allow_redirects=False)
    assert (response.status, await response.read()) == (status, body)
    assert "Location" not in response.headers  # a declared header is not made up: no client is sent elsewhere


async def test_only_1xx_declared_answers_501_saying_why(client):
    response = await client.get("/stream")
    assert (response.status, await response.json()) == (501, {"error": 501, "message": STREAM})


async def test_prefer_code_still_picks_any_declared_response(client):
    response = await client.get("/legacy", headers={"Prefer": "code=404"})
    assert (response.status, await response.json()) == (404, {"error": 404, "message": "string"})
    response = await client.get("/legacy", headers={"Prefer": "code=200"})
    assert response.status == 400
    assert (await response.json())["message"] == (
        "headers.Prefer: code=200 is not declared for GET /legacy (declared: 404, 400)")
    response = await client.get("/chains/1", headers={"Prefer": "code=404"})
    assert (response.status, await response.json()) == (404, {"error": 404, "message": "string"})
    response = await client.get("/chains/1", headers={"Prefer": "code=200"})
    assert (response.status, (await response.json())["message"]) == (501, CHAINS)


# -- 6. generated and echoed answers keep their schema ---------------------------------------------
async def test_one_of_answer_matches_exactly_one_branch(client):
    response = await client.get("/pets/1")
    body = await response.json()
    # {} (or any cat) is a dog too: only a property the other branch refuses tells them apart.
    assert (response.status, body) == (200, {"barks": None})
    assert reference_valid(body, response_schema("/pets/{id}"))
    assert not reference_valid({}, response_schema("/pets/{id}"))


@pytest.mark.parametrize(("path", "expected"), [
    ("/tags", {}),  # allOf [Base] + additionalProperties: false: Base's `id` is not the closed object's own
    ("/links", {"label": "x"}),  # its own `label` is echoed, `id` is not
], ids=["closed-all-of", "closed-all-of-with-own-property"])
async def test_echo_never_adds_a_property_the_answer_forbids(client, path, expected):
    response = await client.post(path, json={"id": 1, "label": "x"})
    body = await response.json()
    assert (response.status, body) == (201, expected)
    assert reference_valid(body, response_schema(path, "201"))


async def test_required_self_reference_answers_501_and_names_the_loop(client):
    response = await client.get("/chains/7")
    assert (response.status, await response.json()) == (501, {"error": 501, "message": CHAINS})


async def test_unanswerable_operations_are_logged_once_at_start(caplog, tmp_path):
    with caplog.at_level(logging.WARNING, logger="plantstub"):
        create_app(spec=str(SPEC), scenarios=str(tmp_path))
    warnings = [r.getMessage() for r in caplog.records if "no answer that keeps the contract" in r.getMessage()]
    assert warnings == [
        f"plantstub: 2 operation(s) of {SPEC} have no answer that keeps the contract; with no scenario rule they"
        " answer 501 with the reason:\n"
        "  GET /stream: its response 101 is informational (1xx), which cannot end an exchange\n"
        "  GET /chains/{id}: no value satisfies the schema of its response 200 (application/json): a required"
        " property holds its own schema again (Link.next -> Link)"
    ]


async def test_an_off_contract_rule_answers_an_unanswerable_operation(aiohttp_client, tmp_path):
    write(tmp_path, "chain.yaml", "rules:\n  - match: {path: /chains/1}\n    off_contract: true\n"
                                  "    reply: {status: 200, body: {name: one, next: null}}\n")
    client = await aiohttp_client(create_app(spec=str(SPEC), scenarios=str(tmp_path), scenario="chain"))
    response = await client.get("/chains/1")
    assert (response.status, await response.json()) == (200, {"name": "one", "next": None})


# -- 7. allOf loops: requests checked, answers made, no RecursionError -------------------------------
@pytest.mark.parametrize(("query", "body", "content_type", "status", "answer"), [
    ("?depth=3", b'{"area": 2, "crop": "kale"}', "application/json", 201, {"area": 2, "crop": "kale"}),
    ("?depth=-1", b'{"area": 0, "crop": 5}', "application/json", 400,
     "query.depth: -1 is less than the minimum of 0; body.area: 0 is less than the minimum of 1;"
     " body.crop: 5 is not of type 'string'"),
    ("", b"rows=2", "application/x-www-form-urlencoded", 201, {}),
    ("", b"rows=z", "application/x-www-form-urlencoded", 400, "body.rows: 'z' is not of type 'integer'"),
], ids=["valid-json", "invalid-json-and-parameter", "valid-form", "invalid-form"])
async def test_all_of_loops_check_requests_and_answer(client, query, body, content_type, status, answer):
    response = await client.post(f"/plots{query}", data=body, headers={"Content-Type": content_type})
    got = await response.json()
    assert (response.status, got if status < 400 else got["message"]) == (status, answer)


async def test_self_all_of_answers(client):
    response = await client.get("/beds")
    assert (response.status, await response.json()) == (200, {})


# -- 8. `\p{L}`-style patterns: served, checked and generated ---------------------------------------
async def test_unicode_property_patterns_are_checked_and_generated(client):
    response = await client.post("/gardeners?city=%C3%89vora", json={"name": "Émile"})
    assert (response.status, await response.json()) == (
        201, {"name": "Émile", "city": "a", "badge": "000", "initials": "AA"})
    response = await client.post("/gardeners?city=ab1", json={"name": "émile"})
    assert response.status == 400
    assert (await response.json())["message"] == (
        "query.city: 'ab1' does not match '^\\\\p{L}+$'; body.name: 'émile' does not match '^\\\\p{Lu}\\\\p{Ll}*$'")


RANGES = """\
openapi: 3.0.3
info: {title: Ranges, version: "1"}
paths:
  /any:
    get:
      responses:
        "200":
          description: a body declared as any media type
          content:
            "*/*":
              schema: {type: object, required: [id], properties: {id: {type: integer}}}
  /text:
    get:
      responses:
        "200":
          description: text of some kind
          content:
            "text/*":
              schema: {type: string}
"""


@pytest.mark.parametrize(("path", "content_type"), [("/any", "application/json"), ("/text", "text/plain")])
async def test_a_declared_media_range_is_answered_in_a_concrete_type(aiohttp_client, tmp_path, path, content_type):
    spec = write(tmp_path, "ranges.yaml", RANGES)
    (tmp_path / "scenarios").mkdir()
    client = await aiohttp_client(create_app(spec=str(spec), scenarios=str(tmp_path / "scenarios")))
    response = await client.get(path)
    assert response.status == 200
    assert response.headers["Content-Type"].split(";")[0] == content_type
    if content_type == "application/json":
        assert isinstance((await response.json())["id"], int)


async def test_a_big_spec_makes_its_answers_on_first_use(aiohttp_client, caplog, monkeypatch, tmp_path):
    # Above EAGER operations (5,000) the default answers are not made at start (a second of a 20 MB spec's);
    # lowered here so a small spec shows it: the start says so, and each answer is still right on its first call.
    monkeypatch.setattr("plantstub.contract.operations.EAGER", 1)
    with caplog.at_level(logging.WARNING, logger="plantstub"):
        client = await aiohttp_client(create_app(spec=str(SPEC), scenarios=str(tmp_path)))
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "no answer that keeps the contract" in m]
    assert [m for m in messages if "default answers are made on first use" in m] == [
        f"plantstub: {SPEC} has {len(load_spec(SPEC).operations)} operations: their default answers are made on first"
        " use, so one that cannot keep the contract is not listed here; it answers 501 with the reason"
    ]
    response = await client.get("/chains/7")
    assert (response.status, await response.json()) == (501, {"error": 501, "message": CHAINS})
    response = await client.get("/legacy")
    assert (response.status, await response.read()) == (400, b'{"error":400,"message":"string"}')
