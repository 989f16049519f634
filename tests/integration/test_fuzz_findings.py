"""What schemathesis (`--checks all`, tests/benchmarks/fuzz_errors.py) found on real documents (issue 25), each
as a minimal document through `plantstub serve` and raw HTTP; answers are checked against the declared schema."""

from __future__ import annotations

import json
import uuid
from typing import Any

import jsonschema
import pytest

from tests.helpers import ServeProcess, raw_call

USER = {"type": "object", "required": ["id"], "properties": {
    "id": {"type": "string"},
    "password": {"type": "string", "writeOnly": True},
    "profile": {"type": "object", "properties": {"timezone": {"type": "string", "writeOnly": True},
                                                  "title": {"type": "string"}}}}}
USER_EXAMPLE = {"id": "u1", "password": "hunter2", "profile": {"timezone": "Europe/Paris", "title": "Dr"}}
USERS = {"type": "object", "properties": {"Resources": {"type": "array", "items": {"$ref": "#/components/schemas/User"}}}}
# PagerDuty's SCIM UserListResponse: the example is the schema's own, not the media type's.
USER_LIST = {**USERS, "example": {"Resources": [USER_EXAMPLE]}}
LIMITS = {
    "X-Rate-Limit-Limit": {"required": True, "schema": {"type": "integer", "minimum": 10}},
    "X-Request-Id": {"$ref": "#/components/headers/RequestId"},
    "X-Tags": {"required": True, "schema": {"type": "array", "minItems": 2, "items": {"type": "string", "enum": ["a"]}}},
    "X-Optional": {"schema": {"type": "string"}},
}
# Okta's orderBy: `orderBy=` is both an empty array and an array of one empty string, as OpenAPI writes them.
ORDER_BY = {"type": "array", "minItems": 1, "maxItems": 1, "items": {"type": "string"}}
IDS = {"type": "array", "minItems": 1, "items": {"type": "integer"}}
# Okta OPA's TeamUserAttribute: `type: object` beside a oneOf of strings and integers.
ATTRIBUTE = {"type": "object", "required": ["attribute_value"], "properties": {"attribute_value": {
    "type": "object", "oneOf": [{"type": "string"}, {"type": "integer", "minimum": 100}]}}}
LOOSE = {"type": "object", "properties": {"name": {"type": "string"}, **ATTRIBUTE["properties"]}}
# Plaid's IncomeVerificationPrecheckEmployerAddress: nullable, and an allOf whose part is not.
ADDRESS = {"type": "object", "properties": {"address": {"type": "object", "nullable": True, "allOf": [
    {"type": "object", "properties": {"city": {"type": "string"}}}]}}}
PROBLEM = {"type": "object", "properties": {"type": {"type": "string"}, "title": {"type": "string"}}}
SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "fuzz findings", "version": "1"},
    "paths": {
        "/users": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/Users"},
            "example": {"Resources": [USER_EXAMPLE]}}}}}}},
        "/users/{id}": {"get": {
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "responses": {"200": {"description": "ok", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/User"},
                "examples": {"first": {"value": USER_EXAMPLE}}}}}}}},
        "/user-list": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/UserList"}}}}}}},
        "/ordered": {"get": {"parameters": [
            {"name": "orderBy", "in": "query", "style": "form", "explode": False, "schema": ORDER_BY},
            {"name": "ids", "in": "query", "style": "form", "explode": False, "schema": IDS}],
            "responses": {"204": {"description": "ok"}}}},
        "/attribute": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {
            "schema": ATTRIBUTE}}}}}},
        "/loose-attribute": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {
            "schema": LOOSE}}}}}},
        "/employers": {"post": {
            "requestBody": {"required": True, "content": {"application/json": {"schema": ADDRESS}}},
            "responses": {"204": {"description": "ok"}}}},
        "/tickets": {"post": {
            "requestBody": {"required": True, "content": {"application/json": {"schema": USER}}},
            "responses": {"201": {"description": "ok", "content": {"application/json": {"schema": USER}}},
                          "400": {"description": "refused", "content": {"application/problem+json": {
                              "schema": {"$ref": "#/components/schemas/Problem"}}}}}}},
        "/limited": {"get": {"responses": {"200": {"description": "ok", "headers": LIMITS,
                                                   "content": {"application/json": {"schema": USER}}}}},
                     "delete": {"responses": {"204": {"description": "gone", "headers": LIMITS}}}},
    },
    "components": {"schemas": {"User": USER, "Users": USERS, "UserList": USER_LIST, "Problem": PROBLEM},
                   "headers": {"RequestId": {"required": True, "schema": {"type": "string", "format": "uuid"}}}},
}


