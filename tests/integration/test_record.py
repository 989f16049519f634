"""--record DIR, `GET calls?format=har` and `plantstub import-har`: real exchanges (tests/upstream_app.py) turned into
scenario files that pass `plantstub check` and answer with the real service gone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from plantstub import Stub
from plantstub.cli import main
from plantstub.errors import ConfigError
from tests.helpers import Upstream, call


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with Upstream() as running:
        yield running


TRAFFIC = [
    {"id": 1, "name": "Fern", "password": "hunter2"},
    {"id": 2, "name": "Ivy", "tag": "climber"},
    {"id": 1, "name": "Fern", "password": "other"},
    {"id": 3, "name": "Broken"},
    {"id": 4, "name": "Invalid400"},
]

EXPECTED = """\
# Recorded by plantstub from {url}: 4 exchanges in 3 rules.
# Left out (1):
#   POST /plants -> 200: broke the contract: response.body.name: 42 is not of type 'string'
description: Recorded from {url}.
rules:
- match:
    method: POST
    path: /plants
    body:
      id: 2
      name: Ivy
      tag: climber
  reply:
    status: 200
    headers:
      Content-Type: application/json; charset=utf-8
    body:
      name: Ivy
      tag: climber
- match:
    method: POST
    path: /plants
    body:
      id: 1
      name: Fern
  replies:
  - status: 200
    headers:
      Content-Type: application/json; charset=utf-8
    body:
      name: Fern
  - status: 200
    headers:
      Content-Type: application/json; charset=utf-8
    body:
      name: Fern
- match:
    method: POST
    path: /plants
    body:
      id: 4
      name: Invalid400
  reply:
    status: 400
    headers:
      Content-Type: application/json; charset=utf-8
    body:
      error: 400
      message: nope
