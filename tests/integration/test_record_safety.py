"""Issue 37, items 1, 2 and 4 to 7: what --record and `import-har` keep and write from real traffic is safe. Exchanges
are held as bytes within the memory budget (health counts them), a save is written off the event loop, what can never
become a rule is listed as it comes; no text from traffic can write YAML of its own into the file; a failed save loses
nothing (and a failed save at stop exits 1); each session records to its own file; the query is matched."""

from __future__ import annotations

import base64
import json
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from plantstub import Stub
from plantstub.cli import main
from plantstub.contract.load import load_spec
from plantstub.scenarios.load import check_paths
from tests.helpers import AUTH, ServeProcess, Upstream, call, raw_call, write


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with Upstream() as running:
        yield running


def health(stub: Stub, prefix: str = "") -> dict:
    return call(stub.url, "GET", f"{prefix}/__plantstub/health")[1]  # type: ignore[return-value]


def answered(upstream_answer: object, status: int = 200) -> dict[str, str]:
    """Headers that make tests/upstream_app.py answer this JSON."""
    return {"X-Answer": base64.b64encode(json.dumps(upstream_answer).encode()).decode(),
            "X-Answer-Status": str(status)}


def top_level(path: Path) -> dict:
    """The file as YAML reads it: only `description` and `rules` may be there."""
    return yaml.safe_load(path.read_text())


# -- 1. memory and the loop -----------------------------------------------------------------------------------
def test_an_answer_too_large_for_a_rule_is_listed_as_it_comes_and_not_kept(upstream, tmp_path):
    with Stub(spec="plant-store-full", proxy=upstream.url, record=tmp_path) as stub:
        assert raw_call(stub.url, "GET", "/plants?bulk=1000000&shape=plants", None, AUTH)[0] == 200
        assert call(stub.url, "GET", "/plants?limit=1")[0] == 200
        figures = health(stub)
        assert figures["recording"] | {"bytes": 0} == {
            "kept": 1, "bytes": 0, "left_out": 1, "dropped": 0, "saved_files": 0, "saving": False, "failure": None}
        held = figures["memory"]["session"]["parts"]["recording"]
        assert figures["recording"]["bytes"] == held < 10_000  # the small one, and the line saying why
        status, saved = call(stub.url, "POST", "/__plantstub/record/save")
    assert (status, saved["rules"]) == (200, 1)
    assert saved["left_out"] == ["GET /plants -> 200: too large: more than 100,000 values, more than a scenario "
                                 "file may hold"]


def test_exchanges_past_the_memory_budget_are_dropped_counted_and_said(upstream, tmp_path):
    size = 300_000
    with Stub(spec="plant-store-full", proxy=upstream.url, record=tmp_path, max_bytes=2**20) as stub:
        for _ in range(6):
            assert raw_call(stub.url, "GET", f"/plants?bulk={size}&shape=long", None, AUTH)[0] == 200
        figures = health(stub)
        recording = figures["recording"]
        assert recording["kept"] + recording["dropped"] == 6 and recording["dropped"] >= 3
        assert figures["memory"]["session"]["dropped"]["recording"]["count"] == recording["dropped"]
        assert figures["memory"]["session"]["parts"]["recording"] == recording["bytes"] >= recording["kept"] * size
        assert figures["status"] == "degraded"
        assert figures["problems"] == [{"at": "record", "message": (
            f"{recording['dropped']} exchanges dropped since the last save: the memory budget (--max-bytes) or the "
            "10,000 exchanges one save keeps were full; save (POST /__plantstub/record/save) to let the kept ones go")}]
        status, saved = call(stub.url, "POST", "/__plantstub/record/save")
        assert (status, saved["left_out"][-1]) == (200, (
            f"{recording['dropped']} exchanges dropped: the memory budget (--max-bytes) or the 10,000 exchanges one "
            "save keeps were full; save more often (POST /__plantstub/record/save)"))
        after = health(stub)
        assert (after["status"], after["recording"]["kept"], after["memory"]["session"]["parts"].get("recording")) == (
            "ok", 0, None)  # the save let them go


def save_slowly(url: str, result: list[object]) -> None:
    request = urllib.request.Request(url + "/__plantstub/record/save", method="POST")
    with urllib.request.urlopen(request, timeout=300) as answer:
        result.append(json.load(answer))


def test_the_stub_answers_while_a_save_is_written(upstream, tmp_path):
    with Stub(spec="plant-store-full", proxy=upstream.url, record=tmp_path) as stub:
        for i in range(4):  # 2 MB of answers: a save of seconds (PyYAML's emitter)
            assert raw_call(stub.url, "GET", f"/plants?bulk={500_000 + i}&shape=long", None, AUTH)[0] == 200
        result: list[object] = []
        saving = threading.Thread(target=save_slowly, args=(stub.url, result))
        saving.start()
        seen = []
        while saving.is_alive() and not any(seen):
            seen.append(health(stub)["recording"]["saving"])  # answered meanwhile: the save is off the event loop
        saving.join()
    assert any(seen), "no health answer came while the save was being written"
    assert result[0]["rules"] == 4  # type: ignore[index]


