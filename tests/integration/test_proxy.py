"""--proxy against a real service (tests/upstream_app.py in a subprocess): forwarded as sent, brought back unchanged,
its answers checked against the contract; every way it can fail is a 502 of ours, never a 500 nor a hang."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import pytest

from plantstub import Stub
from tests.helpers import HANG, JSON_AUTH, Upstream, address, call, free_port_url, raw_call, same


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with Upstream() as running:
        yield running


@pytest.fixture(scope="module")
def stub(upstream: Upstream) -> Iterator[Stub]:
    with Stub(proxy=upstream.url + "/base/", proxy_timeout=1) as running:
        yield running


@pytest.fixture(autouse=True)
def _clean(request: pytest.FixtureRequest) -> None:
    if "stub" in request.fixturenames:
        request.getfixturevalue("stub").reset()


def post(url: str, body: object, headers: dict[str, str] | None = None, path: str = "/plants"):
    return raw_call(url, "POST", path, json.dumps(body).encode(), {**JSON_AUTH, **(headers or {})})


def seen(upstream: Upstream) -> dict:
    return call(upstream.url, "GET", "/__seen")[1]  # type: ignore[return-value]


def test_a_request_nothing_answers_goes_to_the_real_service_and_comes_back_unchanged(stub, upstream):
    status, body, headers = post(stub.url, {"id": 1, "name": "Fern", "tag": "green"}, {
        "Connection": "keep-alive, X-Hop", "X-Hop": "for this connection only", "Keep-Alive": "timeout=5",
        "X-Plantstub-Scenario": "", "X-Client": "mine"}, path="/plants?dry_run=1")
    assert (status, json.loads(body)) == (200, {"name": "Fern", "tag": "green"})
    # the answer's own headers kept, its hop-by-hop ones (and those its Connection names) left out
    assert (headers["X-Upstream"], headers["Set-Cookie"]) == ("yes", "session=abc")
    assert headers["Content-Type"] == "application/json; charset=utf-8"
    assert "X-Drop-Me" not in headers and "timeout=5" not in headers.get("Keep-Alive", "")
    got = seen(upstream)
    assert (got["method"], got["path"], got["query"]) == ("POST", "/base/plants", "dry_run=1")
    assert json.loads(got["body"]) == {"id": 1, "name": "Fern", "tag": "green"}
    assert (got["headers"]["Authorization"], got["headers"]["X-Client"]) == ("Bearer t", "mine")
    assert not {"X-Hop", "Keep-Alive", "X-Plantstub-Scenario"} & set(got["headers"])
    assert "User-Agent" not in got["headers"]  # none was sent, none is added
    [recorded] = stub.calls
    assert (recorded.valid, recorded.proxied, recorded.response["status"]) == (True, True, 200)
    assert recorded.upstream == {"url": upstream.url + "/base/plants?dry_run=1", "status": 200, "valid": True,
                                 "errors": []}
    [listed] = call(stub.url, "GET", "/__plantstub/calls")[1]  # type: ignore[misc]
    assert (listed["proxied"], listed["upstream"]) == (True, recorded.upstream)


@pytest.mark.parametrize(("name", "status", "sent", "errors"), [
    ("Broken", 200, b'{"name": 42}', ["response.body.name: 42 is not of type 'string'"]),
    ("Teapot", 418, b'{"error": 418, "message": "I am a teapot"}',
     ["response.status: 418 is not declared for POST /plants (declared: 200, 400)"]),
    ("NotJson", 200, b'{"name": "oops',
     [re.compile(r"response.body: not valid JSON: .+ at line 1 column 10")]),
    ("Html", 200, b"<p>hello</p>",
     ["response.headers.Content-Type: text/html is not declared for POST /plants response 200 "
      "(declared: application/json)"]),
], ids=["schema", "undeclared-status", "invalid-json", "wrong-content-type"])
def test_an_answer_that_breaks_the_contract_is_sent_unchanged_and_recorded_as_broken(stub, upstream, name, status,
                                                                                       sent, errors):
    before = call(stub.url, "GET", "/__plantstub/health")[1]["proxy"]  # type: ignore[index]
    assert post(stub.url, {"id": 1, "name": name})[:2] == (status, sent)
    [recorded] = stub.calls
    assert recorded.valid  # the request was fine: the real service broke the contract
    assert recorded.upstream is not None and same(recorded.upstream["errors"], errors)
    assert {**recorded.upstream, "errors": None} == {"url": upstream.url + "/base/plants", "status": status,
                                                     "valid": False, "errors": None}
    after = call(stub.url, "GET", "/__plantstub/health")[1]["proxy"]  # type: ignore[index]
    assert (after["forwarded"] - before["forwarded"], after["broke_contract"] - before["broke_contract"],
            after["failed"] - before["failed"]) == (1, 1, 0)


def test_a_declared_error_answer_keeps_the_contract(stub):
    assert post(stub.url, {"id": 1, "name": "Invalid400"})[:2] == (400, b'{"error": 400, "message": "nope"}')
    assert stub.calls[0].upstream["valid"] is True  # type: ignore[index]


def test_a_compressed_answer_reaches_the_client_decoded_and_checked(stub):
    status, body, headers = post(stub.url, {"id": 1, "name": "Gzip"}, {"Accept-Encoding": "gzip"})
    assert (status, json.loads(body)["name"], "Content-Encoding" in headers) == (200, "Gzip", False)
    assert stub.calls[0].upstream["valid"] is True  # type: ignore[index]


@pytest.mark.parametrize(("name", "said"), [
    ("Slow", "{url} did not answer within 1 s (--proxy-timeout); timed out"),
    ("Drop", "{url} closed the connection without answering"),
    ("HugeHeader", "the answer of {url} could not be read as HTTP (a header over 8190 bytes, or malformed)"),
    ("Big", "the answer of {url} is larger than the limit of 1048576 bytes (--max-body)"),
], ids=["slow", "dropped", "huge-header", "over-max-body"])
def test_an_upstream_that_fails_answers_502_saying_how(stub, upstream, name, said):
    status, body, _ = post(stub.url, {"id": 1, "name": name})  # never a hang: --proxy-timeout is 1 s here
    message = "upstream: " + said.format(url=upstream.url + "/base/plants")
    assert (status, json.loads(body)) == (502, {"error": 502, "message": message})
    [recorded] = stub.calls
    assert recorded.upstream == {"url": upstream.url + "/base/plants", "status": None, "valid": False,
                                 "errors": [message]}
    assert stub.calls[0].proxied and stub.calls[0].valid


def test_a_refused_connection_answers_502_and_health_counts_it():
    url = free_port_url()
    with Stub(proxy=url) as stub:
        status, body, _ = post(stub.url, {"id": 1, "name": "Fern"})
        assert (status, json.loads(body)["message"]) == (
            502, f"upstream: {url}/plants refused the connection; is the real service running?")
        health = call(stub.url, "GET", "/__plantstub/health")[1]
        assert health["proxy"] == {"url": url, "forwarded": 1, "broke_contract": 0, "failed": 1}  # type: ignore[index]


def test_a_10_mb_answer_passes_within_max_body(upstream):
    with Stub(proxy=upstream.url, max_body=16 * 1024 * 1024) as stub:
        status, body, _ = post(stub.url, {"id": 1, "name": "Big"})
        assert (status, len(json.loads(body)["tag"])) == (200, 10 * 1024 * 1024)
        assert stub.calls[0].upstream["valid"] is True  # type: ignore[index]


def test_rules_invalid_requests_and_unknown_paths_are_answered_by_the_stub(stub):
    stub.when(body={"name": "Ruled"}).reply(200, {"name": "from a rule"})
    assert post(stub.url, {"id": 1, "name": "Ruled"})[:2] == (200, b'{"name":"from a rule"}')
    assert post(stub.url, {"id": "x", "name": "Fern"})[0] == 400  # the request is checked as always
    assert post(stub.url, {"id": 1, "name": "Fern"}, path="/nowhere")[0] == 404
    assert [(c.status, c.proxied, c.upstream) for c in stub.calls] == [(200, False, None), (400, False, None),
                                                                        (404, False, None)]


def test_the_journal_file_carries_the_verdict(upstream, tmp_path):
    with Stub(proxy=upstream.url, journal=tmp_path / "calls.jsonl", journal_flush="call") as stub:
        post(stub.url, {"id": 1, "name": "Broken"})
    [line] = (tmp_path / "calls.jsonl").read_text().splitlines()
    written = json.loads(line)
    assert (written["proxied"], written["upstream"]["valid"], written["upstream"]["errors"]) == (
        True, False, ["response.body.name: 42 is not of type 'string'"])


def test_a_remote_stub_reads_the_verdict(stub, upstream):
    post(stub.url, {"id": 1, "name": "Teapot"})
    [remote_call] = Stub.connect(stub.url).calls
    assert (remote_call.proxied, remote_call.upstream["status"]) == (True, 418)  # type: ignore[index]


def test_serve_proxy_from_the_flag_and_the_environment(serve, upstream, tmp_path):
    by_flag = serve("--port", "0", "--proxy", upstream.url, cwd=tmp_path)
    assert post(by_flag.url, {"id": 1, "name": "Fern"})[:2] == (200, b'{"name": "Fern"}')
    by_env = serve("--port", "0", cwd=tmp_path, env={"PLANTSTUB_PROXY": upstream.url + "/v2"})
    assert post(by_env.url, {"id": 1, "name": "Fern"})[0] == 200
    assert seen(upstream)["path"] == "/v2/plants"


@pytest.mark.parametrize(("value", "message"), [
    ("ftp://example.com", "plantstub: --proxy: 'ftp://example.com' is not an http:// or https:// URL with a host "
                          "(expected the real service's base URL, e.g. https://staging.example.com)"),
    ("http://example.com/api?x=1", "plantstub: --proxy: 'http://example.com/api?x=1' has a query or fragment; give "
                                   "the base URL the request paths are appended to (expected the real service's base "
                                   "URL, e.g. https://staging.example.com)"),
], ids=["not-http", "query"])
def test_a_bad_proxy_url_stops_the_start(value, message, tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "plantstub", "serve", "--port", "0", "--proxy", value],
                          capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert (done.returncode, done.stderr.strip()) == (1, message)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_proxy_url_naming_the_stub_itself_stops_the_start(host, tmp_path):
    """It started, and each request forwarded came back to be forwarded again: hundreds of calls a second until
    --proxy-timeout ended the chain, every client answered 502 meanwhile."""
    import socket
    import subprocess
    import sys

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://{host}:{port}/api"
    done = subprocess.run([sys.executable, "-m", "plantstub", "serve", "--port", str(port), "--proxy", url],
                          capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert (done.returncode, done.stderr.strip()) == (
        1, f"plantstub: --proxy: {url!r} is this stub's own address; every request forwarded would come back to it "
           "(expected the real service's base URL)")


def test_a_session_forwards_its_inner_path_without_the_stubs_own_headers(stub, upstream):
    with stub.session() as view:
        prefixed = "/" + view.url.removeprefix(stub.url) + "plants"  # /__session/ID/plants
        assert post(stub.url, {"id": 1, "name": "Fern"}, path=prefixed)[:2] == (200, b'{"name": "Fern"}')
        assert seen(upstream)["path"] == "/base/plants"
        assert post(stub.url, {"id": 2, "name": "Ivy"}, {"X-Plantstub-Session": view.session_id or ""})[0] == 200
        assert "X-Plantstub-Session" not in seen(upstream)["headers"]
        assert [(c.path, c.proxied) for c in view.calls] == [("/plants", True), ("/plants", True)]


def test_a_client_that_leaves_while_the_service_thinks_is_recorded_and_the_stub_keeps_serving(upstream, tmp_path):
    import socket

    with Stub(proxy=upstream.url, proxy_timeout=10) as stub:
        host, port = address(stub.url)
        body = json.dumps({"id": 1, "name": "Slow"}).encode()
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(b"POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n"
                         b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            deadline = time.monotonic() + HANG
            while not stub.calls and time.monotonic() < deadline:  # arrived: the client gives up now
                time.sleep(0.02)
                if call(stub.url, "GET", "/__plantstub/health")[1]["proxy"]["forwarded"]:  # type: ignore[index]
                    break
        assert post(stub.url, {"id": 2, "name": "Fern"})[0] == 200  # serving on, not waiting for the slow one
        deadline = time.monotonic() + HANG
        while len(stub.calls) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        by_name = {c.body["name"]: c for c in stub.calls}
        assert by_name["Fern"].status == 200
        assert by_name["Slow"].status == 499 and by_name["Slow"].proxied
        assert by_name["Slow"].upstream["errors"] == [  # type: ignore[index]
            f"request: the client closed the connection before {upstream.url}/plants answered (the forwarded request "
            "was cancelled); no answer went out"]


def test_a_scenario_that_lets_broken_requests_through_forwards_them(upstream, tmp_path):
    (tmp_path / "lenient.yaml").write_text("description: lets anything through\nvalidate_requests: false\nrules: []\n")
    with Stub(proxy=upstream.url, scenarios=tmp_path, scenario="lenient") as stub:
        assert post(stub.url, {"id": "x", "name": "Fern"})[:2] == (200, b'{"name": "Fern"}')
        [recorded] = stub.calls
        assert (recorded.valid, recorded.errors, recorded.proxied) == (
            False, ("body.id: 'x' is not of type 'integer'",), True)


async def test_create_app_in_your_own_server_forwards_too(aiohttp_client, upstream):
    from plantstub import create_app

    client = await aiohttp_client(create_app(proxy=upstream.url))
    answer = await client.post("/plants", json={"id": 1, "name": "Broken"}, headers={"Authorization": "Bearer t"})
    assert (answer.status, await answer.json()) == (200, {"name": 42})
    health = await (await client.get("/__plantstub/health")).json()
    assert (health["proxy"]["forwarded"], health["proxy"]["broke_contract"]) == (1, 1)
