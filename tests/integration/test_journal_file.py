"""The --journal file against `plantstub serve`: losses are reported (health, log, exit status), a moved or
deleted file is written again at its path, `--journal-flush call` writes each call before answering it."""

from __future__ import annotations

import json
import signal
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.helpers import HANG, ServeProcess, call, post_status, raw_call

PLANT = b'{"id": 1, "name": "Fern"}'


def health(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url + "/__plantstub/health", timeout=5) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def eventually(check, timeout: float = HANG):
    """The first truthy result of check() within timeout (the file is flushed within 0.1 s)."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.05)


def test_a_full_disk_makes_health_degraded_and_the_exit_status_1():
    stub = ServeProcess("--port", "0", "--journal", "/dev/full")
    try:
        assert [post_status(stub.url, PLANT) for _ in range(20)] == [200] * 20  # the consumer is still served
        # the calls of each 0.1 s are written together: wait until every one of them was tried
        status, body = eventually(lambda: (lambda h: h if h[1]["journal"]["file_lost"] == 20 else None)(health(stub.url)))
        assert status == 503 and body["status"] == "degraded"
        [problem] = body["problems"]
        assert problem["at"] == "journal file /dev/full"
        assert problem["message"].startswith("cannot write") and "20 call(s) not written" in problem["message"]
        assert body["journal"]["file_lost"] == 20 and body["journal"]["calls"] == 20  # memory still has them
    finally:
        code = stub.stop()
    assert code == 1
    assert "journal file /dev/full" in stub.stderr and "calls are being lost" in stub.stderr
    assert "20 calls could not be written to the journal file /dev/full" in stub.stderr


def test_a_moved_or_deleted_file_is_written_again_at_its_path(tmp_path):
    journal = tmp_path / "calls.jsonl"
    stub = ServeProcess("--port", "0", "--journal", str(journal))
    try:
        assert post_status(stub.url, b'{"id": 1, "name": "First"}') == 200
        assert eventually(lambda: journal.exists() and len(lines(journal)) == 1)
        journal.rename(tmp_path / "calls.jsonl.1")  # what logrotate does
        time.sleep(0.2)
        assert post_status(stub.url, b'{"id": 2, "name": "Second"}') == 200
        assert eventually(lambda: journal.exists() and len(lines(journal)) == 1)
        journal.unlink()
        time.sleep(0.2)
        assert post_status(stub.url, b'{"id": 3, "name": "Third"}') == 200
        assert eventually(lambda: journal.exists() and len(lines(journal)) == 1)
        assert health(stub.url)[0] == 200
    finally:
        code = stub.stop()
    assert code == 0
    assert [c["body"]["name"] for c in lines(tmp_path / "calls.jsonl.1")] == ["First"]
    assert [c["body"]["name"] for c in lines(journal)] == ["Third"]
    assert "was moved or deleted" in stub.stderr


def test_flush_per_call_has_the_call_in_the_file_when_the_answer_arrives(tmp_path):
    journal = tmp_path / "calls.jsonl"
    stub = ServeProcess("--port", "0", "--journal", str(journal), "--journal-flush", "call")
    try:
        for n in range(1, 6):
            assert post_status(stub.url, PLANT) == 200
            assert len(lines(journal)) == n  # no waiting: written before the answer was sent
        stub.proc.send_signal(signal.SIGKILL)  # what kill -9 leaves behind
        stub.proc.wait(5)
    finally:
        stub.stop()
    assert len(lines(journal)) == 5


def test_an_unwritable_journal_path_stops_the_start_with_its_reason(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    try:
        ServeProcess("--port", "0", "--journal", str(blocker / "calls.jsonl"))
    except AssertionError as refused:
        assert f"--journal='{blocker / 'calls.jsonl'}': cannot open for writing" in str(refused)
    else:
        raise AssertionError("plantstub serve started with a journal it cannot write")


def test_a_lone_surrogate_is_answered_recorded_served_and_written(tmp_path):
    journal = tmp_path / "calls.jsonl"
    stub = ServeProcess("--port", "0", "--journal", str(journal))
    try:
        assert post_status(stub.url, b'{"id": 1, "name": "\\ud800"}') == 200
        assert post_status(stub.url, PLANT) == 200
        with urllib.request.urlopen(stub.url + "/__plantstub/calls", timeout=5) as response:
            calls = json.load(response)
        assert [c["body"]["name"] for c in calls] == ["\ud800", "Fern"]
        assert calls[0]["response"]["body"] == {"name": "\ud800"}
        assert eventually(lambda: len(lines(journal)) == 2)
        assert health(stub.url)[1]["status"] == "ok"
    finally:
        assert stub.stop() == 0
    assert lines(journal)[0]["body"] == {"id": 1, "name": "\ud800"}


def test_plantstub_health_fails_on_a_degraded_stub_and_says_why():
    import subprocess
    import sys

    stub = ServeProcess("--port", "0", "--journal", "/dev/full")
    try:
        assert post_status(stub.url, PLANT) == 200
        eventually(lambda: health(stub.url)[0] == 503)
        probe = subprocess.run([sys.executable, "-m", "plantstub", "health", "--url", stub.url],
                               capture_output=True, text=True, timeout=30)
    finally:
        stub.stop()
    assert probe.returncode == 1
    assert f"plantstub: {stub.url} answered status 'degraded'" in probe.stderr
    assert "journal file /dev/full: cannot write" in probe.stderr


def test_each_line_names_the_session_its_call_belongs_to(serve, tmp_path):
    """Issue 23, D27: the sessions share the file, and each numbers its calls from 1."""
    journal = tmp_path / "calls.jsonl"
    stub = serve("--port", "0", "--journal", str(journal), "--journal-flush", "call")
    for sid in ("ci-1", "ci-2"):
        assert call(stub.url, "POST", "/__plantstub/sessions", {"id": sid})[0] == 201
    assert post_status(stub.url, PLANT) == 200
    assert post_status(stub.url, PLANT, path="/__session/ci-1/plants") == 200
    assert post_status(stub.url, PLANT, path="/__session/ci-2/plants") == 200
    assert raw_call(stub.url, "POST", "/plants", PLANT, {"X-Plantstub-Session": "ci-2", "Authorization": "Bearer t",
                                                         "Content-Type": "application/json"})[0] == 200
    assert [(line["session"], line["seq"], line["path"]) for line in lines(journal)] == [
        (None, 1, "/plants"), ("ci-1", 1, "/plants"), ("ci-2", 1, "/plants"), ("ci-2", 2, "/plants")]


def test_journal_dash_streams_each_call_as_a_json_line_to_stdout(serve, tmp_path):
    """Issue 29: `--journal -` for a log pipeline; batched lines too reach stdout, and a stop leaves no file `-`."""
    stub = serve("--port", "0", "--journal", "-", "--journal-flush", "call", cwd=tmp_path)
    assert post_status(stub.url, PLANT) == 200
    assert post_status(stub.url, PLANT, path="/__session/ci-9/plants") == 200
    streamed = [json.loads(stub.proc.stdout.readline()) for _ in range(2)]  # written before each answer was sent
    assert [(line["session"], line["seq"], line["path"], line["response"]["status"]) for line in streamed] == [
        (None, 1, "/plants", 200), ("ci-9", 1, "/plants", 200)]
    assert stub.stop() == 0
    assert not (tmp_path / "-").exists()


def test_journal_dash_batched_reaches_stdout_by_the_stop(serve, tmp_path):
    stub = serve("--port", "0", "--journal", "-", cwd=tmp_path)
    for _ in range(3):
        assert post_status(stub.url, PLANT) == 200
    stub.proc.send_signal(signal.SIGTERM)
    streamed = stub.proc.stdout.read()  # until the stub exits: what was batched is written at the stop at the latest
    assert stub.proc.wait(5) == 0
    assert [json.loads(line)["seq"] for line in streamed.splitlines()] == [1, 2, 3]
