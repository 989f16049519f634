"""--max-sessions as capacity the admin API protects, against `plantstub serve` and raw HTTP: sessions named by plain
requests are implicit and the first evicted; a preflight or a refused request opens nothing (issue 23, D15)."""

from __future__ import annotations

import json

import pytest

from plantstub import PlantstubError, Stub
from tests.helpers import JSON_AUTH, raw_call

TOKEN = "s3cret-admin-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
FOREIGN = {"Origin": "http://evil.example"}
FERN = b'{"id": 1, "name": "Fern"}'
PREFLIGHT = {**FOREIGN, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}


def ask(url: str, method: str, path: str, headers: dict[str, str] | None = None, body: bytes | None = None):
    """(status, parsed JSON answer or None) of one raw request."""
    status, data, _ = raw_call(url, method, path, body, headers)
    return status, (json.loads(data) if data else None)


def listing(url: str, headers: dict[str, str] | None = None) -> dict:
    status, body = ask(url, "GET", "/__plantstub/sessions", headers)
    assert status == 200, body
    return body


def kinds(url: str, headers: dict[str, str] | None = None) -> dict[str, str]:
    """Each live session's id -> how it was opened."""
    return {s["id"]: s["opened"] for s in listing(url, headers)["sessions"]}


def fill(url: str, ids: range, headers: dict[str, str] | None = None) -> list[int]:
    """A plain POST /plants in each session x{i} (an attacker's traffic); the statuses."""
    return [ask(url, "POST", f"/__session/x{i}/plants", {**JSON_AUTH, **(headers or {})}, FERN)[0] for i in ids]


@pytest.mark.parametrize("cors", [False, True], ids=["plain", "cors"])
def test_preflights_open_no_session_and_foreign_gets_only_implicit_ones(serve, tmp_path, cors):
    stub = serve("--port", "0", "--max-sessions", "10", *(["--cors"] if cors else []), cwd=tmp_path)
    for i in range(30):
        status, _ = ask(stub.url, "OPTIONS", f"/__session/x{i}/plants", PREFLIGHT)
        assert status == (204 if cors else 404)
    assert listing(stub.url)["count"] == 0  # preflights: none at all
    assert fill(stub.url, range(30), FOREIGN) == [200] * 30  # never 503: the oldest implicit one makes room
    listed = listing(stub.url)
    assert listed["count"] == 10 and listed["evicted"] == 20
    assert set(kinds(stub.url).values()) == {"implicit"}
    assert [s["id"] for s in listed["sessions"]] == [f"x{i}" for i in range(29, 19, -1)]
    # a preflight to a live session reaches it as before
    status, _ = ask(stub.url, "OPTIONS", "/__session/x29/plants", PREFLIGHT)
    assert status == (204 if cors else 405)


def test_implicit_sessions_kept_busy_do_not_keep_an_opened_one_out(serve, tmp_path):
    stub = serve("--port", "0", "--max-sessions", "10", cwd=tmp_path)
    assert fill(stub.url, range(10)) == [200] * 10
    assert fill(stub.url, range(1, 10)) == [200] * 9  # touched: x0 is the least recently used
    status, opened = ask(stub.url, "POST", "/__plantstub/sessions")
    assert status == 201
    assert "x0" not in kinds(stub.url) and kinds(stub.url)[opened["id"]] == "admin"
    fill(stub.url, range(2, 10))  # x1 least recently used now
    with Stub.connect(stub.url).session() as session:  # what the fixture does with --plantstub-url
        assert kinds(stub.url)[session.session_id] == "admin"
        assert "x1" not in kinds(stub.url)
    listed = listing(stub.url)
    assert listed["evicted"] == 2 and listed["count"] == 9


def test_sessions_opened_by_post_are_never_evicted_by_implicit_traffic(serve, tmp_path):
    stub = serve("--port", "0", "--max-sessions", "10", cwd=tmp_path)
    opened = [ask(stub.url, "POST", "/__plantstub/sessions", body=json.dumps({"id": f"ci-{i}"}).encode(),
                  headers={"Content-Type": "application/json"})[0] for i in range(3)]
    assert opened == [201] * 3
    assert fill(stub.url, range(30)) == [200] * 30
    seen = kinds(stub.url)
    assert [sid for sid, kind in seen.items() if kind == "admin"] == ["ci-2", "ci-1", "ci-0"]
    assert len(seen) == 10 and listing(stub.url)["evicted"] == 23
    # an implicit session named by a plain request is promoted by POST (its id is the caller's now)
    assert ask(stub.url, "POST", "/__plantstub/sessions", body=b'{"id": "x29"}',
               headers={"Content-Type": "application/json"})[0] == 201
    assert kinds(stub.url)["x29"] == "admin"
    # every live session opened by the admin API: only then does a new one get 503
    opened = [ask(stub.url, "POST", "/__plantstub/sessions", body=json.dumps({"id": f"ci-{i}"}).encode(),
                  headers={"Content-Type": "application/json"})[0] for i in range(3, 10)]
    assert opened == [201] * 6 + [503]  # six evict the six implicit ones left; the seventh finds none
    assert set(kinds(stub.url).values()) == {"admin"}
    status, body = ask(stub.url, "POST", "/__session/late/plants", JSON_AUTH, FERN)
    assert status == 503 and body["message"].startswith("session 'late': this stub already serves 10 sessions")
    with pytest.raises(PlantstubError, match="10 sessions"):
        Stub.connect(stub.url).session()
    assert listing(stub.url)["evicted"] == 29