# -- 2. no YAML from traffic ------------------------------------------------------------------------------------
THINGS = """\
openapi: 3.1.0
info: {title: Things, version: "1"}
paths:
  /things/{name}:
    parameters: [{name: name, in: path, required: true, schema: {type: string}}]
    get:
      responses:
        "200":
          description: a thing
          content: {application/json: {schema: {type: object}}}
"""
INJECTED = "x\nvalidate_requests: false\n#"


def test_a_line_break_from_the_service_or_the_client_writes_no_yaml_of_its_own(upstream, tmp_path):
    spec = write(tmp_path, "things.yaml", THINGS)
    folder = tmp_path / "rec"
    with Stub(spec=spec, proxy=upstream.url, record=folder) as stub:
        # the reproduction: the key kept in a rule's body, where the emitter quotes it
        assert raw_call(stub.url, "GET", "/things/a", None, {**AUTH, **answered({"id": 1, INJECTED: "s"})})[0] == 200
        # every line break YAML knows, in the client's path and in a problem the service's answer causes (an
        # undeclared status), listed in the leading comment
        for i, brk in enumerate(["%0A", "%0D", "%C2%85", "%E2%80%A8", "%E2%80%A9", "%0D%0A"]):
            path = f"/things/{i}{brk}validate_requests:%20false{brk}rules:%20[]{brk}%23"
            assert raw_call(stub.url, "GET", path, None, {**AUTH, **answered({}, 418)})[0] in (404, 418)
    [file] = folder.iterdir()
    data = top_level(file)
    assert list(data) == ["description", "rules"] and len(data["rules"]) == 1
    assert data["rules"][0]["reply"]["body"] == {"id": 1, INJECTED: "s"}
    comments = [line for line in file.read_text().splitlines() if line.startswith("#")]
    assert len(comments) == 8  # the head, "Left out (6):" and one line per exchange left out
    assert comments[2].startswith("#   GET /things/0\\x0avalidate_requests: false\\x0arules: []\\x0a# -> 404: broke the")
    assert comments[5].startswith("#   GET /things/3\\u2028validate_requests")
    errors, scenarios, _ = check_paths([str(folder)], load_spec(spec))
    assert (errors, scenarios) == ([], 1)
    with Stub(spec=spec, scenarios=folder, scenario=file.stem) as replay:  # requests are still validated
        assert raw_call(replay.url, "GET", "/things/a", None, AUTH)[0] == 200


def test_a_har_method_path_or_file_name_writes_no_yaml_of_its_own(tmp_path, capsys):
    entries = [{"request": {"method": "POST", "url": "https://api.example.com/plants",
                            "postData": {"mimeType": "application/json", "text": json.dumps({"id": 1, "name": "Fern"})}},
                "response": {"status": 200, "content": {"mimeType": "application/json", "text": '{"name": "Fern"}'}}}]
    for brk in ("\n", "\r", "\x85", "\u2028", "\u2029"):
        for method, url in ((f"POST{brk}validate_requests: false{brk}#", "https://api.example.com/plants"),
                            ("POST", f"https://api.example.com/plants{brk}validate_requests: false{brk}#")):
            entries.append({"request": {"method": method, "url": url},
                            "response": {"status": 200, "content": {"mimeType": "application/json", "text": "{}"}}})
    name = tmp_path / "a\nvalidate_requests: false\n#.har"
    name.write_text(json.dumps({"log": {"entries": entries}}))
    out = tmp_path / "out.yaml"
    assert main(["import-har", str(name), "--out", str(out)]) == 0
    data = top_level(out)
    assert list(data) == ["description", "rules"] and len(data["rules"]) == 1
    assert data["description"] == f"Recorded from {name.name}."
    assert len([line for line in out.read_text().splitlines() if line.startswith("#")]) == 2 + 10
    assert main(["check", str(out)]) == 0


# -- 4. nothing lost when a save fails ----------------------------------------------------------------------------
def test_a_failed_save_keeps_every_exchange_for_the_next_one(upstream, tmp_path):
    target = tmp_path / "not-a-folder"
    target.write_text("a file where the folder should be")
    with Stub(proxy=upstream.url, record=target) as stub:
        call(stub.url, "POST", "/plants", {"id": 1, "name": "Fern"})
        status, refused = call(stub.url, "POST", "/__plantstub/record/save")
        assert status == 503 and refused["message"].startswith(f"record: cannot write to {target}: ")
        assert refused["message"].endswith("; what was recorded is kept for the next save")
        call(stub.url, "POST", "/plants", {"id": 2, "name": "Ivy"})
        figures = health(stub)
        assert figures["status"] == "degraded" and figures["recording"]["kept"] == 2
        assert figures["problems"][0]["message"].endswith("; 2 exchanges are kept until a save succeeds")
        target.unlink()
        assert call(stub.url, "POST", "/__plantstub/record/save")[1]["rules"] == 2  # type: ignore[index]
        assert health(stub)["status"] == "ok"
    assert [p.name for p in target.iterdir()] == ["recorded-001.yaml"]


