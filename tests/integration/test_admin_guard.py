"""The admin API against `plantstub serve`: --admin-token, and no state change from another site's page."""

from __future__ import annotations

import json
import os
import stat
import urllib.parse

import pytest

from tests.helpers import ServeProcess, post_status, raw_call

TOKEN = "s3cret-admin-token"


def call(url: str, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None):
    """(status, parsed JSON body, headers) of one request, with only what the caller sets."""
    status, data, answer_headers = raw_call(url, method, path, body, headers)
    return status, (json.loads(data) if data else None), answer_headers


@pytest.fixture
def served(tmp_path):
    journal = tmp_path / "calls.jsonl"
    stub = ServeProcess("--port", "0", "--journal", str(journal), "--admin-token", TOKEN)
    yield stub, journal
    stub.stop()


def test_the_admin_api_needs_the_token_but_health_stays_open(served):
    stub, _ = served
    assert post_status(stub.url, b'{"id": 1, "name": "Fern", "tag": "t"}') == 200
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        status, body, answer_headers = call(stub.url, "GET", "/__plantstub/calls", headers=headers)
        assert status == 401 and body["error"] == 401
        assert "Authorization:" in body["message"] and "--admin-token" in body["message"]
        assert TOKEN not in body["message"]
        assert answer_headers["WWW-Authenticate"].startswith("Bearer")
    status, body, _ = call(stub.url, "POST", "/__plantstub/reset")
    assert status == 401
    status, calls, _ = call(stub.url, "GET", "/__plantstub/calls", headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and [c["path"] for c in calls] == ["/plants"]  # the refused reset changed nothing
    status, health, _ = call(stub.url, "GET", "/__plantstub/health")
    assert status == 200 and health["status"] == "ok"
    status, _, _ = call(stub.url, "HEAD", "/__plantstub/health")
    assert status == 200


def test_the_token_comes_from_the_environment_too(tmp_path):
    stub = ServeProcess("--port", "0", env={"PLANTSTUB_ADMIN_TOKEN": TOKEN})
    try:
        assert call(stub.url, "GET", "/__plantstub/scenarios")[0] == 401
        assert call(stub.url, "GET", "/__plantstub/scenarios", headers={"Authorization": f"Bearer {TOKEN}"})[0] == 200
    finally:
        stub.stop()


def test_the_bearer_scheme_is_read_in_any_case(served):
    stub, _ = served
    for scheme in ("bearer", "BEARER", "bEaReR", "Bearer"):
        assert call(stub.url, "GET", "/__plantstub/calls", headers={"Authorization": f"{scheme} {TOKEN}"})[0] == 200
    for sent in (f"Basic {TOKEN}", f"bearer {TOKEN}x", f"bearer{TOKEN}", "bearer"):
        assert call(stub.url, "GET", "/__plantstub/calls", headers={"Authorization": sent})[0] == 401, sent


def test_a_token_on_the_command_line_is_said_to_be_visible_in_the_process_list():
    stub = ServeProcess("--port", "0", "--admin-token", TOKEN)
    stub.stop()
    assert stub.stderr.splitlines() == [
        "plantstub: --admin-token is visible in the process list (ps) to other users of this machine; set "
        "PLANTSTUB_ADMIN_TOKEN in the environment instead"]
    stub = ServeProcess("--port", "0", env={"PLANTSTUB_ADMIN_TOKEN": TOKEN})
    stub.stop()
    assert stub.stderr == ""


def test_a_token_with_spaces_is_refused_at_start_without_showing_it():
    stub_args = ["--port", "0", "--admin-token", "has a space"]
    with pytest.raises(AssertionError) as refused:
        ServeProcess(*stub_args)
    assert "--admin-token: not a usable token" in str(refused.value)
    assert "has a space" not in str(refused.value)


def test_the_journal_file_is_readable_by_its_owner_only(served):
    stub, journal = served
    assert post_status(stub.url, b'{"id": 1, "name": "Fern"}') == 200
    assert stat.S_IMODE(os.stat(journal).st_mode) == 0o600


@pytest.fixture
def open_stub(tmp_path):
    stub = ServeProcess("--port", "0")
    yield stub
    stub.stop()


def recorded(url: str) -> int:
    return len(call(url, "GET", "/__plantstub/calls")[1])


@pytest.mark.parametrize(("method", "path", "body", "headers", "status", "words"), [
    # what a page on another site can send without a CORS preflight: text/plain or a form, with its Origin
    ("POST", "/__plantstub/reset", b"x", {"Origin": "http://evil.example", "Content-Type": "text/plain"},
     403, "Origin: 'http://evil.example' is another site"),
    ("POST", "/__plantstub/reset", None, {"Origin": "null"}, 403, "Origin: 'null' is another site"),
    ("DELETE", "/__plantstub/calls", None, {"Sec-Fetch-Site": "cross-site"}, 403, "Sec-Fetch-Site: 'cross-site'"),
    ("PUT", "/__plantstub/scenario", b'{"name": "store-closed"}', {"Content-Type": "text/plain"},
     415, "Content-Type: 'text/plain' is not JSON"),
    ("PUT", "/__plantstub/scenario", b'{"name": "store-closed"}', {"Content-Type": "application/x-www-form-urlencoded"},
     415, "is not JSON"),
    ("PUT", "/__plantstub/scenario", b'{"name": "store-closed"}', {}, 415, "Content-Type: missing for a body"),
])
def test_a_cross_site_state_change_is_refused_and_changes_nothing(open_stub, method, path, body, headers, status, words):
    url = open_stub.url
    assert post_status(url, b'{"id": 1, "name": "Fern"}') == 200
    answer, error, _ = call(url, method, path, body, headers)
    assert answer == status and error["error"] == status and words in error["message"]
    assert recorded(url) == 1
    assert call(url, "GET", "/__plantstub/scenarios")[1]["active"] is None


def test_same_site_tools_and_scripts_still_change_state(open_stub):
    url = open_stub.url
    host = urllib.parse.urlsplit(url).netloc
    answer, body, _ = call(url, "PUT", "/__plantstub/scenario", b'{"name": "store-closed"}',
                           {"Content-Type": "application/json", "Origin": f"http://{host}"})
    assert (answer, body) == (200, {"active": "store-closed"})
    assert post_status(url, b'{"id": 1, "name": "Fern"}') != 200  # the store is closed now
    # curl -X POST .../reset sends no body, and aiohttp's client labels an empty one octet-stream
    assert call(url, "POST", "/__plantstub/reset")[0] == 200
    assert call(url, "POST", "/__plantstub/reset", b"", {"Content-Type": "application/octet-stream"})[0] == 200
    assert recorded(url) == 0


def test_on_loopback_the_admin_api_answers_only_to_loopback_names(open_stub):
    url = open_stub.url
    port = urllib.parse.urlsplit(url).port
    assert post_status(url, b'{"id": 1, "name": "Fern"}') == 200
    # a page of evil.example whose name now points at 127.0.0.1 (DNS rebinding) reads as "same origin"
    status, error, _ = call(url, "GET", "/__plantstub/calls", headers={"Host": f"evil.example:{port}"})
    assert status == 403 and error["message"].startswith(f"Host: 'evil.example:{port}' is not a loopback name")
    status, _, _ = call(url, "POST", "/__plantstub/reset",
                        headers={"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"})
    assert status == 403 and recorded(url) == 1
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"app.localhost:{port}", "127.0.0.2"):
        assert call(url, "GET", "/__plantstub/calls", headers={"Host": host})[0] == 200, host
    assert call(url, "GET", "/__plantstub/health", headers={"Host": "evil.example"})[0] == 200


def test_bound_to_all_interfaces_any_host_name_is_served():
    from plantstub.server.admin_guard import AdminGuard

    asked = ("GET", "/__plantstub/calls", {"Host": "plantstub:4010"})
    assert AdminGuard(None, "0.0.0.0").refusal(*asked) is None  # a compose service name
    assert AdminGuard(None, "127.0.0.1").refusal(*asked)[0] == 403
    assert AdminGuard(None, "::1").refusal(*asked)[0] == 403
