"""The low-level server that Stub and `plantstub serve` use: what aiohttp's Application used to do for us."""

from __future__ import annotations

import http.client
import json
import socket

import pytest

from plantstub import Stub
from tests.helpers import HANG, address

HEADERS = "Authorization: Bearer t\r\nContent-Type: application/json\r\n"


@pytest.fixture
def stub(tmp_path):
    with Stub(max_body=1000) as running:
        yield running


def raw_exchange(stub: Stub, head: str, body: bytes | None = None, wait_for_continue: bool = False) -> bytes:
    host, port = address(stub.url)
    with socket.create_connection((host, int(port)), timeout=HANG) as sock:
        sock.sendall(head.encode())
        received = b""
        if wait_for_continue:
            received = sock.recv(4096)  # a client that waits for the go-ahead before its body
        if body is not None:
            sock.sendall(body)
        sock.settimeout(HANG)
        while b"\r\n\r\n" not in received or not received.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
        return received


def test_expect_100_continue_gets_its_go_ahead(stub):
    body = b'{"id": 1, "name": "Fern"}'
    head = f"POST /plants HTTP/1.1\r\nHost: x\r\n{HEADERS}Content-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n"
    # The client sends its body only once the go-ahead came: without it, raw_exchange's read would wait for ever.
    answer = raw_exchange(stub, head, body, wait_for_continue=True)
    assert answer.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK")
    assert answer.endswith(b'{"name":"Fern"}')


def test_expect_100_continue_over_the_limit_is_refused_at_once(stub):
    head = f"POST /plants HTTP/1.1\r\nHost: x\r\n{HEADERS}Content-Length: 5000\r\nExpect: 100-continue\r\n\r\n"
    answer = raw_exchange(stub, head, wait_for_continue=True)
    assert answer.startswith(b"HTTP/1.1 413")
    assert b'"body: larger than the limit of 1000 bytes (--max-body)"' in answer
    [call] = stub.calls
    assert (call.status, call.errors) == (413, ("body: larger than the limit of 1000 bytes (--max-body)",))


def test_head_of_calls_sends_no_body_and_the_connection_stays_usable(stub):
    host, port = address(stub.url)
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    connection.request("POST", "/plants", body=b'{"id": 1, "name": "Fern"}',
                       headers={"Authorization": "Bearer t", "Content-Type": "application/json"})
    assert connection.getresponse().read() == b'{"name":"Fern"}'
    connection.request("HEAD", "/__plantstub/calls")
    head = connection.getresponse()
    assert head.status == 200 and head.read() == b""
    connection.request("GET", "/__plantstub/health")  # same connection: nothing left over from the HEAD
    assert json.loads(connection.getresponse().read())["status"] == "ok"
    connection.close()


def test_a_lone_surrogate_is_echoed_escaped_not_a_500(stub):
    host, port = address(stub.url)
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    connection.request("POST", "/plants", body=b'{"id": 1, "name": "\\ud800"}',
                       headers={"Authorization": "Bearer t", "Content-Type": "application/json"})
    response = connection.getresponse()
    assert (response.status, response.read()) == (200, b'{"name":"\\ud800"}')
    connection.close()
    assert stub.calls[-1].body == {"id": 1, "name": "\ud800"}


@pytest.mark.parametrize(("body", "status", "message"), [
    (b'{"id": "\\ud800", "name": 1}', 400,
     "body.id: '\ufffd' is not of type 'integer'; body.name: 1 is not of type 'string'"),
    (b'{"id": 1, "name": "F", "\\udc00": 2}', 200, None),
], ids=["value-breaks-the-schema", "in-a-key"])
def test_a_lone_surrogate_is_checked_as_the_text_it_stands_in(stub, body, status, message):
    """jsonschema-rs cannot read a lone surrogate: a body holding one was refused as "not a JSON value: cannot be
    checked", naming neither where nor what; now it is checked with U+FFFD in its place."""
    host, port = address(stub.url)
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    connection.request("POST", "/plants", body=body,
                       headers={"Authorization": "Bearer t", "Content-Type": "application/json"})
    response = connection.getresponse()
    answer = json.loads(response.read())
    connection.close()
    assert response.status == status, answer
    if message is not None:
        assert answer == {"error": 400, "message": message}
