"""Default answers for any spec, over HTTP: examples, generated bodies with echo, 204, Prefer example."""

from __future__ import annotations

import json

import pytest

from plantstub import create_app

API = {
    "openapi": "3.1.0",
    "info": {"title": "Shelf", "version": "1"},
    "components": {"schemas": {"Book": {
        "type": "object", "required": ["id", "title", "added"],
        "properties": {"id": {"type": "integer", "minimum": 1}, "title": {"type": "string", "minLength": 2},
                       "added": {"type": "string", "format": "date-time"},
                       "isbn": {"type": "string", "pattern": "^[0-9]{13}$"}}}}},
    "paths": {
        "/books": {"post": {
            "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Book"}}}},
            "responses": {"201": {"description": "made", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Book"}}}}}}},
        "/books/{id}": {
            "get": {"responses": {"200": {"description": "one", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Book"},
                "examples": {
                    "broken": {"value": {"id": 0, "title": "x"}},
                    "dune": {"value": {"id": 7, "title": "Dune", "added": "2024-05-01T10:00:00Z"}},
                }}}}}},
            "delete": {"responses": {"204": {"description": "gone"}}},
        },
        "/health": {"get": {"responses": {"2XX": {"description": "ok", "content": {
            "text/plain": {"example": "fine"}}}}}},
    },
}


@pytest.fixture
async def client(aiohttp_client, tmp_path):
    spec = tmp_path / "shelf.json"
    spec.write_text(json.dumps(API))
    return await aiohttp_client(create_app(spec=str(spec), scenarios=str(tmp_path)))


async def test_default_skips_an_example_that_breaks_its_schema(client):
    response = await client.get("/books/7")
    assert (response.status, await response.json()) == (
        200, {"id": 7, "title": "Dune", "added": "2024-05-01T10:00:00Z"})


async def test_prefer_example_serves_the_named_one_as_written(client):
    response = await client.get("/books/7", headers={"Prefer": "example=broken"})
    assert (response.status, await response.json()) == (200, {"id": 0, "title": "x"})
    response = await client.get("/books/7", headers={"Prefer": "example=nope"})
    assert response.status == 400
    assert (await response.json())["message"] == "headers.Prefer: example='nope' is not declared for GET /books/{id}"


async def test_generated_body_validates_and_echoes_request_fields(client):
    response = await client.post("/books", json={"id": 3, "title": "Emma", "added": "2020-01-01T00:00:00Z"})
    assert response.status == 201
    assert await response.json() == {"id": 3, "title": "Emma", "added": "2020-01-01T00:00:00Z"}
    response = await client.post("/books", json={"id": 4, "title": "Ulysses", "added": "2020-01-01T00:00:00Z",
                                                 "isbn": "9780141182803"})
    assert (await response.json())["isbn"] == "9780141182803"


async def test_204_has_no_body(client):
    response = await client.delete("/books/7")
    assert (response.status, await response.read()) == (204, b"")


async def test_2xx_range_and_text_example(client):
    response = await client.get("/health")
    assert (response.status, response.headers["Content-Type"].split(";")[0], await response.text()) == (
        200, "text/plain", "fine")


async def test_path_parameter_checked_against_schema_free_path(client):
    response = await client.get("/books/abc")
    assert response.status == 200  # no parameter declared: any segment routes
