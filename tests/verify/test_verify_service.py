"""`plantstub verify` end to end against a real Plant Store of the tests' own (tests/plant_store_app.py, a subprocess):
all rules agree with the service as it should be; each contract bug it can switch on gives exit 1 naming the rule's
file:line and the difference; writes wait for --allow-writes; the --header value never shows; JUnit and JSON read
back; --record writes a recording that passes `plantstub check`, replays, and verifies in turn, as an imported HAR
file does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from plantstub import Stub
from plantstub.cli import main
from tests.helpers import Upstream, call

TOKEN = "s3cr3t-staging-token-42"
AUTH = f"Authorization: Bearer {TOKEN}"
SPEC = ("--spec", "plant-store-full")

PLANTS = """\
description: What our client relies on from the Plant Store.
rules:
  - match: {method: GET, path: /plants, query: {limit: "2"}}
    reply:
      status: 200
      body: [{id: 1, name: Fern, tag: green}]
  - match:
      method: POST
      path: /plants
      body: {name: {$regex: "^Cact"}}
    reply:
      status: 400
      body: {error: 400, message: Cacti are sold out}
  - match: {method: POST, path: /plants, body: {id: "seven"}}
    reply:
      status: 400
      body: {error: 400, message: "body.id: an integer is required"}
  - match: {method: POST, path: /plants, body: {id: 7}}
    reply:
      status: 200
      body: {name: "{{ request.body.name }}"}
  - match: {method: DELETE, path: /plants/2}
    reply: {status: 204}
  - match: {method: POST, path: /plants, body: {name: Again}}
    replies:
      - {status: 400, body: {error: 503, message: try again}}
      - {status: 200, body: {name: Again}}
