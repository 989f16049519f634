"""Required response headers (issue 25, found by schemathesis on Okta's X-Rate-Limit-*): every answer of an
operation whose declared response marks headers `required` sends them, whoever made the answer: a scenario
rule, the store (--stateful), or our own refusal in the declared error shape. Through `plantstub serve`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers import ServeProcess, raw_call

LIMITS = {"X-Rate-Limit-Limit": {"required": True, "schema": {"type": "integer", "minimum": 10}},
          "X-Optional": {"schema": {"type": "string"}}}
THING = {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}
ERROR = {"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}}
ID = [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]


def _json(schema: Any) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "required headers", "version": "1"},
    "paths": {
        "/things": {
            "get": {"responses": {"200": {"description": "ok", "headers": LIMITS,
                                          "content": _json({"type": "array", "items": THING})}}},
            "post": {"requestBody": {"required": True, "content": _json(THING)},
                     "responses": {"201": {"description": "made", "headers": LIMITS, "content": _json(THING)},
                                   "4XX": {"description": "refused", "headers": LIMITS, "content": _json(ERROR)}}}},
        "/things/{id}": {
            "parameters": ID,
            "get": {"responses": {"200": {"description": "ok", "headers": LIMITS, "content": _json(THING)},
                                  "404": {"description": "none", "headers": LIMITS, "content": _json(ERROR)}}},
            "delete": {"responses": {"204": {"description": "gone", "headers": LIMITS}}}},
        "/plain": {"get": {"responses": {"200": {"description": "ok", "content": _json(THING)}}}},
    },
}
SCENARIO = """
rules:
  - match: {method: GET, path: /things/ruled}
    reply: {status: 200, body: {id: ruled}}
  - match: {method: GET, path: /things/own}
    reply: {status: 200, headers: {x-rate-limit-limit: "77"}, body: {id: own}}
  - match: {method: GET, path: /things/broken}
    off_contract: true
    reply: {status: 200, body: {id: broken}}
  - match: {method: GET, path: /plain}
    reply: {status: 200, body: {id: plain}}
