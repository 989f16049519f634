"""A request's target read once (server/target.py): dot segments removed before routing and forwarding (RFC 3986
5.2.4, their dots escaped too), one hidden behind an escaped slash refused, what is not a path refused."""

from __future__ import annotations

import http.client
import json
import socket

import pytest

from plantstub import Stub
from plantstub.contract.outgoing import Outgoing
from plantstub.server.target import Target, read_target, remove_dot_segments
from tests.helpers import Upstream, address, post_status


@pytest.mark.parametrize(("sent", "path", "raw_path", "query"), [
    ("/plants", "/plants", "/plants", {}),
    ("/x/../plants", "/plants", "/plants", {}),
    ("/../../plants", "/plants", "/plants", {}),
    ("/a/%2e%2E/plants", "/plants", "/plants", {}),
    ("/a/./b/.", "/a/b/", "/a/b/", {}),
    ("/a/b/..", "/a/", "/a/", {}),
    ("/.well-known/x", "/.well-known/x", "/.well-known/x", {}),
    ("/files/a..b.txt", "/files/a..b.txt", "/files/a..b.txt", {}),
    ("/p%20q?x=1&x=2&y", "/p q", "/p%20q", {"x": ["1", "2"], "y": [""]}),
    ("/a/../p%20q?x=1", "/p q", "/p%20q", {"x": ["1"]}),
    ("http://example.test/plants?limit=1", "/plants", "/plants", {"limit": ["1"]}),
], ids=lambda v: v if isinstance(v, str) else None)
def test_a_target_is_read_with_its_dot_segments_removed(sent, path, raw_path, query):
    read = read_target(sent)
    assert isinstance(read, Target)
    assert (read.path, read.raw_path, read.query) == (path, raw_path, query)


@pytest.mark.parametrize(("sent", "message"), [
    ("/a/..%2F..%2Fsecret", "path: '/a/..%2F..%2Fsecret' hides a dot segment behind an escaped slash (%2F); send the "
                            "path without it"),
    ("/a/%2E%2E%2fsecret", "path: '/a/%2E%2E%2fsecret' hides a dot segment behind an escaped slash (%2F); send the "
                           "path without it"),
    ("host:443", "request: the target 'host:443' is not a path such as /plants (plantstub is not a proxy)"),
    ("*", "request: the target '*' is not a path such as /plants (plantstub is not a proxy)"),
    ("/plants/\udcff?q=\udcfe", "request: the target '/plants/\\xff?q=\\xfe' is not UTF-8; percent-encode its bytes (%ff)"),
])
def test_a_target_that_is_no_path_or_hides_a_dot_segment_is_refused(sent, message):
    refused = read_target(sent)
    assert isinstance(refused, Outgoing) and refused.status == 400 and refused.body["message"] == message


def test_dot_segments_never_climb_above_the_root():
    assert remove_dot_segments("/../../../etc/passwd") == "/etc/passwd"
    assert remove_dot_segments("/a/b/../../../c") == "/c"


def _get(url: str, target: str) -> tuple[int, dict]:
    host, port = address(url)
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:  # http.client sends the target as given: no client-side normalising
        connection.request("GET", target, headers={"Authorization": "Bearer t"})
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


def test_a_proxied_request_is_forwarded_without_its_dot_segments_and_one_hidden_never_leaves():
    with Upstream() as upstream, Stub(spec="plant-store-full", proxy=upstream.url + "/api/v1") as stub:
        for target in ("/../../plants", "/x/%2E%2E/plants", "/plants/../plants"):
            status, _ = _get(stub.url, target)
            assert status == 200, target
            assert _get(upstream.url, "/__seen")[1]["path"] == "/api/v1/plants"
        status, body = _get(stub.url, "/..%2F..%2Fplants")
        assert status == 400 and body["message"].startswith("path: '/..%2F..%2Fplants' hides a dot segment")
        assert _get(upstream.url, "/__seen")[1]["path"] == "/api/v1/plants"  # nothing more reached the service
        assert [call.response["status"] for call in stub.calls] == [200, 200, 200, 400]


def test_a_target_of_bytes_that_are_not_utf8_is_a_400_recorded_readably_under_either_parser():
    """The C parser refuses such a request line itself; the pure-Python one passes its bytes on as lone surrogates,
    which the stub refuses (it answered 500 when recording the call)."""
    with Stub() as stub:
        host, port = address(stub.url)
        for target in (b"/plants/\xff\xfe", b"/plants?tag=\xff"):
            with socket.create_connection((host, int(port)), timeout=10) as conn:
                conn.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                answer = b""
                while chunk := conn.recv(65536):
                    answer += chunk
            head, _, body = answer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 400 "), answer
            refusal = json.loads(body)
            assert refusal["error"] == 400 and refusal["message"].startswith("request: "), refusal
        assert [(call.path, call.status) for call in stub.calls] == [("/plants/\ufffd\ufffd", 400),
                                                                      ("/plants?tag=\ufffd", 400)]
        assert post_status(stub.url, b'{"id": 1, "name": "Fern"}') == 200
