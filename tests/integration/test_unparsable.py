"""Requests aiohttp cannot parse, or the pipeline cannot route, sent on a raw socket: each gets a JSON Error
record and is recorded with its method and target as far as they arrived."""

from __future__ import annotations

import gzip
import json
import socket

import pytest

from plantstub import Stub
from tests.helpers import address

AUTH = b"Authorization: Bearer t\r\nContent-Type: application/json\r\n"
HOST = b"Host: x\r\nConnection: close\r\n"  # each case is answered, then the connection closes
VALID = b'{"id": 1, "name": "Fern"}'


@pytest.fixture(scope="module")
def stub():
    with Stub() as running:
        yield running


def exchange(stub: Stub, data: bytes) -> list[tuple[int, dict]]:
    """Send `data`, read until the server closes, and split what came into (status, JSON body) pairs."""
    host, port = address(stub.url)
    with socket.create_connection((host, int(port)), timeout=5) as conn:
        conn.sendall(data)
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    answers = []
    while received:
        head, _, rest = received.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        assert headers["content-type"].startswith("application/json"), head
        size = int(headers["content-length"])
        answers.append((int(lines[0].split()[1]), json.loads(rest[:size])))
        received = rest[size:]
    return answers


def last_call(stub: Stub) -> dict:
    import urllib.request

    with urllib.request.urlopen(stub.url + "/__plantstub/calls", timeout=5) as response:
        return json.load(response)[-1]


CASES = [
    # (id, bytes sent, status, message start, recorded method, recorded path)
    ("encoded-newline", b"GET /plants%0A HTTP/1.1\r\n" + HOST + b"\r\n", 404,
     "path: no path in the spec matches /plants\n", "GET", "/plants\n"),
    ("encoded-nul", b"GET /plants%00 HTTP/1.1\r\n" + HOST + b"\r\n", 404,
     "path: no path in the spec matches /plants\x00", "GET", "/plants\x00"),
    ("bad-percent", b"GET /plants%zz HTTP/1.1\r\n" + HOST + b"\r\n", 404,
     "path: no path in the spec matches /plants%zz", "GET", "/plants%zz"),
    ("connect", b"CONNECT host:443 HTTP/1.1\r\n" + HOST + b"\r\n", 400,
     "request: the target 'host:443' is not a path such as /plants (plantstub is not a proxy)", "CONNECT", "host:443"),
    ("options-asterisk", b"OPTIONS * HTTP/1.1\r\n" + HOST + b"\r\n", 400,
     "request: the target '*' is not a path such as /plants", "OPTIONS", "*"),
    ("absolute-form", b"GET http://x/plants HTTP/1.1\r\n" + HOST + b"\r\n", 405,
     "method: GET is not allowed on /plants (allowed: POST)", "GET", "/plants"),
    ("long-url", b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n" + HOST + b"\r\n", 400,
     "request: the request line is longer than 8190 bytes", "GET", "/" + "a" * 2000),
    ("long-header", b"GET /plants HTTP/1.1\r\n" + HOST + b"X-Big: " + b"b" * 9000 + b"\r\n\r\n", 400,
     "headers: a header is longer than 8190 bytes", "GET", "/plants"),
    ("bad-request-line", b"GARBAGE LINE\r\n\r\n", 400, "request: cannot be parsed as HTTP/1.1: ", "GARBAGE", "LINE"),
    ("bad-content-length", b"POST /plants HTTP/1.1\r\n" + HOST + b"Content-Length: abc\r\n\r\n", 400,
     "request: cannot be parsed as HTTP/1.1: ", "POST", "/plants"),
    ("tls", b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 400,
     "request: this is TLS (https://) on a plain HTTP port; use http://", "", ""),
    ("broken-chunks", b"POST /plants HTTP/1.1\r\n" + HOST + AUTH + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n", 400,
     "body: cannot be read: its chunked framing is broken", "POST", "/plants"),
    ("not-gzip", b"POST /plants HTTP/1.1\r\n" + HOST + AUTH + b"Content-Encoding: gzip\r\nContent-Length: 5\r\n\r\nhello",
     400, "body: cannot be read: it does not decode as its Content-Encoding (gzip) says", "POST", "/plants"),
    ("not-deflate", b"POST /plants HTTP/1.1\r\n" + HOST + AUTH + b"Content-Encoding: deflate\r\nContent-Length: 5\r\n\r\n"
     b"\x78\x9cbad", 400, "body: cannot be read: it does not decode as its Content-Encoding (deflate) says", "POST",
     "/plants"),
    ("brotli", b"POST /plants HTTP/1.1\r\n" + HOST + AUTH + b"Content-Encoding: br\r\nContent-Length: 2\r\n\r\nxx", 400,
     "body: cannot be read: its Content-Encoding (br) is not one this stub decodes, or the body does not decode as it "
     "says (gzip and deflate are always decoded)", "POST", "/plants"),
]


