"""The default answer's echo goes unchecked only where the schemas show it cannot break the answer (issue 26)."""

from __future__ import annotations

import json

import pytest

from plantstub import create_app
from plantstub.contract.schema import SchemaCheck

AUTH = {"Authorization": "Bearer t"}


def _spec(request: dict, response: dict) -> dict:
    return {
        "openapi": "3.1.0", "info": {"title": "Shelf", "version": "1"},
        "components": {"schemas": {"In": request, "Out": response}},
        "paths": {"/books": {"post": {
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "$ref": "#/components/schemas/In"}}}},
            "responses": {"201": {"description": "made", "content": {"application/json": {"schema": {
                "$ref": "#/components/schemas/Out"}}}}}}}},
    }


@pytest.fixture
def counted(monkeypatch):
    """How many times a compiled schema answered is_valid()."""
    seen = []
    real = SchemaCheck.is_valid

    def is_valid(self, instance):
        seen.append(instance)
        return real(self, instance)

    monkeypatch.setattr(SchemaCheck, "is_valid", is_valid)
    return seen


async def test_plant_store_echo_is_not_checked_again(aiohttp_client, tmp_path, counted):
    client = await aiohttp_client(create_app(scenarios=str(tmp_path)))
    response = await client.post("/plants", json={"id": 3, "name": "Fern", "tag": "indoor"}, headers=AUTH)
    assert (response.status, await response.json()) == (200, {"name": "Fern", "tag": "indoor"})
    assert {"name": "Fern", "tag": "indoor"} not in counted


async def test_invalid_request_let_through_still_has_its_echo_checked(aiohttp_client, tmp_path, counted):
    (tmp_path / "loose.yaml").write_text("validate_requests: false\nrules: []\n")
    client = await aiohttp_client(create_app(scenarios=str(tmp_path)))
    response = await client.post("/plants", json={"id": 3, "name": 5, "tag": "indoor"},
                                 headers={**AUTH, "X-Plantstub-Scenario": "loose"})
    body = await response.json()
    assert response.status == 200
    assert isinstance(body["name"], str)
    assert body["tag"] == "indoor"


WIDE = {"type": "object", "properties": {"tag": {"type": "string"}, "n": {"type": "integer"}}}
CASES = {
    "narrower property": (WIDE, {"type": "object", "required": ["tag"], "properties": {
        "tag": {"enum": ["a"]}, "n": {"type": "integer"}}}, {"tag": "b", "n": 2}, {"tag": "a", "n": 2}),
    "maxProperties": (WIDE, {"type": "object", "maxProperties": 1, "properties": {
        "tag": {"type": "string"}, "n": {"type": "integer"}}}, {"tag": "b", "n": 2}, {"tag": "b"}),
    "allOf closed": (WIDE, {"allOf": [{"type": "object", "properties": {"tag": {"type": "string"}},
                                       "additionalProperties": False},
                                      {"type": "object", "properties": {"n": {"type": "integer"}}}]},
                     {"tag": "b", "n": 2}, {"tag": "b"}),
    "request without the property": ({"type": "object"}, {"type": "object", "properties": {
        "n": {"type": "integer"}}}, {"n": "x"}, {}),
}


@pytest.mark.parametrize("name", list(CASES))
async def test_echo_that_could_break_the_answer_is_still_checked(aiohttp_client, tmp_path, name):
    request, response, sent, expected = CASES[name]
    spec = tmp_path / "shelf.json"
    spec.write_text(json.dumps(_spec(request, response)))
    client = await aiohttp_client(create_app(spec=str(spec), scenarios=str(tmp_path)))
    answer = await client.post("/books", json=sent)
    assert answer.status == 201
    body = await answer.json()
    assert {k: body[k] for k in expected} == expected
    assert set(body) - set(expected) <= set(response.get("required", ())) - set(expected)


async def test_same_property_schemas_echo_everything(aiohttp_client, tmp_path, counted):
    spec = tmp_path / "shelf.json"
    spec.write_text(json.dumps(_spec(WIDE, {**WIDE, "required": ["tag"], "additionalProperties": False})))
    client = await aiohttp_client(create_app(spec=str(spec), scenarios=str(tmp_path)))
    answer = await client.post("/books", json={"tag": "b", "n": 2, "other": 1})
    assert (answer.status, await answer.json()) == (201, {"tag": "b", "n": 2})
    assert {"tag": "b", "n": 2} not in counted