def answer_schema(schema: Any) -> Any:
    """`schema` as an answer must meet it: a `writeOnly` property may not be present (as schemathesis reads it)."""
    if isinstance(schema, dict):
        out = {k: answer_schema(v) for k, v in schema.items()}
        if schema.get("writeOnly"):
            return {"not": {}}
        return out
    if isinstance(schema, list):
        return [answer_schema(v) for v in schema]
    return schema


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    spec = folder / "fuzz.json"
    spec.write_text(json.dumps(SPEC), encoding="utf-8")
    stub = ServeProcess("--spec", str(spec), "--port", "0", "--scenarios", str(folder))
    try:
        yield stub.url
    finally:
        stub.stop()
    assert "Traceback" not in stub.stderr


def _valid(body: Any, ref: str) -> None:
    schema = {"$ref": f"#/components/schemas/{ref}", "components": answer_schema(SPEC["components"])}
    schema["$ref"] = f"#/components/schemas/{ref}"
    jsonschema.validate(body, schema)


@pytest.mark.parametrize(("path", "ref"), [("/users", "Users"), ("/users/u1", "User"), ("/user-list", "UserList")])
def test_declared_examples_are_answered_without_write_only_members(url, path, ref):
    status, data, _ = raw_call(url, "GET", path)
    body = json.loads(data)
    user = body["Resources"][0] if ref != "User" else body
    assert (status, user) == (200, {"id": "u1", "profile": {"title": "Dr"}})
    _valid(body, ref)


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_required_response_headers_are_sent(url, method):
    status, _, headers = raw_call(url, method, "/limited")
    assert status == (200 if method == "GET" else 204)
    assert int(headers["X-Rate-Limit-Limit"]) >= 10
    assert headers["X-Tags"] == "a,a"
    assert str(uuid.UUID(headers["X-Request-Id"])) == headers["X-Request-Id"]
    assert "X-Optional" not in headers


def test_a_problem_json_error_without_a_text_field_keeps_its_media_type(url):
    """Redocly's museum: a problem+json 400 whose schema has only `type` and `title` was answered with our
    Error record as application/json, a media type the operation does not declare."""
    status, data, headers = raw_call(url, "POST", "/tickets", b"{}", {"Content-Type": "application/json"})
    assert (status, headers["Content-Type"]) == (400, "application/problem+json")
    body = json.loads(data)
    assert body == {"type": "about:blank", "title": "Bad Request"}
    assert headers["X-Plantstub-Error"] == "body: 'id' is a required property"
    _valid(body, "Problem")


@pytest.mark.parametrize(("query", "status"), [("orderBy=", 204), ("orderBy=created%20asc", 204), ("ids=", 400),
                                               ("ids=1,2", 204), ("orderBy=a,b", 400)])
def test_an_empty_form_array_is_read_as_one_empty_item_where_no_items_are_refused(url, query, status):
    """Okta's `orderBy` (form, explode false, minItems 1): `orderBy=` was read as `[]` only, refused."""
    got, data, _ = raw_call(url, "GET", f"/ordered?{query}")
    assert got == status, data
    if query == "ids=":  # an empty integer is no integer either: no reading of it is valid
        assert json.loads(data)["message"] == "query.ids: [] should be non-empty"


def test_a_type_no_branch_allows_is_named_as_the_documents_contradiction(url):
    """Okta OPA's `attribute_value`: the 501 said plantstub found no value, as if it might exist; none does."""
    status, data, _ = raw_call(url, "GET", "/attribute")
    assert status == 501
    message = json.loads(data)["message"]
    assert message.startswith("plantstub cannot answer GET /attribute: no value satisfies the schema of its response 200")
    assert "its `type` is one no oneOf/anyOf branch beside it allows" in message
    assert "attribute_value: type object, its oneOf branches integer, string)" in message
    status, data, _ = raw_call(url, "GET", "/loose-attribute")  # left out where the value may go without it
    assert status == 200 and "attribute_value" not in json.loads(data)


@pytest.mark.parametrize(("body", "status"), [(b'{"address": null}', 204), (b'{"address": {"city": "Oslo"}}', 204),
                                              (b'{"address": {"city": 1}}', 400), (b'{"address": 1}', 400)])
def test_nullable_beside_an_all_of_takes_null(url, body, status):
    """Plaid's employer address: `nullable: true` beside an allOf whose part says `type: object` refused null."""
    got, data, _ = raw_call(url, "POST", "/employers", body, {"Content-Type": "application/json"})
    assert got == status, data