"""


def record(upstream: Upstream, folder: Path, traffic: list[dict], **options: object) -> None:
    with Stub(proxy=upstream.url, record=folder, **options) as stub:
        for body in traffic:
            call(stub.url, "POST", "/plants", body)


def test_recorded_traffic_becomes_a_scenario_that_replays_with_no_upstream(upstream, tmp_path, capsys):
    record(upstream, tmp_path, TRAFFIC)
    assert [p.name for p in tmp_path.iterdir()] == ["recorded-001.yaml"]
    assert (tmp_path / "recorded-001.yaml").read_text() == EXPECTED.format(url=upstream.url)
    assert capsys.readouterr().err == (f"plantstub: recorded 4 exchanges in 3 rules to {tmp_path}/recorded-001.yaml; "
                                       "1 left out (listed in its leading comment)\n")
    assert main(["check", str(tmp_path)]) == 0
    with Stub(scenarios=tmp_path, scenario="recorded-001") as replay:  # no --proxy: the real service is not asked
        assert call(replay.url, "POST", "/plants", {"id": 1, "name": "Fern", "password": "any"}) == (
            200, {"name": "Fern"})
        assert call(replay.url, "POST", "/plants", {"id": 4, "name": "Invalid400"}) == (
            400, {"error": 400, "message": "nope"})
        assert [c.rule for c in replay.calls] == ["rules[1].replies[0]", "rules[2]"]


def test_the_same_traffic_gives_the_same_file(upstream, tmp_path):
    record(upstream, tmp_path / "a", TRAFFIC)
    record(upstream, tmp_path / "b", TRAFFIC)
    assert (tmp_path / "a" / "recorded-001.yaml").read_bytes() == (tmp_path / "b" / "recorded-001.yaml").read_bytes()


def test_save_writes_the_next_file_and_says_what_it_wrote(upstream, tmp_path):
    with Stub(proxy=upstream.url, record=tmp_path) as stub:
        call(stub.url, "POST", "/plants", {"id": 1, "name": "Fern"})
        call(stub.url, "POST", "/plants", {"id": 2, "name": "Teapot"})
        assert call(stub.url, "POST", "/__plantstub/record/save") == (200, {
            "file": str(tmp_path / "recorded-001.yaml"), "rules": 1,
            "left_out": ["POST /plants -> 418: broke the contract: response.status: 418 is not declared for POST "
                         "/plants (declared: 200, 400)"]})
        assert call(stub.url, "POST", "/__plantstub/record/save") == (200, {"file": None, "rules": 0, "left_out": []})
        call(stub.url, "POST", "/plants", {"id": 3, "name": "Rose"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["recorded-001.yaml", "recorded-002.yaml"]  # at stop


def test_secrets_are_redacted_unless_kept(upstream, tmp_path):
    traffic = [{"id": 1, "name": "Secret", "password": "hunter2"}]
    record(upstream, tmp_path / "redacted", traffic)
    record(upstream, tmp_path / "kept", traffic, record_secrets="keep")
    redacted = (tmp_path / "redacted" / "recorded-001.yaml").read_text()
    kept = (tmp_path / "kept" / "recorded-001.yaml").read_text()
    assert "hunter2" not in redacted and "abc123" not in redacted and "k-1" not in redacted
    assert "access_token: REDACTED" in redacted and "apiKey: REDACTED" in redacted
    assert "password: hunter2" in kept and "access_token: abc123" in kept and "apiKey: k-1" in kept
    assert "s3cr3t" not in redacted + kept  # only Content-Type of the answer's headers is recorded
    assert main(["check", str(tmp_path / "redacted"), str(tmp_path / "kept")]) == 0


def test_an_answer_with_braces_is_left_out_rather_than_read_as_a_placeholder(upstream, tmp_path):
    record(upstream, tmp_path, [{"id": 1, "name": "Braces"}, {"id": 2, "name": "Fern"}])
    text = (tmp_path / "recorded-001.yaml").read_text()
    assert ("#   POST /plants -> 200: its body holds '{{', which a scenario reads as a placeholder" in text
            and "name: Fern" in text)


def test_record_needs_proxy_and_save_needs_record(upstream):
    with pytest.raises(ConfigError) as refused:
        Stub(record="somewhere")
    assert str(refused.value) == ("--record without --proxy: only what the real service answers is recorded; "
                                  "give --proxy URL")
    with Stub(proxy=upstream.url) as stub:
        assert call(stub.url, "POST", "/__plantstub/record/save") == (409, {
            "error": 409, "message": "record: this stub records nothing; start it with --proxy URL --record DIR"})


# -- HAR ------------------------------------------------------------------------------------------------------
def test_calls_as_har_then_imported_replay_the_same_answers(upstream, tmp_path, capsys):
    with Stub(proxy=upstream.url) as stub:
        for body in TRAFFIC:
            call(stub.url, "POST", "/plants?dry_run=1", body)
        call(stub.url, "GET", "/nowhere")
        status, har = call(stub.url, "GET", "/__plantstub/calls?format=har&method=POST")
        assert call(stub.url, "GET", "/__plantstub/calls?format=xml")[0] == 400
    assert status == 200
    log = har["log"]  # type: ignore[index]
    assert (log["version"], log["creator"]["name"], len(log["entries"])) == ("1.2", "plantstub", 5)
    first = log["entries"][0]
    assert first["request"]["url"] == f"{stub.url}plants?dry_run=1"
    assert (first["request"]["method"], json.loads(first["request"]["postData"]["text"])) == (
        "POST", {**TRAFFIC[0], "password": "REDACTED"})  # secrets redacted (plantstub/redaction.py)
    assert {"name": "Authorization", "value": "REDACTED"} in first["request"]["headers"]
    assert (first["response"]["status"], json.loads(first["response"]["content"]["text"])) == (200, {"name": "Fern"})
    assert first["startedDateTime"].endswith("Z") and first["_plantstub"]["proxied"] is True
    (tmp_path / "calls.har").write_text(json.dumps(har))
    # the query is matched, unless left out: then the rules of --record's traffic without it
    assert main(["import-har", str(tmp_path / "calls.har"), "--out", str(tmp_path / "from-har.yaml"),
                 "--record-ignore-query", "dry_run"]) == 0
    assert capsys.readouterr().out == (f"plantstub: wrote {tmp_path}/from-har.yaml: 3 rules answering 4 entries; "
                                       "1 left out (listed in its leading comment)\n")
    assert (tmp_path / "from-har.yaml").read_text() == EXPECTED.format(url="calls.har")
    assert main(["check", str(tmp_path / "from-har.yaml")]) == 0


BROWSER_HAR = {"log": {"version": "1.2", "creator": {"name": "Firefox", "version": "133.0"}, "pages": [], "entries": [
    {"startedDateTime": "2026-11-28T10:00:00.000+01:00", "time": 12.5,
     "request": {"method": "GET", "url": "https://fonts.example.net/css?family=Roboto", "httpVersion": "HTTP/2",
                 "headers": [{"name": ":authority", "value": "fonts.example.net"}], "queryString": [], "cookies": [],
                 "headersSize": -1, "bodySize": 0},
     "response": {"status": 200, "statusText": "", "httpVersion": "HTTP/2", "headers": [], "cookies": [],
                  "content": {"size": 10, "mimeType": "text/css", "text": "body {}"}, "redirectURL": "",
                  "headersSize": -1, "bodySize": -1}, "cache": {}, "timings": {"send": 0, "wait": 12, "receive": 0}},
    {"startedDateTime": "2026-11-28T10:00:01.000+01:00", "time": 30,
     "request": {"method": "POST", "url": "https://api.example.com/v1/plants", "httpVersion": "HTTP/2",
                 "headers": [{"name": "authorization", "value": "Bearer real-token"},
                             {"name": "content-type", "value": "application/json"}],
                 "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 30,
                 "postData": {"mimeType": "application/json", "text": "{\"id\": 7, \"name\": \"Fern\"}"}},
     "response": {"status": 200, "statusText": "", "httpVersion": "HTTP/2",
                  "headers": [{"name": "content-type", "value": "application/json"}], "cookies": [],
                  "content": {"size": 15, "mimeType": "application/json", "encoding": "base64",
                              "text": "eyJuYW1lIjogIkZlcm4ifQ=="},
                  "redirectURL": "", "headersSize": -1, "bodySize": 15}, "cache": {}, "timings": {"wait": 30}},
    {"startedDateTime": "2026-11-28T10:00:02.000+01:00", "time": 0,
     "request": {"method": "POST", "url": "https://api.example.com/v1/plants", "httpVersion": "HTTP/2", "headers": [],
                 "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0,
                 "postData": {"mimeType": "application/json", "text": "{\"id\": 8, \"name\": \"Cut\"}"}},
     "response": {"status": 0, "statusText": "", "httpVersion": "", "headers": [], "cookies": [],
                  "content": {"size": 0, "mimeType": ""}, "redirectURL": "", "headersSize": -1, "bodySize": -1},
     "cache": {}, "timings": {}, "_error": "net::ERR_ABORTED"},
    {"startedDateTime": "2026-11-28T10:00:03.000+01:00", "time": 4,
     "request": {"method": "GET", "url": "https://api.example.com/v1/", "httpVersion": "HTTP/2", "headers": [],
                 "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0},
     "response": {"status": 200, "statusText": "", "httpVersion": "HTTP/2",
                  "headers": [{"name": "content-type", "value": "text/html"}], "cookies": [],
                  "content": {"size": 5, "mimeType": "text/html", "text": "<p/>"}, "redirectURL": "",
                  "headersSize": -1, "bodySize": 5}, "cache": {}, "timings": {}},
]}}


def test_a_har_from_a_browser_imports_what_the_spec_serves_and_lists_the_rest(tmp_path, capsys):
    (tmp_path / "session.har").write_text(json.dumps(BROWSER_HAR))
    out = tmp_path / "browser.yaml"
    assert main(["import-har", str(tmp_path / "session.har"), "--out", str(out), "--base", "/v1"]) == 0
    assert capsys.readouterr().out == (f"plantstub: wrote {out}: 1 rule answering 1 entry; 3 left out (listed in its "
                                       "leading comment)\n")
    text = out.read_text()
    assert text.splitlines()[:5] == [
        "# Recorded by plantstub from session.har: 1 exchange in 1 rule.",
        "# Left out (3):",
        "#   entries[0] GET /css: another host (fonts.example.net; the spec's calls went to api.example.com)",
        "#   entries[2] POST /plants: no status (the browser got no answer)",
        "#   entries[3] GET /: not an operation of the spec",
    ]
    assert "real-token" not in text and "name: Fern" in text
    assert main(["check", str(out)]) == 0
    with Stub(scenarios=tmp_path, scenario="browser") as replay:
        assert call(replay.url, "POST", "/plants", {"id": 7, "name": "Fern"}) == (200, {"name": "Fern"})


@pytest.mark.parametrize(("content", "message"), [
    ('{"log":\n {not json', "plantstub: {file}:2:3: not a HAR log: not JSON there (a HAR file is the JSON a browser's"
                            " network panel or a proxy exports)"),
    ('"\xff"', "plantstub: {file}: not a HAR log: not UTF-8 text"),
    ('{"entries": []}', 'plantstub: {file}: not a HAR log: expected {{"log": {{"entries": [...]}}}}'),
    ('{"log": {"entries": []}}', "plantstub: {file}: no entry could become a rule; nothing written. Left out:"),
], ids=["not-json", "not-utf8", "not-har", "empty"])
def test_import_har_refuses_what_is_not_a_har_log(tmp_path, capsys, content, message):
    (tmp_path / "x.har").write_bytes(content.encode("latin-1"))
    assert main(["import-har", str(tmp_path / "x.har"), "--out", str(tmp_path / "x.yaml")]) == 1
    assert capsys.readouterr().err.strip() == message.format(file=tmp_path / "x.har")
    assert not (tmp_path / "x.yaml").exists()