@pytest.mark.slow
def test_serve_exits_1_when_its_save_at_stop_fails(upstream, tmp_path):
    target = tmp_path / "not-a-folder"
    target.write_text("")
    served = ServeProcess("--port", "0", "--proxy", upstream.url, "--record", str(target))
    try:
        assert call(served.url, "POST", "/plants", {"id": 1, "name": "Fern"})[0] == 200
    finally:
        status = served.stop()
    assert status == 1
    assert f"plantstub: --record: cannot write to {target}: " in served.stderr
    assert "1 recorded exchange not saved" in served.stderr
    assert served.stderr.rstrip().endswith(f"plantstub: 1 recorded exchange could not be saved to {target} (--record); "
                                           "exit status 1")


# -- 5. a recorder per session -------------------------------------------------------------------------------------
def test_each_session_records_to_its_own_file(upstream, tmp_path):
    with Stub(proxy=upstream.url, record=tmp_path) as stub:
        call(stub.url, "POST", "/__session/alice/plants", {"id": 1, "name": "Alice"})
        call(stub.url, "POST", "/__session/bob/plants", {"id": 2, "name": "Bob"})
        call(stub.url, "POST", "/plants", {"id": 3, "name": "Default"})
        status, saved = call(stub.url, "POST", "/__session/bob/__plantstub/record/save")
        assert (status, saved) == (200, {"file": str(tmp_path / "recorded-bob-001.yaml"), "rules": 1, "left_out": []})
        assert health(stub, "/__session/alice")["recording"]["kept"] == 1
        assert call(stub.url, "DELETE", "/__plantstub/sessions/alice")[0] == 200  # an ended session's are saved too
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["recorded-001.yaml", "recorded-alice-001.yaml", "recorded-bob-001.yaml"]
    for name, who in (("recorded-001.yaml", "Default"), ("recorded-alice-001.yaml", "Alice"),
                      ("recorded-bob-001.yaml", "Bob")):
        [rule] = top_level(tmp_path / name)["rules"]
        assert rule["reply"]["body"] == {"name": who}


# -- 6. the query is matched ----------------------------------------------------------------------------------------
def test_the_query_is_part_of_what_a_recorded_rule_matches(upstream, tmp_path):
    with Stub(spec="plant-store-full", proxy=upstream.url, record=tmp_path, record_ignore_query="ts") as stub:
        for path in ("/plants?ts=1", "/plants?limit=1&ts=2", "/plants?limit=3&ts=3"):
            assert call(stub.url, "GET", path)[0] == 200
    rules = top_level(tmp_path / "recorded-001.yaml")["rules"]
    assert [rule["match"].get("query") for rule in rules] == [{"limit": "1"}, {"limit": "3"}, None]
    with Stub(spec="plant-store-full", scenarios=tmp_path, scenario="recorded-001") as replay:  # in any order
        assert call(replay.url, "GET", "/plants?limit=3&ts=9")[1] == [{"name": f"plant {i}"} for i in range(3)]
        assert call(replay.url, "GET", "/plants")[1] == [{"name": "plant 0"}, {"name": "plant 1"}]
        assert call(replay.url, "GET", "/plants?limit=1")[1] == [{"name": "plant 0"}]


# -- 7. import-har without --base -------------------------------------------------------------------------------------
def test_import_har_without_base_says_which_base_to_pass(tmp_path, capsys):
    entry = {"request": {"method": "POST", "url": "https://api.example.com/v1/plants",
                         "postData": {"mimeType": "application/json", "text": '{"id": 1, "name": "Fern"}'}},
             "response": {"status": 200, "content": {"mimeType": "application/json", "text": '{"name": "Fern"}'}}}
    (tmp_path / "s.har").write_text(json.dumps({"log": {"entries": [entry]}}))
    assert main(["import-har", str(tmp_path / "s.har"), "--out", str(tmp_path / "s.yaml")]) == 1
    assert capsys.readouterr().err == (
        f"plantstub: {tmp_path / 's.har'}: no entry could become a rule; nothing written. No entry's path is one of the "
        "spec's; they are served under /v1: pass --base /v1. Left out:\n"
        "  entries[0] POST /v1/plants: not an operation of the spec\n")
    assert main(["import-har", str(tmp_path / "s.har"), "--out", str(tmp_path / "s.yaml"), "--base", "/v1"]) == 0
