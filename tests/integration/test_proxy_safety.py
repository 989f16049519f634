"""Issue 37, items 8 and 10: the real service's answer with a header no HTTP header may carry is a 502 naming it (not
an empty reply and a traceback), and the HAR export streams like every big admin answer."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator

import pytest

from plantstub import Stub
from tests.helpers import AUTH, JSON_AUTH, Upstream, call, raw_call


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with Upstream() as running:
        yield running


def raw_answer(head: bytes) -> str:
    """tests/upstream_app.py's X-Raw-Answer: a 200 with these header lines and a valid plant."""
    body = b'{"name": "Fern"}'
    return base64.b64encode(b"HTTP/1.1 200 OK\r\n" + head + b"Content-Length: %d\r\nConnection: close\r\n\r\n"
                            % len(body) + body).decode()


@pytest.mark.parametrize(("head", "named"), [
    (b"X-Ctl: a\x01b\r\nContent-Type: application/json\r\n", "X-Ctl, whose value holds a control character ('\\x01' at 1)"),
    (b"X-Ctl: a\x7fb\r\nContent-Type: application/json\r\n", "X-Ctl, whose value holds a control character ('\\x7f' at 1)"),
    (b"Content-Type: application/json\x0b\r\n", "Content-Type, whose value holds a control character ('\\x0b' at 16)"),
], ids=["x01", "x7f", "x0b-in-content-type"])
def test_a_header_with_a_control_character_is_a_502_naming_it(upstream, caplog, head, named):
    with Stub(proxy=upstream.url) as stub, caplog.at_level(logging.WARNING):
        status, body, _ = raw_call(stub.url, "POST", "/plants?api_key=k", json.dumps({"id": 1, "name": "Fern"}).encode(),
                                   {**JSON_AUTH, "X-Raw-Answer": raw_answer(head)})
        message = (f"upstream: the answer of {upstream.url}/plants?api_key=k has the header {named}, which no HTTP "
                   "header may carry; it is not sent on")
        assert (status, json.loads(body)) == (502, {"error": 502, "message": message})
        [recorded] = stub.calls
        assert (recorded.status, recorded.upstream["errors"]) == (502, [message])  # type: ignore[index]
        assert call(stub.url, "GET", "/__plantstub/health")[1]["proxy"]["failed"] == 1  # type: ignore[index]
        assert raw_call(stub.url, "POST", "/plants", json.dumps({"id": 2, "name": "Ivy"}).encode(), JSON_AUTH)[0] == 200
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []  # no traceback


def test_the_har_export_streams(upstream):
    with Stub(spec="plant-store-full", proxy=upstream.url) as stub:
        for _ in range(3):
            assert raw_call(stub.url, "GET", "/plants?bulk=100000&shape=long", None, AUTH)[0] == 200
        status, body, headers = raw_call(stub.url, "GET", "/__plantstub/calls?format=har")
    assert status == 200 and headers["Transfer-Encoding"] == "chunked" and "Content-Length" not in headers
    log = json.loads(body)["log"]
    assert (log["version"], log["creator"]["name"], len(log["entries"])) == ("1.2", "plantstub", 3)
    assert len(log["entries"][2]["response"]["content"]["text"]) > 100_000