"""


@pytest.fixture(scope="module")
def urls(tmp_path_factory):
    folder = tmp_path_factory.mktemp("headers")
    spec = folder / "spec.json"
    spec.write_text(json.dumps(SPEC), encoding="utf-8")
    (folder / "ruled.yaml").write_text(SCENARIO, encoding="utf-8")
    ruled = ServeProcess("--spec", str(spec), "--port", "0", "--scenarios", str(folder), "--scenario", "ruled")
    stateful = ServeProcess("--spec", str(spec), "--port", "0", "--scenarios", str(folder), "--stateful")
    try:
        yield ruled.url, stateful.url
    finally:
        ruled.stop()
        stateful.stop()
    assert "Traceback" not in ruled.stderr + stateful.stderr


def _limit(headers: Any) -> int:
    assert "X-Optional" not in headers
    return int(headers["X-Rate-Limit-Limit"])


def test_a_scenario_reply_sends_the_required_headers(urls):
    status, data, headers = raw_call(urls[0], "GET", "/things/ruled")
    assert (status, json.loads(data)) == (200, {"id": "ruled"})
    assert _limit(headers) >= 10


def test_a_scenario_reply_keeps_its_own_value_and_an_off_contract_one_is_left_as_written(urls):
    status, _, headers = raw_call(urls[0], "GET", "/things/own")
    assert (status, headers.get_all("X-Rate-Limit-Limit")) == (200, ["77"])
    status, _, headers = raw_call(urls[0], "GET", "/things/broken")
    assert (status, "X-Rate-Limit-Limit" in headers) == (200, False)


def test_a_response_that_requires_none_gets_none(urls):
    status, _, headers = raw_call(urls[0], "GET", "/plain")
    assert status == 200 and not any(name.lower().startswith("x-rate") for name in headers)


@pytest.mark.parametrize("method", ["POST", "GET", "GET_MISSING", "DELETE", "LIST"])
def test_stateful_answers_send_the_required_headers(urls, method):
    url = urls[1]
    status, data, headers = raw_call(url, "POST", "/things", b'{"id": "t1", "name": "a"}',
                                     {"Content-Type": "application/json"})
    assert status in (201, 409), data
    if method == "POST":
        status, data, headers = raw_call(url, "POST", "/things", b'{"id": "t2"}', {"Content-Type": "application/json"})
        assert status == 201
    elif method == "GET":
        status, data, headers = raw_call(url, "GET", "/things/t1")
        assert (status, json.loads(data)) == (200, {"id": "t1", "name": "a"})
    elif method == "GET_MISSING":
        status, data, headers = raw_call(url, "GET", "/things/nobody")
        assert status == 404
        assert "nobody" in json.loads(data)["message"]
    elif method == "LIST":
        status, data, headers = raw_call(url, "GET", "/things")
        assert status == 200
    else:
        status, data, headers = raw_call(url, "DELETE", "/things/t1")
        assert status == 204
    assert _limit(headers) >= 10


def test_our_refusal_in_the_declared_error_shape_sends_the_required_headers(urls):
    status, data, headers = raw_call(urls[0], "POST", "/things", b'{"name": 1}', {"Content-Type": "application/json"})
    assert status == 400
    assert json.loads(data)["message"] == headers["X-Plantstub-Error"]
    assert "body: 'id' is a required property" in headers["X-Plantstub-Error"]
    assert _limit(headers) >= 10


FRAMED = {"openapi": "3.0.3", "info": {"title": "framing headers", "version": "1"}, "paths": {"/framed": {"get": {
    "responses": {"200": {"description": "ok", "content": _json(THING), "headers": {
        **{name: {"required": True, "schema": {"type": "string"}}
           for name in ("Transfer-Encoding", "Content-Length", "Date", "X:Y", "Bad Name", "", "Ünï", "X\nInjected")},
        "Connection": {"required": True, "schema": {"type": "string", "example": "close"}},
        "X-Kept": {"required": True, "schema": {"type": "string", "enum": ["kept"]}}}}}}}}}


def test_required_headers_http_writes_itself_or_cannot_carry_are_never_sent(tmp_path):
    """A document requiring Transfer-Encoding, Connection, Date or a name no header can have (found in review):
    the answer keeps HTTP's own framing, every request on a kept connection is answered, start-up says why."""
    import asyncio

    import aiohttp

    spec = tmp_path / "framed.json"
    spec.write_text(json.dumps(FRAMED), encoding="utf-8")
    stub = ServeProcess("--spec", str(spec), "--port", "0", "--scenarios", str(tmp_path))

    async def twice() -> list[tuple[int, dict[str, str], Any]]:
        async with aiohttp.ClientSession() as http:  # a client that refuses a Content-Length beside chunking
            out = []
            for _ in range(2):
                async with http.get(f"{stub.url}/framed") as answer:
                    out.append((answer.status, dict(answer.headers), await answer.json()))
            return out

    try:
        got = asyncio.run(twice())
    finally:
        stub.stop()
    for status, headers, body in got:
        assert status == 200 and body["id"]
        assert headers["X-Kept"] == "kept"
        assert "Transfer-Encoding" not in headers and headers.get("Connection", "keep-alive") == "keep-alive"
        assert headers["Date"].endswith(" GMT")  # HTTP's date, not a generated string
        assert not any(name in headers for name in ("X:Y", "Bad Name", "Ünï", "X\nInjected"))
    assert "Traceback" not in stub.stderr
    for name in ("Transfer-Encoding", "Connection", "Date"):
        assert f"headers.{name}: required, but never sent: HTTP's own header, which the server writes" in stub.stderr
    assert "headers.Bad Name: required, but never sent: it is not a name an HTTP header can have" in stub.stderr
