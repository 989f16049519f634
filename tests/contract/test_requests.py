"""Parameters, security and bodies checked per operation, on specs written inline for each case."""

from __future__ import annotations

import base64
import json

import pytest

from plantstub.contract.load import load_spec
from plantstub.contract.requests import RequestCheck
from plantstub.contract.router import Router
from tests.helpers import make_request

API = {
    "openapi": "3.1.0",
    "info": {"title": "t", "version": "1"},
    "components": {
        "securitySchemes": {
            "bearer": {"type": "http", "scheme": "bearer"},
            "basic": {"type": "http", "scheme": "basic"},
            "headerKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
            "queryKey": {"type": "apiKey", "in": "query", "name": "api_key"},
            "cookieKey": {"type": "apiKey", "in": "cookie", "name": "session"},
        }
    },
    "security": [{"bearer": []}],
    "paths": {
        "/plants/{plantId}": {
            "parameters": [{"name": "plantId", "in": "path", "required": True,
                            "schema": {"type": "integer", "format": "int32", "minimum": 1}}],
            "get": {
                "parameters": [
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 100}},
                    {"name": "tags", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}},
                    {"name": "ids", "in": "query", "explode": False,
                     "schema": {"type": "array", "items": {"type": "integer"}}},
                    {"name": "verbose", "in": "query", "schema": {"type": "boolean"}},
                    {"name": "X-Request-Id", "in": "header", "required": True,
                     "schema": {"type": "string", "format": "uuid"}},
                ],
                "responses": {"200": {"description": "ok"}},
            },
            "delete": {"security": [], "responses": {"204": {"description": "gone"}}},
            "put": {"security": [{"basic": []}, {"headerKey": []}], "responses": {"200": {"description": "ok"}}},
            "patch": {"security": [{"queryKey": [], "cookieKey": []}], "responses": {"200": {"description": "ok"}}},
        },
        "/forms": {
            "post": {
                "security": [],
                "requestBody": {"required": True, "content": {
                    "application/x-www-form-urlencoded": {"schema": {
                        "type": "object", "required": ["count"],
                        "properties": {"count": {"type": "integer"}, "note": {"type": "string"}}}},
                    "application/*+json": {"schema": {"type": "object"}},
                }},
                "responses": {"200": {"description": "ok"}},
            }
        },
    },
}
UUID = "123e4567-e89b-42d3-a456-426614174000"


@pytest.fixture(scope="module")
def router(tmp_path_factory):
    path = tmp_path_factory.mktemp("spec") / "api.json"
    path.write_text(json.dumps(API))
    return Router(load_spec(path))


def check(router, method, path, *, headers=None, query=None, raw=b""):
    route = router.route(method, path)
    request = make_request(method, path, headers=headers, query=query, raw=raw)
    violations, _ = RequestCheck(route.operation).violations(request, route.path_params)
    return [(str(v), v.status) for v in violations]


def test_parameters_valid_request_has_no_violations(router):
    query = {"limit": ["10"], "tags": ["a", "b"], "ids": ["1,2,3"], "verbose": ["true"]}
    headers = {"Authorization": "Bearer t", "x-request-id": UUID}
    assert check(router, "GET", "/plants/5", headers=headers, query=query) == []


def test_parameters_are_coerced_and_checked_each(router):
    query = {"limit": ["1000"], "ids": ["1,x"], "verbose": ["maybe"]}
    headers = {"Authorization": "Bearer t", "X-Request-Id": "not-a-uuid"}
    assert check(router, "GET", "/plants/0", headers=headers, query=query) == [
        ("path.plantId: 0 is less than the minimum of 1", 400),
        ("query.limit: 1000 is greater than the maximum of 100", 400),
        ("query.ids[1]: 'x' is not of type 'integer'", 400),
        ("query.verbose: 'maybe' is not of type 'boolean'", 400),
        ("headers.X-Request-Id: 'not-a-uuid' is not a 'uuid'", 400),
    ]


