"""Who answered each call (`answered_by`), for every kind of answerer: kept in the call's record as the pipeline
decided it, and shown alike by `GET /__plantstub/calls`, the `--journal` file, HAR export (`_plantstub`) and the
Python API (in process and over the admin API); with the one verdict (`Call.verdict`) each call gets."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from plantstub import Stub
from plantstub.recording.answered import KINDS
from tests.helpers import AUTH, JSON_AUTH, Upstream, call, free_port_url, raw_call, write

SCENARIO = """\
rules:
  - match: {body: {name: Closed}}
    reply: {status: 400, body: {error: 400, message: closed}}
  - match: {body: {name: Twice}}
    replies:
      - {status: 200, body: {name: Twice}}
      - {status: 200, body: {name: Again}}
  - match: {body: {name: Reset}}
    reply: {status: 200, fault: connection_reset}
"""
FERN = {"id": 1, "name": "Fern"}


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with Upstream() as running:
        yield running


def post(stub: Stub, body: Any, headers: dict[str, str] | None = None, path: str = "/plants") -> int:
    return raw_call(stub.url, "POST", path, json.dumps(body).encode(), {**JSON_AUTH, **(headers or {})})[0]


def send_raw(stub: Stub, data: bytes, read: bool = True) -> bytes:
    host, port = stub.url.removeprefix("http://").rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as conn:
        conn.sendall(data)
        received = b""
        while read and (chunk := conn.recv(65536)):
            received += chunk
        return received


class Setting:
    """What a case works with: `start(**options)` a stub (its journal file and scenario folder in `folder`)."""

    def __init__(self, folder: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
        self.folder = folder
        self.request = request
        self.monkeypatch = monkeypatch
        self.stub: Stub | None = None
        self.scenario = write(folder, "closed.yaml", SCENARIO)

    def start(self, **options: Any) -> Stub:
        self.stub = Stub(scenarios=self.folder, journal=self.folder / "calls.jsonl", journal_flush="call", **options)
        return self.stub.start()

    def upstream(self) -> str:
        return self.request.getfixturevalue("upstream").url

    def at(self, line: int) -> str:
        return f"{self.scenario}:{line}"


Case = Callable[[Setting], tuple[dict[str, Any], str]]  # acts; gives the expected answered_by and verdict
CASES: dict[str, Case] = {}


def case(function: Case) -> Case:
    CASES[function.__name__] = function
    return function


@case
def default(s: Setting) -> tuple[dict[str, Any], str]:
    assert post(s.start(), FERN) == 200
    return {"kind": "default"}, "ok"


@case
def check_contract(s: Setting) -> tuple[dict[str, Any], str]:
    assert post(s.start(), {"id": "x", "name": "Fern"}) == 400
    return {"kind": "check"}, "invalid"


@case
def check_route(s: Setting) -> tuple[dict[str, Any], str]:
    assert raw_call(s.start().url, "GET", "/nowhere", None, AUTH)[0] == 404
    return {"kind": "check"}, "invalid"


@case
def check_too_large(s: Setting) -> tuple[dict[str, Any], str]:
    assert post(s.start(max_body=20), {"id": 1, "name": "F" * 100}) == 413
    return {"kind": "check"}, "invalid"


@case
def check_unparsable(s: Setting) -> tuple[dict[str, Any], str]:
    assert b'{"error":400,' in send_raw(s.start(), b"POST /plants HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
    return {"kind": "check"}, "invalid"


@case
def prefer(s: Setting) -> tuple[dict[str, Any], str]:
    assert post(s.start(), FERN, {"Prefer": "code=400"}) == 400
    return {"kind": "prefer"}, "ok"


@case
def prefer_refused(s: Setting) -> tuple[dict[str, Any], str]:  # a Prefer that cannot be met answers its refusal
    assert post(s.start(), FERN, {"Prefer": "code=418"}) == 400
    return {"kind": "prefer"}, "invalid"


@case
def rule_from_code(s: Setting) -> tuple[dict[str, Any], str]:
    stub = s.start()
    handle = stub.when(body={"name": "Ivy"}).reply(200, {"name": "Ivy"})
    assert post(stub, {"id": 1, "name": "Ivy"}) == 200
    assert handle.source.rpartition(":")[0].endswith("test_answered_by.py")  # this file, the line of when()
    return {"kind": "rule", "id": "r1", "rule": "r1", "at": handle.source}, "ok"


@case
def scenario_rule(s: Setting) -> tuple[dict[str, Any], str]:
    assert post(s.start(), {"id": 1, "name": "Closed"}, {"X-Plantstub-Scenario": "closed"}) == 400
    return {"kind": "scenario", "scenario": "closed", "rule": "rules[0]", "at": s.at(3)}, "ok"


@case
def scenario_second_reply(s: Setting) -> tuple[dict[str, Any], str]:
    stub = s.start(scenario="closed")
    assert post(stub, {"id": 1, "name": "Twice"}) == 200
    assert post(stub, {"id": 1, "name": "Twice"}) == 200
    return {"kind": "scenario", "scenario": "closed", "rule": "rules[1].replies[1]", "at": s.at(7)}, "ok"


@case
def scenario_fault(s: Setting) -> tuple[dict[str, Any], str]:
    stub = s.start(scenario="closed")
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.post(stub.url + "/plants", json={"id": 1, "name": "Reset"}, headers=AUTH, timeout=5)
    stub.wait_for_calls(1, timeout=5)
    return {"kind": "scenario", "scenario": "closed", "rule": "rules[2]", "at": s.at(9),
            "fault": "connection_reset"}, "ok"


@case
def store(s: Setting) -> tuple[dict[str, Any], str]:
    assert post(s.start(stateful=True), FERN) == 200
    return {"kind": "store"}, "ok"


@case
def proxy_kept_the_contract(s: Setting) -> tuple[dict[str, Any], str]:
    url = s.upstream()
    assert post(s.start(proxy=url), FERN) == 200
    return {"kind": "proxy", "url": url + "/plants", "status": 200, "valid": True, "errors": []}, "ok"


@case
def proxy_broke_the_contract(s: Setting) -> tuple[dict[str, Any], str]:
    url = s.upstream()
    assert post(s.start(proxy=url), {"id": 1, "name": "Broken"}) == 200
    return {"kind": "proxy", "url": url + "/plants", "status": 200, "valid": False,
            "errors": ["response.body.name: 42 is not of type 'string'"]}, "upstream"


@case
def proxy_unreachable(s: Setting) -> tuple[dict[str, Any], str]:  # a 502 of ours: nobody broke the contract
    url = free_port_url()
    assert post(s.start(proxy=url), FERN) == 502
    return {"kind": "proxy", "url": url + "/plants", "status": None, "valid": False,
            "errors": [f"upstream: {url}/plants refused the connection; is the real service running?"]}, "ok"


@case
def client_left_the_real_service(s: Setting) -> tuple[dict[str, Any], str]:  # it was still answering (in 5 s)
    stub = s.start(proxy=s.upstream(), proxy_timeout=10)
    with pytest.raises(requests.exceptions.Timeout):
        requests.post(stub.url + "/plants", json={"id": 1, "name": "Slow"}, headers=AUTH, timeout=0.3)
    stub.wait_for_calls(1, timeout=5, status=499)
    return {"kind": "client_left"}, "ok"


@case
def crash(s: Setting) -> tuple[dict[str, Any], str]:
    stub = s.start()

    def broken(*args: Any) -> Any:
        raise RuntimeError("boom")

    s.monkeypatch.setattr(next(iter(stub._live().runtime.served.values())), "default", broken)
    assert post(stub, FERN) == 500
    return {"kind": "crash"}, "stub"


@case
def client_left_a_delay(s: Setting) -> tuple[dict[str, Any], str]:
    stub = s.start()
    stub.when(path="/plants").reply(200, {"name": "Slow"}, delay_ms=5000)
    with pytest.raises(requests.exceptions.Timeout):
        requests.post(stub.url + "/plants", json=FERN, headers=AUTH, timeout=0.3)
    stub.wait_for_calls(1, timeout=5, status=499)
    return {"kind": "client_left"}, "ok"  # the request was fine; it kept its verdict


@case
def client_left_mid_body(s: Setting) -> tuple[dict[str, Any], str]:
    stub = s.start()
    send_raw(stub, b"POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nContent-Type: application/json"
                   b"\r\nContent-Length: 100\r\n\r\n{\"id\":", read=False)
    stub.wait_for_calls(1, timeout=5, status=499)
    return {"kind": "client_left"}, "invalid"


PROXIED = {"proxy_kept_the_contract", "proxy_broke_the_contract", "client_left_the_real_service"}  # the real service is a process: tests/upstream_app.py


def test_every_kind_has_a_case() -> None:
    kinds = {"check_contract": "check", "check_route": "check", "check_too_large": "check",
             "check_unparsable": "check", "prefer_refused": "prefer", "rule_from_code": "rule",
             "scenario_rule": "scenario", "scenario_second_reply": "scenario", "scenario_fault": "scenario",
             "proxy_kept_the_contract": "proxy", "proxy_broke_the_contract": "proxy", "proxy_unreachable": "proxy",
             "client_left_a_delay": "client_left", "client_left_mid_body": "client_left",
             "client_left_the_real_service": "client_left"}
    assert {kinds.get(name, name) for name in CASES} == set(KINDS)


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name in PROXIED else name
                                  for name in CASES])
def test_answered_by_is_kept_and_shown_alike_by_every_view(name: str, tmp_path: Path, request: pytest.FixtureRequest,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    setting = Setting(tmp_path, request, monkeypatch)
    try:
        expected, verdict = CASES[name](setting)
        stub = setting.stub
        assert stub is not None
        deadline = time.monotonic() + 5  # a call is recorded by the time its answer is out; a fault's right after
        while not stub.calls and time.monotonic() < deadline:
            time.sleep(0.02)
        listed = call(stub.url, "GET", "/__plantstub/calls")[1]
        har = call(stub.url, "GET", "/__plantstub/calls?format=har")[1]
        remote = Stub.connect(stub.url).calls
        kept = stub.calls
    finally:
        if setting.stub is not None:
            setting.stub.stop()
    journal = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert listed[-1]["answered_by"] == expected  # type: ignore[index]  # GET calls
    assert journal[-1]["answered_by"] == expected  # the journal file
    assert har["log"]["entries"][-1]["_plantstub"]["answered_by"] == expected  # type: ignore[index]  # HAR
    assert kept[-1].answered_by == expected and remote[-1].answered_by == expected  # in process; over the admin API
    assert kept[-1].verdict == remote[-1].verdict == verdict
