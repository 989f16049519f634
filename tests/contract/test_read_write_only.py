"""readOnly and writeOnly properties (OpenAPI 3.0's meaning, kept for 3.1): each required one way only, over HTTP."""

from __future__ import annotations

import pytest

from plantstub import create_app
from tests.helpers import write

SPEC = """\
openapi: {version}
info: {{title: Accounts, version: "1"}}
paths:
  /users:
    post:
      requestBody: {{required: true, content: {{application/json: {{schema: {{$ref: '#/components/schemas/User'}}}}}}}}
      responses:
        "201": {{description: made, content: {{application/json: {{schema: {{$ref: '#/components/schemas/User'}}}}}}}}
    get:
      responses:
        "200": {{description: one, content: {{application/json: {{schema: {{$ref: '#/components/schemas/User'}}}}}}}}
  /teams:
    post:
      requestBody: {{required: true, content: {{application/json: {{schema: {{$ref: '#/components/schemas/Team'}}}}}}}}
      responses:
        "201": {{description: made, content: {{application/json: {{schema: {{$ref: '#/components/schemas/Team'}}}}}}}}
components:
  schemas:
    Id: {{type: integer, minimum: 1, readOnly: true}}
    User:
      type: object
      required: [id, name, password]
      properties:
        id: {{$ref: '#/components/schemas/Id'}}
        name: {{type: string}}
        password: {{type: string, minLength: 8, writeOnly: true}}
        pin: {{type: string, writeOnly: true}}
    Team:
      type: object
      required: [lead]
      properties:
        lead: {{$ref: '#/components/schemas/User'}}
        members: {{type: array, items: {{$ref: '#/components/schemas/User'}}}}
"""


@pytest.fixture(params=["3.0.3", "3.1.0"])
async def client(request, aiohttp_client, tmp_path):
    spec = write(tmp_path, "api.yaml", SPEC.format(version=request.param))
    return await aiohttp_client(create_app(spec=str(spec)))


async def answer(client, path, body):
    response = await client.post(path, json=body)
    return response.status, await response.json()


async def test_required_read_only_property_may_be_left_out_of_a_request(client):
    assert await answer(client, "/users", {"name": "Ann", "password": "12345678"}) == (201, {"id": 1, "name": "Ann"})
    assert await answer(client, "/users", {"id": 5, "name": "Ann", "password": "12345678"}) == (
        201, {"id": 5, "name": "Ann"})
    assert await answer(client, "/users", {"name": "Ann"}) == (
        400, {"error": 400, "message": "body: 'password' is a required property"})


async def test_nested_read_only_property_may_be_left_out_and_write_only_members_are_not_echoed(client):
    body = {"lead": {"id": 3, "name": "Ann", "password": "12345678", "pin": "1"},
            "members": [{"id": 4, "name": "Bo", "password": "abcdefgh"}]}
    assert await answer(client, "/teams", body) == (
        201, {"lead": {"id": 3, "name": "Ann"}, "members": [{"id": 4, "name": "Bo"}]})
    assert await answer(client, "/teams", {"lead": {"name": "Ann"}}) == (
        400, {"error": 400, "message": "body.lead: 'password' is a required property"})


async def test_generated_answer_leaves_write_only_properties_out(client):
    response = await client.get("/users")
    assert (response.status, await response.json()) == (200, {"id": 1, "name": "string"})