def test_with_an_admin_token_the_same_and_the_token_opens(serve, tmp_path):
    stub = serve("--port", "0", "--max-sessions", "10", "--admin-token", TOKEN, cwd=tmp_path)
    assert ask(stub.url, "POST", "/__plantstub/sessions")[0] == 401  # refused: opens nothing
    assert ask(stub.url, "GET", "/__session/y/__plantstub/calls")[0] == 401
    assert listing(stub.url, BEARER)["count"] == 0
    status, opened = ask(stub.url, "POST", "/__plantstub/sessions", BEARER)
    assert status == 201
    assert fill(stub.url, range(30), FOREIGN) == [200] * 30
    seen = kinds(stub.url, BEARER)
    assert seen[opened["id"]] == "admin" and len(seen) == 10
    # the attacker keeps all nine implicit ones busy; the fixture still gets in
    assert fill(stub.url, range(21, 30)) == [200] * 9
    with Stub.connect(stub.url, admin_token=TOKEN).session() as session:
        assert kinds(stub.url, BEARER)[session.session_id] == "admin"
    # a plain request that carries the token opens its session as the admin API does (any replica)
    json_bearer = {**JSON_AUTH, **BEARER}
    assert ask(stub.url, "POST", "/plants", {**json_bearer, "X-Plantstub-Session": "replica-7"}, FERN)[0] == 200
    assert ask(stub.url, "POST", "/__session/x29/plants", {**json_bearer, "Authorization": f"bearer {TOKEN}"},
               FERN)[0] == 200
    seen = kinds(stub.url, BEARER)
    assert seen["replica-7"] == "admin" and seen["x29"] == "admin"  # x29 promoted
    health = ask(stub.url, "GET", "/__plantstub/health", BEARER)[1]
    assert health["sessions"] == 10
    assert health["session_counts"] == {"admin": 3, "implicit": 7, "evicted": 22}


@pytest.mark.parametrize(("method", "path", "headers", "body", "status"), [
    ("GET", "/__session/s/__plantstub/calls", {"Host": "evil.example"}, None, 403),
    ("POST", "/__session/s/__plantstub/reset", FOREIGN, None, 403),
    ("PUT", "/__session/s/__plantstub/scenario", {"Content-Type": "text/plain"}, b'{"name": "flaky"}', 415),
    ("POST", "/__plantstub/reset", {"X-Plantstub-Session": "s", "Sec-Fetch-Site": "cross-site"}, None, 403),
    ("PUT", "/__session/s/__plantstub/state", {"Content-Type": "application/json"}, b"[" * 200, 413),
    ("GET", "/__session/s/__plantstub/nope", {}, None, 404),
    ("DELETE", "/__session/s/__plantstub/health", {}, None, 405),
    ("GET", "/__session/s/__plantstub/sessions", {}, None, 404),
    ("OPTIONS", "/__session/s/__plantstub/calls", PREFLIGHT, None, 403),
    ("OPTIONS", "/__session/s/plants", {"Access-Control-Request-Method": "POST"}, None, 404),
], ids=["foreign-host", "cross-site-post", "not-json", "header-named", "too-large", "no-route", "no-method",
        "default-only-route", "admin-preflight", "preflight-without-origin"])
def test_a_refused_admin_call_in_a_session_opens_nothing(serve, tmp_path, method, path, headers, body, status):
    stub = serve("--port", "0", "--max-sessions", "10", "--max-body", "100", cwd=tmp_path)
    answer, error = ask(stub.url, method, path, headers, body)
    assert (answer, error["error"]) == (status, status)
    assert listing(stub.url)["count"] == 0


def test_a_refused_admin_call_with_a_bad_token_opens_nothing(serve, tmp_path):
    stub = serve("--port", "0", "--max-sessions", "10", "--admin-token", TOKEN, cwd=tmp_path)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}, {"Authorization": "Basic x"}):
        assert ask(stub.url, "GET", "/__session/s/__plantstub/calls", headers)[0] == 401
    assert listing(stub.url, BEARER)["count"] == 0


@pytest.mark.parametrize("target", ["host:443", "*"], ids=["connect", "options-star"])
def test_a_target_that_is_not_a_path_opens_nothing(serve, tmp_path, target):
    import socket
    import urllib.parse

    stub = serve("--port", "0", cwd=tmp_path)
    method = "CONNECT" if target == "host:443" else "OPTIONS"
    with socket.create_connection(("127.0.0.1", urllib.parse.urlsplit(stub.url).port), timeout=5) as sock:
        sock.sendall(f"{method} {target} HTTP/1.1\r\nHost: localhost\r\nX-Plantstub-Session: s\r\n"
                     "Content-Length: 0\r\nConnection: close\r\n\r\n".encode())
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert answer.endswith(f"the target {target!r} is not a path such as /plants (plantstub is not a proxy)\"}}".encode())
    assert listing(stub.url)["count"] == 0