@pytest.mark.parametrize(("sent", "status", "message", "method", "path"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_odd_request_gets_a_json_error_and_is_recorded(stub, sent, status, message, method, path):
    [(got, body)] = exchange(stub, sent)
    assert (got, body["error"]) == (status, status)
    assert body["message"].startswith(message)
    call = last_call(stub)
    assert (call["method"], call["response"]["status"], call["valid"]) == (method, status, False)
    assert call["path"].startswith(path) if path.startswith("/a") else call["path"] == path
    assert call["errors"] == [body["message"]]


def test_valid_request_before_an_unparsable_one_is_answered_first(stub):
    post = b"POST /plants HTTP/1.1\r\nHost: x\r\n" + AUTH + b"Content-Length: %d\r\n\r\n%s" % (len(VALID), VALID)
    answers = exchange(stub, post + b"GARBAGE\x01 LINE\r\n\r\n")
    assert answers[0] == (200, {"name": "Fern"})
    assert answers[1][0] == 400 and answers[1][1]["message"].startswith("request: cannot be parsed as HTTP/1.1: ")
    import urllib.request

    with urllib.request.urlopen(stub.url + "/__plantstub/calls", timeout=5) as response:
        first, second = json.load(response)[-2:]
    assert (first["method"], first["path"], first["response"]["status"]) == ("POST", "/plants", 200)
    assert second["response"]["status"] == 400 and second["errors"] == [answers[1][1]["message"]]


def test_valid_gzip_body_is_still_read(stub):
    body = gzip.compress(VALID)
    head = b"POST /plants HTTP/1.1\r\nHost: x\r\n" + AUTH + b"Content-Encoding: gzip\r\nConnection: close\r\n"
    assert exchange(stub, head + b"Content-Length: %d\r\n\r\n%s" % (len(body), body)) == [(200, {"name": "Fern"})]


def test_requests_split_anywhere_are_parsed_as_sent(stub):
    """Two keep-alive requests, one with a chunked body, sent a few bytes at a time: the parser is fed
    in parts, which must not change what it reads."""
    post = b"POST /plants HTTP/1.1\r\nHost: x\r\n" + AUTH + b"Transfer-Encoding: chunked\r\n\r\n"
    post += b"%x\r\n%s\r\n0\r\n\r\n" % (len(VALID), VALID)
    closing = b"POST /plants HTTP/1.1\r\nHost: x\r\n" + AUTH + b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (
        len(VALID), VALID)
    data = post + closing
    host, port = address(stub.url)
    for step in (1, 3, 7):
        with socket.create_connection((host, int(port)), timeout=5) as conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for at in range(0, len(data), step):
                conn.sendall(data[at:at + step])
            received = b""
            while chunk := conn.recv(65536):
                received += chunk
        assert received.count(b"HTTP/1.1 200 OK") == 2, received


@pytest.mark.parametrize("route", [b"POST /__plantstub/rules", b"POST /__plantstub/sessions", b"PUT /__plantstub/state"])
def test_admin_body_that_does_not_decode_is_a_400_naming_its_encoding(stub, route):
    """gzip that does not inflate, sent to the admin API: its one body reader says so as the pipeline does,
    never an internal error."""
    head = route + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
    [(got, body)] = exchange(stub, head + b"Content-Length: 5\r\n\r\nhello")
    assert (got, body["message"]) == (400, "body: cannot be read: it does not decode as its Content-Encoding (gzip) says")