"""
F = "scenarios/plants.yaml"
AGREEING = [
    f"{F}:3 GET /plants?limit=2: stub 200, service 200: agrees",
    f"{F}:7 POST /plants: stub 400, service 400: agrees",
    f"{F}:14 POST /plants: stub 400, service 400: agrees",
    f"{F}:18 POST /plants: stub 200, service 200: agrees",
    f"{F}:22 DELETE /plants/2: stub 204, service 204: agrees",
    f"{F}:24 POST /plants: not verifiable: 2 replies in sequence: which one answers depends on the calls before",
]


@pytest.fixture(scope="module")
def store() -> Iterator[Upstream]:
    with Upstream(script="plant_store_app.py", args=(TOKEN,)) as running:
        yield running


@pytest.fixture
def service(store: Upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Upstream:
    """The store as it first was, no bugs; the test in a folder holding scenarios/plants.yaml."""
    assert call(store.url, "POST", "/__reset")[0] == 200
    monkeypatch.chdir(tmp_path)
    for name in ("PLANTSTUB_HEADER", "PLANTSTUB_AGAINST", "PLANTSTUB_SCENARIOS", "PLANTSTUB_SCENARIO"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "scenarios").mkdir()
    (tmp_path / F).write_text(PLANTS, encoding="utf-8")
    return store


def bugs(service: Upstream, *names: str) -> None:
    assert call(service.url, "PUT", "/__bugs", list(names))[0] == 200


def verify(service: Upstream, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    status = main(["verify", "--against", service.url, *SPEC, "--header", AUTH, *args])
    out, err = capsys.readouterr()
    return status, out.splitlines(), err


def test_every_rule_agrees_with_the_service_as_it_should_be(service, capsys):
    status, lines, _ = verify(service, capsys, "--allow-writes")
    assert lines[:-1] == AGREEING
    assert lines[-1].startswith(f"plantstub: 6 rules of 1 scenario against {service.url}: 5 agree, 0 differ, 0 broke "
                                "the contract, 0 not sent, 1 not verifiable (")
    assert status == 0


@pytest.mark.parametrize(("bug", "expected"), [
    ("closed", [f"{F}:18 POST /plants: stub 200, service 400: differs (status)"]),
    ("id-as-text", [f"{F}:3 GET /plants?limit=2: stub 200, service 200: differs (shape)",
                    "    body[0].id: stub a number, service '1' (a string)",
                    "    body[1].id: stub a number, service '2' (a string)"]),
    ("created", [f"{F}:18 POST /plants: stub 200, service 201: broke the contract; differs (status)",
                 "    response.status: 201 is not declared for POST /plants (declared: 200, 400)"]),
    ("nameless", [f"{F}:3 GET /plants?limit=2: stub 200, service 200: broke the contract; differs (shape)",
                  "    response.body[0]: 'name' is a required property",
                  "    response.body[1]: 'name' is a required property",
                  "    body[0].name: stub a string, service absent",
                  "    body[1].name: stub a string, service absent"]),
    ("moved", [f"{F}:3 GET /plants?limit=2: stub 200, service 302: broke the contract; differs (status)",
               "    response.status: 302 is not declared for GET /plants (declared: 200, 400)"]),
], ids=["a changed status", "a field of another type", "an undeclared status", "a body breaking the schema",
        "a redirect, not followed"])
def test_a_contract_bug_fails_the_run_naming_the_rule_and_the_difference(service, capsys, bug, expected):
    bugs(service, bug)
    status, lines, _ = verify(service, capsys, "--allow-writes")
    failing = [line for line in lines[:-1] if "agrees" not in line and "not verifiable" not in line]
    assert failing == expected
    assert status == 1


def test_writes_are_not_sent_without_allow_writes(service, capsys):
    status, lines, _ = verify(service, capsys)
    assert lines[:-1] == [
        AGREEING[0],
        *(f"{F}:{n} {what}: not sent: {what.split()[0]} changes the service's state; --allow-writes sends it"
          for n, what in ((7, "POST /plants"), (14, "POST /plants"), (18, "POST /plants"), (22, "DELETE /plants/2"))),
        AGREEING[-1],
    ]
    assert status == 0
    assert call(service.url, "GET", "/__seen")[1] == [["GET", "/plants?limit=2"]]


def test_a_service_that_drips_its_answer_gets_a_deadline(service, capsys):
    bugs(service, "drip")
    status, lines, _ = verify(service, capsys, "--request-timeout", "1", "--allow-writes")
    assert lines[:2] == [f"{F}:3 GET /plants?limit=2: stub 200, service no answer: differs (no answer)",
                         f"    {service.url}/plants?limit=2 did not answer in full within 1 s (--request-timeout)"]
    assert status == 1


def test_the_header_value_never_shows_not_even_when_the_service_echoes_it(service, capsys, tmp_path, monkeypatch):
    bugs(service, "echo")
    junit, record = tmp_path / "out" / "verify.xml", tmp_path / "recorded"
    status, lines, err = verify(service, capsys, "--allow-writes", "--compare", "body", "--junit", str(junit),
                                "--record", str(record))
    assert status == 1
    assert f"{F}:7 POST /plants: stub 400, service 400: differs (body)" in lines
    assert "    body.message: stub 'Cacti are sold out', service 'Cacti are sold out (you sent REDACTED)'" in lines
    _, json_lines, json_err = verify(service, capsys, "--allow-writes", "--compare", "body", "--json")
    written = [junit.read_text(encoding="utf-8"), *(p.read_text(encoding="utf-8") for p in record.iterdir())]
    for text in ["\n".join(lines), err, "\n".join(json_lines), json_err, *written]:
        assert TOKEN not in text
    request = json.loads("\n".join(json_lines))["rules"][1]["request"]
    assert request["headers"] == {"Authorization": "REDACTED", "Content-Type": "application/json"}


def test_a_header_given_in_the_environment_is_sent_and_the_command_line_one_warned_of(service, capsys, monkeypatch):
    monkeypatch.setenv("PLANTSTUB_HEADER", f"X-Trace: nightly\n{AUTH}")
    status = main(["verify", "--against", service.url, *SPEC, "--allow-writes"])
    out, err = capsys.readouterr()
    assert (status, err) == (0, "")
    assert out.splitlines()[:-1] == AGREEING
    _, _, err = verify(service, capsys, "--allow-writes")
    assert err == ("plantstub: a --header with credentials is visible in the process list (ps) to other users of this "
                   "machine; set PLANTSTUB_HEADER in the environment instead\n")


def test_junit_xml_reads_back_with_a_test_case_per_rule(service, capsys, tmp_path):
    bugs(service, "created")
    report = tmp_path / "verify.xml"
    status, _, _ = verify(service, capsys, "--junit", str(report), "--allow-writes")
    assert status == 1
    root = ET.parse(report).getroot()
    assert (root.tag, root.get("tests"), root.get("failures"), root.get("skipped")) == ("testsuites", "6", "1", "1")
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert [(c.get("file"), c.get("line")) for c in cases] == [(F, str(n)) for n in (3, 7, 14, 18, 22, 24)]
    failure = cases[3].find("failure")
    assert failure is not None
    assert failure.get("message") == "stub 200, service 201: broke the contract; differs (status)"
    assert failure.text == "response.status: 201 is not declared for POST /plants (declared: 200, 400)"
    skipped = cases[5].find("skipped")
    assert skipped is not None and skipped.get("message", "").startswith("not verifiable: 2 replies in sequence")


def test_json_has_each_rule_with_the_request_sent_and_both_answers(service, capsys):
    status, lines, _ = verify(service, capsys, "--json", "--allow-writes")
    report = json.loads("\n".join(lines))
    assert status == 0 and report["passed"] is True
    assert report["summary"] == {"rules": 6, "agree": 5, "differ": 0, "broke_contract": 0, "not_sent": 0,
                                 "not_verifiable": 1}
    cactus = report["rules"][1]
    assert (cactus["file"], cactus["line"], cactus["rule"], cactus["outcome"]) == (F, 7, "rules[1]", "agree")
    assert cactus["request"]["body"]["name"].startswith("Cact")
    assert cactus["service"]["body"] == {"error": 400, "message": "Cacti are sold out"}
    invalid = report["rules"][2]
    assert invalid["request"]["breaks"] == ["body.id: 'seven' is not of type 'integer'"]


def test_a_recording_passes_check_replays_and_verifies_in_turn(service, capsys, tmp_path):
    status, _, err = verify(service, capsys, "--allow-writes", "--record", str(tmp_path / "recorded"))
    assert status == 0
    recording = tmp_path / "recorded" / "recorded-001.yaml"
    assert err.splitlines()[-1] == f"plantstub: recorded 5 exchanges in 5 rules to {recording}"
    assert main(["check", *SPEC, str(recording)]) == 0
    with Stub(spec="plant-store-full", scenarios=tmp_path / "recorded", scenario="recorded-001") as stub:
        headers = {"Authorization": "Bearer anything"}
        assert call(stub.url, "GET", "/plants?limit=2", headers=headers)[1] == [
            {"name": "Fern", "tag": "green", "id": 1}, {"name": "Ivy", "tag": "climber", "id": 2}]
    capsys.readouterr()
    assert call(service.url, "POST", "/__reset")[0] == 200
    status, lines, _ = verify(service, capsys, "--allow-writes", str(recording))
    assert [line.split(": ", 1)[1] for line in lines[:-1]] == [  # the recorder's order: by method, path and query
        "stub 204, service 204: agrees", "stub 200, service 200: agrees", "stub 400, service 400: agrees",
        "stub 400, service 400: agrees", "stub 200, service 200: agrees"]
    assert lines[1].startswith(f"{recording}:9 GET /plants?limit=2: ")
    assert status == 0


def test_an_imported_har_file_verifies_and_names_the_answers_that_changed(service, capsys, tmp_path):
    har = {"log": {"version": "1.2", "entries": [
        {"request": {"method": "GET", "url": f"{service.url}/plants?limit=1"},
         "response": {"status": 200, "content": {"mimeType": "application/json",
                                                 "text": json.dumps([{"name": "Rose", "tag": "red", "id": 1}])}}},
    ]}}
    (tmp_path / "session.har").write_text(json.dumps(har), encoding="utf-8")
    assert main(["import-har", "session.har", "--out", "har.yaml", *SPEC]) == 0
    capsys.readouterr()
    status, lines, _ = verify(service, capsys, "har.yaml")
    assert lines[0] == "har.yaml:4 GET /plants?limit=1: stub 200, service 200: agrees" and status == 0
    status, lines, _ = verify(service, capsys, "--compare", "body", "har.yaml")
    assert lines[:3] == ["har.yaml:4 GET /plants?limit=1: stub 200, service 200: differs (body)",
                         "    body[0].name: stub 'Rose', service 'Fern'",
                         "    body[0].tag: stub 'red', service 'green'"]
    assert status == 1


def test_the_command_runs_as_users_run_it(service, tmp_path):
    env = {**os.environ, "PLANTSTUB_HEADER": AUTH, "PLANTSTUB_AGAINST": service.url}
    done = subprocess.run([sys.executable, "-m", "plantstub", "verify", *SPEC, "--allow-writes"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[:-1] == AGREEING
    bugs(service, "created")
    done = subprocess.run([sys.executable, "-m", "plantstub", "verify", *SPEC, "--allow-writes", "--scenario", "plants"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and TOKEN not in done.stdout + done.stderr
