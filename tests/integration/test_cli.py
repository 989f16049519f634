"""`plantstub serve` as a user runs it: a real process, a real socket, signals."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import HANG


def http(url: str, method: str = "GET", body: bytes | None = None, headers: dict | None = None):
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read() or b"null")


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "plantstub", *args], capture_output=True, text=True,
                          timeout=30, env={**os.environ, **(env or {})})


def test_serve_prints_listening_line_and_answers(serve):
    stub = serve("--port", "0")
    assert stub.listening_line.startswith("plantstub listening on http://127.0.0.1:")
    status, _, body = http(stub.url + "/plants", "POST", b'{"id": 1, "name": "Fern", "tag": "indoor"}',
                           {"Authorization": "Bearer t", "Content-Type": "application/json"})
    assert (status, body) == (200, {"name": "Fern", "tag": "indoor"})
    assert http(stub.url + "/__plantstub/health")[0] == 200


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_stops_cleanly_on_signal(serve, sig):
    stub = serve("--port", "0")
    assert stub.stop(sig) == 0
    assert "Traceback" not in stub.stderr


def test_serve_reads_port_and_host_from_environment(serve):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    stub = serve(env={"PLANTSTUB_PORT": str(free), "PLANTSTUB_HOST": "127.0.0.1"})
    assert stub.url == f"http://127.0.0.1:{free}"


def test_serve_flag_beats_environment(serve):
    stub = serve("--port", "0", env={"PLANTSTUB_PORT": "not-a-port"})
    assert stub.url.startswith("http://127.0.0.1:")


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ((), {"PLANTSTUB_PORT": "abc"}, "plantstub: PLANTSTUB_PORT='abc': not a port (expected an integer 0-65535)"),
        (("--port", "70000"), {}, "plantstub: --port='70000': not a port (expected an integer 0-65535)"),
        (("--max-body", "0"), {}, "plantstub: --max-body='0': not a size in bytes (expected an integer 1-2147483647)"),
        ((), {"PLANTSTUB_WATCH": "perhaps"}, "plantstub: PLANTSTUB_WATCH='perhaps': not a boolean (expected 1/0, true/false, yes/no, on/off)"),
    ],
    ids=["env-port", "flag-port", "max-body", "env-watch"],
)
def test_serve_refuses_bad_settings(args, env, message):
    result = run("serve", *args, env=env)
    assert result.returncode == 1
    assert result.stderr.strip() == message


def test_serve_refuses_a_spec_that_is_not_openapi(tmp_path):
    spec = tmp_path / "old.yaml"
    spec.write_text("swagger: '1.2'\ninfo: {title: t, version: '1'}\npaths: {}\n")
    result = run("serve", "--spec", str(spec), "--port", "0")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"plantstub: cannot use spec {spec}:1: swagger: '1.2' is not supported (plantstub reads Swagger 2.0 and "
        "OpenAPI 3.0, 3.1 and 3.2)")
    assert "Traceback" not in result.stderr


def test_serve_refuses_a_port_in_use(serve):
    first = serve("--port", "0")
    port = first.url.rsplit(":", 1)[1]
    result = run("serve", "--port", port)
    assert result.returncode == 1
    assert result.stderr.startswith(f"plantstub: cannot listen on 127.0.0.1:{port}: ")


def test_serve_answers_unparsable_request_in_json(serve):
    stub = serve("--port", "0")
    host, port = stub.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as conn:
        conn.sendall(b"GARBAGE LINE\r\n\r\n")
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"Content-Type: application/json" in head
    answer = json.loads(body)
    assert answer["error"] == 400
    assert answer["message"].startswith("request: cannot be parsed as HTTP/1.1: ")
    # The server keeps serving after it.
    assert http(stub.url + "/__plantstub/health")[0] == 200


def test_console_script_and_module_agree():
    script = shutil.which("plantstub", path=str(Path(sys.executable).parent))
    assert script is not None, "the console script `plantstub` is not installed next to python"
    by_script = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=30)
    by_module = run("--help")
    assert by_script.returncode == by_module.returncode == 0
    assert by_script.stdout == by_module.stdout
    assert "serve" in by_module.stdout


def test_serve_journal_file_is_complete_after_sigterm(serve, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    journal = tmp_path / "out" / "calls.jsonl"
    stub = serve("--port", "0", "--scenarios", str(tmp_path), "--journal", str(journal))
    headers = {"Authorization": "Bearer t", "Content-Type": "application/json"}

    def one(i: int) -> int:
        body = json.dumps({"id": i, "name": f"P{i}"} if i % 5 else {"id": "bad"}).encode()
        return http(stub.url + "/plants", "POST", body, headers)[0]

    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(one, range(59)))
    # While the stub runs, each call reaches the file (within a fraction of a second; only a hang is failed here).
    deadline = time.monotonic() + HANG
    while len(journal.read_text().splitlines()) < 59:
        assert time.monotonic() < deadline, "calls did not reach the journal file while the stub ran"
        time.sleep(0.02)
    statuses.append(one(59))
    assert stub.stop(signal.SIGTERM) == 0  # the last call is written by the clean stop at the latest
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    assert sorted(c["seq"] for c in lines) == list(range(1, 61))
    assert sorted(c["response"]["status"] for c in lines) == sorted(statuses)
    assert sum(not c["valid"] for c in lines) == 12
    assert {c["time"][-1] for c in lines} == {"Z"}


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_serve_logs_one_line_per_request(serve, tmp_path, log_format):
    stub = serve("--port", "0", "--scenarios", str(tmp_path), "--log-format", log_format)
    http(stub.url + "/plants", "POST", b'{"id": "x", "name": "F"}',
         {"Authorization": "Bearer t", "Content-Type": "application/json"})
    stub.stop()
    lines = [line for line in stub.stderr.splitlines() if line.strip()]
    assert len(lines) == 1
    if log_format == "text":
        assert lines[0] == "plantstub: #1 POST /plants -> 400 [-] INVALID: body.id: 'x' is not of type 'integer'"
    else:
        record = json.loads(lines[0])
        assert {k: record[k] for k in ("seq", "method", "path", "status", "valid", "rule")} == {
            "seq": 1, "method": "POST", "path": "/plants", "status": 400, "valid": False, "rule": None}
        assert record["errors"] == ["body.id: 'x' is not of type 'integer'"]


def test_a_newline_in_the_path_cannot_forge_a_log_line(serve, tmp_path):
    stub = serve("--port", "0", "--scenarios", str(tmp_path), "--log-format", "text")
    http(stub.url + "/plants%0Aplantstub:%20%2399%20POST%20/plants%20-%3E%20200", "GET")
    stub.stop()
    lines = [line for line in stub.stderr.splitlines() if line.strip()]
    assert len(lines) == 1
    assert lines[0].startswith("plantstub: #1 GET /plants\\x0aplantstub: #99 POST /plants -> 200 -> 404")


def test_serve_refuses_scenarios_that_cannot_load(tmp_path):
    (tmp_path / "bad.yaml").write_text("rules:\n  - match: {path: /plants}\n    reply: {status: 418}\n")
    result = run("serve", "--port", "0", "--scenarios", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "plantstub: scenarios cannot load:",
        f"{tmp_path / 'bad.yaml'}:3: rules[0].reply.status: 418 is not declared for POST /plants "
        "(declared: 200, 400); add `off_contract: true` to this rule to serve it anyway",
    ]


def test_serve_reads_scenarios_of_the_current_folder_and_has_the_builtins(serve, tmp_path):
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "mine.yaml").write_text("rules: []\n")
    stub = serve("--port", "0", "--scenario", "store-closed", cwd=tmp_path)
    listed = http(stub.url + "/__plantstub/scenarios")[2]
    assert listed["folder"] == "scenarios"
    assert sorted((s["name"], s["builtin"]) for s in listed["scenarios"]) == [
        ("dropped-connection", True), ("flaky", True), ("mine", False), ("slow", True), ("store-closed", True)]
    status, _, body = http(stub.url + "/plants", "POST", b'{"id": 1, "name": "Fern"}',
                           {"Authorization": "Bearer t", "Content-Type": "application/json"})
    assert (status, body) == (400, {"error": 400, "message": "The store is closed"})


@pytest.mark.parametrize("args", [["schema"], ["check", "scenarios"]], ids=["schema", "check"])
def test_a_reader_that_leaves_gets_no_traceback(args):
    """`plantstub schema | head -1`: the pipe's reader is gone before plantstub writes; exit 1, no traceback."""
    with subprocess.Popen([sys.executable, "-m", "plantstub", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          cwd=Path(__file__).parents[2]) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()  # before it writes: the interpreter takes far longer to start
        errors = process.stderr.read().decode()
        assert (process.wait(timeout=30), errors) == (1, "")