def test_parameters_required_header_missing(router):
    assert check(router, "GET", "/plants/1", headers={"Authorization": "Bearer t"}) == [
        ("headers.X-Request-Id: required parameter is missing", 400)]


def test_parameters_path_int32_bound(router):
    headers = {"Authorization": "Bearer t", "X-Request-Id": UUID}
    assert check(router, "GET", f"/plants/{2**31}", headers=headers) == [
        ("path.plantId: 2147483648 is greater than the maximum of 2147483647", 400)]


def test_security_empty_list_on_operation_means_none(router):
    assert check(router, "DELETE", "/plants/3") == []


def test_security_alternatives_any_one_suffices(router):
    basic = "Basic " + base64.b64encode(b"user:pw").decode()
    assert check(router, "PUT", "/plants/3", headers={"Authorization": basic}) == []
    assert check(router, "PUT", "/plants/3", headers={"X-API-Key": "k"}) == []
    assert check(router, "PUT", "/plants/3") == [(
        "security: headers.Authorization: missing; expected 'Basic <credentials>' (basic) or "
        "headers.X-API-Key: missing API key (headerKey)", 401)]


def test_security_basic_needs_base64_user_password(router):
    assert check(router, "PUT", "/plants/3", headers={"Authorization": "Basic !!!"}) == [(
        "security: headers.Authorization: Basic credentials are not valid base64 or "
        "headers.X-API-Key: missing API key (headerKey)", 401)]


def test_security_all_schemes_of_one_requirement_are_needed(router):
    assert check(router, "PATCH", "/plants/3", query={"api_key": ["k"]}, headers={"Cookie": "session=s"}) == []
    assert check(router, "PATCH", "/plants/3", query={"api_key": ["k"]}) == [
        ("cookies.session: missing API key (cookieKey)", 401)]


def test_body_form_urlencoded_is_coerced_and_checked(router):
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    assert check(router, "POST", "/forms", headers=headers, raw=b"count=3&note=hi") == []
    assert check(router, "POST", "/forms", headers=headers, raw=b"count=three") == [
        ("body.count: 'three' is not of type 'integer'", 400)]


def test_body_media_type_wildcard_matches_vendor_json(router):
    headers = {"Content-Type": "application/vnd.plants+json"}
    assert check(router, "POST", "/forms", headers=headers, raw=b"{}") == []
    assert check(router, "POST", "/forms", headers=headers, raw=b"[]") == [
        ("body: [] is not of type 'object'", 400)]


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("GET", "/plants/12", (200, {"plantId": "12"}, ())),
        ("HEAD", "/plants/12", (200, {"plantId": "12"}, ())),
        ("POST", "/plants/12", (405, {"plantId": "12"}, ("DELETE", "GET", "HEAD", "PATCH", "PUT"))),
        ("GET", "/plants/a%2Fb", (200, {"plantId": "a/b"}, ())),
        ("GET", "/plants/", (404, {}, ())),
        ("GET", "/plants/1/2", (404, {}, ())),
        ("POST", "/forms", (200, {}, ())),
    ],
    ids=["template", "head-as-get", "405", "percent-decoded", "empty-segment", "extra-segment", "literal"],
)
def test_routing(router, method, path, expected):
    route = router.route(method, path)
    assert (route.status, route.path_params, route.allow) == expected


def test_routing_literal_beats_template(tmp_path):
    doc = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {
        "/plants/{id}": {"get": {"operationId": "byId", "responses": {"200": {"description": "ok"}}}},
        "/plants/mine": {"get": {"operationId": "mine", "responses": {"200": {"description": "ok"}}}},
    }}
    (tmp_path / "api.json").write_text(json.dumps(doc))
    router = Router(load_spec(tmp_path / "api.json"))
    assert router.route("GET", "/plants/mine").operation.operation_id == "mine"
    assert router.route("GET", "/plants/7").operation.operation_id == "byId"
