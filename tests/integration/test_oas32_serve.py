"""`plantstub serve --spec` on OpenAPI 3.2 documents: a QUERY operation and one of `additionalOperations`, an
`in: querystring` parameter, a Server-Sent Events stream and a JSON Lines one. Each stream answer is read back and
every item checked with the jsonschema library against the media type's `itemSchema`."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import jsonschema

from plantstub.contract.load import load_spec
from plantstub.contract.streams import read_items
from tests.helpers import SPECS, ServeProcess

OAS32 = SPECS / "oas32"


def send(url: str, method: str, path: str, body: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, str | None, bytes]:
    request = urllib.request.Request(url + path, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers.get("Content-Type"), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type"), exc.read()


def item_schema(document: str, label: str, media: str) -> Any:
    spec = load_spec(OAS32 / document, cache=False)
    op = next(op for op in spec.operations if op.label == label)
    return op.responses["200"].content[media].item_schema


def test_serve_oas32_query_and_additional_operations(serve_spec):
    stub = serve_spec(str(OAS32 / "query.yaml"))
    sent = {"Content-Type": "application/json"}
    status, kind, payload = send(stub.url, "QUERY", "/plants", b'{"tag": "fern", "tallerThan": 3}', sent)
    assert (status, kind, json.loads(payload)) == (200, "application/json", [{"id": 0, "name": "string"}])
    status, _, payload = send(stub.url, "QUERY", "/plants", b'{"tag": "rose"}', sent)
    assert (status, json.loads(payload)["message"]) == (400, "body.tag: 'rose' is not one of ['fern', 'cactus', 'palm']")
    status, _, payload = send(stub.url, "COPY", "/plants/4")
    assert (status, json.loads(payload)) == (201, {"id": 0, "name": "string"})
    status, _, payload = send(stub.url, "GET", "/plants")
    assert (status, json.loads(payload)["message"]) == (405, "method: GET is not allowed on /plants (allowed: QUERY)")
    calls = json.loads(send(stub.url, "GET", "/__plantstub/calls")[2])
    assert [(c["method"], c["path"], c["response"]["status"]) for c in calls] == [
        ("QUERY", "/plants", 200), ("QUERY", "/plants", 400), ("COPY", "/plants/4", 201), ("GET", "/plants", 405)]


def test_serve_oas32_querystring(serve_spec):
    stub = serve_spec(str(OAS32 / "querystring.yaml"))
    status, _, payload = send(stub.url, "GET", "/search?name=Fern&limit=5&tag=green")
    assert (status, json.loads(payload)) == (200, ["string"])
    status, _, payload = send(stub.url, "GET", "/search?name=Fern&limit=500")
    assert (status, json.loads(payload)["message"]) == (400, "query.limit: 500 is greater than the maximum of 50")
    status, _, payload = send(stub.url, "GET", "/search")
    assert (status, json.loads(payload)["message"]) == (400, "query: required query string is missing")
    assert send(stub.url, "GET", "/select?%7B%22field%22%3A%22name%22%7D")[0] == 204


def test_serve_oas32_server_sent_events(serve_spec):
    stub = serve_spec(str(OAS32 / "sse.yaml"))
    schema = item_schema("sse.yaml", "GET /events", "text/event-stream")
    status, kind, payload = send(stub.url, "GET", "/events")
    assert (status, kind) == (200, "text/event-stream")
    events = read_items(payload, "text/event-stream")
    assert len(events) == 3
    for event in events:
        jsonschema.validate(event, schema)
    stream = {"Content-Type": "text/event-stream"}
    assert send(stub.url, "POST", "/events", b"event: grew\ndata: a leaf\n\n", stream)[0] == 202
    status, _, payload = send(stub.url, "POST", "/events", b"event: grew\n\nevent: grew\ndata: \n\n", stream)
    assert (status, json.loads(payload)["message"]) == (400, "body[0].data: '' should be non-empty")


def test_serve_oas32_dynamic_server_sent_events(serve_spec):
    stub = serve_spec(str(OAS32 / "sse.yaml"), "--dynamic", "--seed", "11")
    schema = item_schema("sse.yaml", "GET /events", "text/event-stream")
    payloads = [send(stub.url, "GET", "/events")[2] for _ in range(2)]
    assert payloads[0] != payloads[1]
    for payload in payloads:
        for event in read_items(payload, "text/event-stream"):
            jsonschema.validate(event, schema)


def test_serve_oas32_json_lines(serve_spec):
    stub = serve_spec(str(OAS32 / "jsonl.yaml"))
    for path, media in (("/log", "application/jsonl"), ("/log.seq", "application/json-seq")):
        status, kind, payload = send(stub.url, "GET", path)
        assert (status, kind) == (200, media)
        for item in read_items(payload, media):
            jsonschema.validate(item, item_schema("jsonl.yaml", f"GET {path}", media))
    lines = {"Content-Type": "application/jsonl"}
    assert send(stub.url, "POST", "/log", b'{"level": 3, "message": "watered"}\n', lines)[0] == 204
    status, _, payload = send(stub.url, "POST", "/log", b'{"level": 3, "message": "ok"}\n{"level": 8, "message": "x"}\n',
                              lines)
    assert (status, json.loads(payload)["message"]) == (400, "body[1].level: 8 is greater than the maximum of 7")
    calls = json.loads(send(stub.url, "GET", "/__plantstub/calls?method=POST")[2])
    assert calls[-1]["body"] == [{"level": 3, "message": "ok"}, {"level": 8, "message": "x"}]


def test_serve_oas32_method_the_c_parser_refuses_with_the_pure_python_parser(tmp_path):
    spec = tmp_path / "api.yaml"
    spec.write_text("openapi: 3.2.0\ninfo: {title: t, version: '1'}\npaths:\n  /plants:\n    additionalOperations:\n"
                    "      FOOBAR: {responses: {'204': {description: done}}}\n    query:\n"
                    "      responses: {'200': {description: ok, content: {application/json: {schema: {type: integer}}}}}\n")
    (tmp_path / "scenarios").mkdir()
    stub = ServeProcess("--spec", str(spec), "--port", "0", "--scenarios", str(tmp_path / "scenarios"),
                        env={"AIOHTTP_NO_EXTENSIONS": "1"})
    try:
        assert send(stub.url, "FOOBAR", "/plants")[:2] == (204, None)
        assert send(stub.url, "QUERY", "/plants")[::2] == (200, b"0")
        status, _, payload = send(stub.url, "BAZ", "/plants")
        assert (status, json.loads(payload)["message"]) == (
            405, "method: BAZ is not allowed on /plants (allowed: FOOBAR, QUERY)")
    finally:
        stub.stop()
    assert "FOOBAR" not in stub.stderr  # no warning: this parser reads it
