"""Issue 25 item 2: our own 4xx in the error shape the operation declares, through `plantstub serve` and raw HTTP.

Every answer is checked with jsonschema against the schema the document declares for it.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from tests.helpers import ServeProcess, raw_call

NAME = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
GRAPH_ERROR = {"type": "object", "required": ["error"], "properties": {"error": {
    "type": "object", "required": ["code", "message"],
    "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}}
SCHEMAS: dict[str, dict[str, Any]] = {
    "/detail": {"type": "object", "required": ["detail", "code"],
                "properties": {"code": {"type": "string"}, "detail": {"type": "string"}}},
    "/range": {"type": "object", "required": ["status", "message"],
               "properties": {"status": {"type": "integer"}, "message": {"type": "string"}}},
    "/fallback": {"$ref": "#/components/schemas/GraphError"},
    "/problem-schema": {"type": "object", "required": ["type", "title", "status"], "properties": {
        "type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"},
        "detail": {"type": "string"}, "instance": {"type": "string"}}},
    "/list": {"type": "array", "minItems": 1, "items": {"type": "object", "required": ["field", "reason"],
              "properties": {"field": {"type": "string"}, "reason": {"type": "string"}}}},
    "/text": {"type": "string", "maxLength": 24},
    "/strict": {"type": "object", "additionalProperties": False,
                "required": ["errorCode", "errorDescription", "timestamp"],
                "properties": {"errorCode": {"type": "integer", "minimum": 1000},
                               "errorDescription": {"type": "string"},
                               "timestamp": {"type": "string", "format": "date-time"}}},
}


def _operation(path: str) -> dict[str, Any]:
    ok = {"200": {"description": "ok", "content": {"application/json": {"schema": NAME}}}}
    media = "application/problem+json" if path.startswith("/problem") else "application/json"
    content: dict[str, Any] = {media: {"schema": SCHEMAS[path]}} if path in SCHEMAS else {media: {}}
    key = {"/range": "4XX", "/fallback": "default"}.get(path, "400")
    declared: dict[str, Any] = {"description": "refused"} if path == "/none" else {"description": "refused",
                                                                                   "content": content}
    operation: dict[str, Any] = {
        "parameters": [{"name": "n", "in": "query", "schema": {"type": "integer"}}],
        "requestBody": {"required": True, "content": {"application/json": {"schema": NAME}}},
        "responses": {**ok, key: declared},
    }
    if path == "/range":
        operation["security"] = [{"bearer": []}]
    return {"post": operation}


PATHS = ["/detail", "/range", "/fallback", "/problem", "/problem-schema", "/list", "/text", "/strict", "/none"]
SPEC = {
    "openapi": "3.1.0",
    "info": {"title": "errors", "version": "1"},
    "paths": {path: _operation(path) for path in PATHS},
    "components": {"schemas": {"GraphError": GRAPH_ERROR},
                   "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
}
AUTH = {"Content-Type": "application/json", "Authorization": "Bearer t"}


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    folder = tmp_path_factory.mktemp("errors")
    spec = folder / "errors.json"
    spec.write_text(json.dumps(SPEC), encoding="utf-8")
    stub = ServeProcess("--spec", str(spec), "--port", "0", "--scenarios", str(folder))
    yield stub.url
    stub.stop()
    assert "Traceback" not in stub.stderr


def _refused(url: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any, Any]:
    status, raw, answered = raw_call(url, "POST", f"{path}?n=x", json.dumps({"name": 5}).encode(),
                                     headers or AUTH)
    return status, json.loads(raw), answered


def _declared(path: str, body: Any) -> None:
    schema = {**SCHEMAS[path], "components": SPEC["components"]}
    jsonschema.validate(body, schema, cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize(("path", "where"), [
    ("/detail", ("detail",)),
    ("/fallback", ("error", "message")),
    ("/strict", ("errorDescription",)),
    ("/problem-schema", ("detail",)),
    ("/list", (0, "reason")),
])
def test_our_text_goes_in_the_declared_message_field(url, path, where):
    status, body, headers = _refused(url, path)
    assert status == 400
    _declared(path, body)
    text = body
    for key in where:
        text = text[key]
    assert "body.name" in text and "query.n" in text
    assert headers["X-Plantstub-Error"] == text
    assert headers["Content-Type"].startswith("application/problem+json" if "problem" in path else "application/json")


def test_integer_status_fields_get_the_status_where_the_schema_takes_it(url):
    assert _refused(url, "/strict")[1]["errorCode"] == 1000  # minimum 1000: the generated value stays
    body = _refused(url, "/problem-schema")[1]
    assert (body["status"], body["title"], body["type"]) == (400, "Bad Request", "about:blank")


def test_a_4xx_range_carries_401_with_its_challenge(url):
    status, body, headers = _refused(url, "/range", {"Content-Type": "application/json"})
    assert status == 401 and body["status"] == 401
    _declared("/range", body)
    assert headers["WWW-Authenticate"].startswith("Bearer")
    assert "Authorization" in body["message"] and body["message"] == headers["X-Plantstub-Error"]


def test_problem_json_without_a_schema_is_rfc_9457(url):
    status, body, headers = _refused(url, "/problem")
    assert status == 400 and headers["Content-Type"].startswith("application/problem+json")
    assert body == {"type": "about:blank", "title": "Bad Request", "status": 400,
                    "detail": headers["X-Plantstub-Error"]}
    assert "body.name" in body["detail"]


def test_a_string_error_body_is_our_text_cut_to_its_max_length(url):
    status, body, headers = _refused(url, "/text")
    assert status == 400
    _declared("/text", body)
    assert headers["X-Plantstub-Error"].startswith(body) and len(body) == 24
    assert "body.name" in headers["X-Plantstub-Error"]


def test_the_header_is_ascii_and_one_line(url):
    body = json.dumps({"name": 5}).encode()
    status, raw, headers = raw_call(url, "POST", "/detail?n=%CE%A9", body, AUTH)
    text = headers["X-Plantstub-Error"]
    assert status == 400 and "query.n" in text and "\\u03a9" in text and text.isascii()
    assert "query.n" in json.loads(raw)["detail"]


def test_no_declared_body_keeps_our_error_record(url):
    status, body, headers = _refused(url, "/none")
    assert status == 400 and set(body) == {"error", "message"} and body["error"] == 400
    assert "body.name" in body["message"] and "X-Plantstub-Error" not in headers


def test_other_refusals_of_ours_take_the_declared_shape_too(url):
    status, raw, _ = raw_call(url, "POST", "/detail", json.dumps({"name": "a"}).encode(),
                                    {**AUTH, "Prefer": "code=404"})
    body = json.loads(raw)
    assert status == 400 and "headers.Prefer" in body["detail"]
    _declared("/detail", body)
    status, raw, _ = raw_call(url, "POST", "/fallback", json.dumps({"name": "a"}).encode(),
                                    {**AUTH, "X-Plantstub-Scenario": "nope"})
    body = json.loads(raw)
    assert status == 400 and "headers.X-Plantstub-Scenario" in body["error"]["message"]
    _declared("/fallback", body)


def test_the_plant_store_answers_as_before(tmp_path):
    stub = ServeProcess("--port", "0", "--scenarios", str(tmp_path))
    try:
        status, raw, headers = raw_call(stub.url, "POST", "/plants", b'{"id": "x", "name": "Fern"}', AUTH)
        assert status == 400 and "X-Plantstub-Error" not in headers
        assert json.loads(raw) == {"error": 400, "message": "body.id: 'x' is not of type 'integer'"}
        status, raw, headers = raw_call(stub.url, "POST", "/plants", b'{"id": 1, "name": "Fern"}',
                                        {"Content-Type": "application/json"})
        assert status == 401 and "X-Plantstub-Error" not in headers and json.loads(raw)["error"] == 401
    finally:
        stub.stop()
