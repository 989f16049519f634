"""--cors against `plantstub serve`: preflights answered, answers readable by any origin, admin API left out."""

from __future__ import annotations

import json
import socket

import pytest

from tests.helpers import JSON_AUTH, ServeProcess, address
from tests.helpers import raw_call as call

PAGE = "http://localhost:3000"


@pytest.fixture(scope="module")
def cors_stub():
    stub = ServeProcess("--port", "0", "--cors")
    yield stub
    stub.stop()


def test_a_preflight_is_answered_and_not_recorded(cors_stub):
    call(cors_stub.url, "POST", "/__plantstub/reset")
    status, body, headers = call(cors_stub.url, "OPTIONS", "/plants", headers={
        "Origin": PAGE, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert (status, body) == (204, b"")
    assert headers["Access-Control-Allow-Origin"] == PAGE
    assert headers["Access-Control-Allow-Credentials"] == "true"
    assert "POST" in headers["Access-Control-Allow-Methods"].split(", ")
    assert headers["Access-Control-Allow-Headers"] == "authorization, content-type"
    assert "Origin" in headers["Vary"]
    calls = json.loads(call(cors_stub.url, "GET", "/__plantstub/calls")[1])
    assert [c["method"] for c in calls] == []


def test_the_answer_carries_the_cors_headers_and_the_call_is_recorded(cors_stub):
    call(cors_stub.url, "POST", "/__plantstub/reset")
    status, body, headers = call(cors_stub.url, "POST", "/plants", b'{"id": 1, "name": "Fern"}',
                                 {**JSON_AUTH, "Origin": PAGE})
    assert (status, json.loads(body)) == (200, {"name": "Fern"})
    assert headers["Access-Control-Allow-Origin"] == PAGE and headers["Vary"] == "Origin"
    # an error answer too: the page must be able to read the 401 and its WWW-Authenticate
    status, body, headers = call(cors_stub.url, "POST", "/plants", b'{"id": 1, "name": "Fern"}',
                                 {"Content-Type": "application/json", "Origin": PAGE})
    assert status == 401 and headers["Access-Control-Allow-Origin"] == PAGE
    assert "WWW-Authenticate" in headers["Access-Control-Expose-Headers"].split(", ")
    calls = json.loads(call(cors_stub.url, "GET", "/__plantstub/calls")[1])
    assert [c["response"]["status"] for c in calls] == [200, 401]


def test_a_preflight_for_a_method_the_path_lacks_still_lets_the_405_through(cors_stub):
    status, _, headers = call(cors_stub.url, "OPTIONS", "/plants", headers={
        "Origin": PAGE, "Access-Control-Request-Method": "DELETE"})
    assert status == 204 and "DELETE" in headers["Access-Control-Allow-Methods"]
    status, body, headers = call(cors_stub.url, "DELETE", "/plants", headers={**JSON_AUTH, "Origin": PAGE})
    assert status == 405 and json.loads(body)["error"] == 405
    assert headers["Access-Control-Allow-Origin"] == PAGE


def test_the_admin_api_gets_no_cors(cors_stub):
    status, _, headers = call(cors_stub.url, "OPTIONS", "/__plantstub/calls", headers={
        "Origin": PAGE, "Access-Control-Request-Method": "GET"})
    assert status == 403 and "Access-Control-Allow-Origin" not in headers  # a foreign Origin: refused
    status, _, headers = call(cors_stub.url, "GET", "/__plantstub/calls", headers={"Origin": PAGE})
    assert status == 200 and "Access-Control-Allow-Origin" not in headers


def test_without_cors_a_preflight_is_an_ordinary_405():
    stub = ServeProcess("--port", "0")
    try:
        status, body, headers = call(stub.url, "OPTIONS", "/plants", headers={
            "Origin": PAGE, "Access-Control-Request-Method": "POST"})
    finally:
        stub.stop()
    assert status == 405 and json.loads(body)["error"] == 405
    assert "Access-Control-Allow-Origin" not in headers


def _head(url: str, origin: str) -> list[str]:
    """The head of a valid POST /plants sent with `origin`, line by line as it came (the Date's value left out)."""
    host, port = address(url)
    body = b'{"id": 1, "name": "Fern"}'
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nContent-Type: application/json\r\n"
                     b"Origin: %s\r\nContent-Length: %d\r\n\r\n%s" % (origin.encode(), len(body), body))
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, "the stub closed the connection"
            data += chunk
    lines = data.split(b"\r\n\r\n")[0].decode().split("\r\n")
    return [line if not line.startswith("Date: ") else "Date" for line in lines]


def test_the_usual_answer_carries_each_origin_in_the_same_order(cors_stub):
    for origin in (PAGE, "http://other.test", PAGE):
        head = _head(cors_stub.url, origin)
        assert head[:5] == ["HTTP/1.1 200 OK", "Content-Type: application/json",
                            f"Access-Control-Allow-Origin: {origin}", "Access-Control-Allow-Credentials: true",
                            "Vary: Origin"]
        assert head[5].startswith("Content-Length: ") and head[6] == "Date"
