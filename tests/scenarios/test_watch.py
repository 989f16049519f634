"""`plantstub serve --watch`: scenario files reloaded as they change, the last good set kept on errors."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import threading
import time
import urllib.request

from plantstub.scenarios.load import builtin_folder
from tests.helpers import HANG, JSON_AUTH, LoopCPU, address, post_status, write

SEQUENCE = """\
description: {description}
rules:
  - match: {{path: /plants}}
    replies:
      - {{status: 400, body: {{error: 503, message: Store is closed}}}}
      - {{status: 200, body: {{name: two}}}}
      - {{status: 200, body: {{name: {third}}}}}
"""


def post(url: str, name: str = "A") -> tuple[int, dict]:
    request = urllib.request.Request(url + "/plants", json.dumps({"id": 1, "name": name}).encode(), JSON_AUTH)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def listing(url: str) -> dict:
    with urllib.request.urlopen(url + "/__plantstub/scenarios", timeout=5) as response:
        return json.load(response)


def listed(url: str, name: str) -> dict:
    return next(s for s in listing(url)["scenarios"] if s["name"] == name)


def wait_for(condition, seconds: float = HANG) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the watcher did not react in time"
        time.sleep(0.05)


def test_watch_reloads_and_keeps_last_good_set(serve, tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    shutil.copy(builtin_folder() / "store-closed.yaml", folder / "closed.yaml")
    stub = serve("--port", "0", "--scenarios", str(folder), "--scenario", "closed", "--watch")

    def status() -> int:
        return post_status(stub.url, b'{"id": 1, "name": "A"}')

    assert status() == 400
    (folder / "closed.yaml").write_text(
        "rules:\n  - match: {path: /plants}\n    reply: {status: 200, body: {name: reloaded}}\n")
    wait_for(lambda: status() == 200)
    (folder / "closed.yaml").write_text("rules:\n  - match: {path: /plants}\n    reply: {status: 418}\n")
    wait_for(lambda: listing(stub.url)["errors"] != [])
    error = listing(stub.url)["errors"][0]
    assert error["at"] == str(folder / "closed.yaml") + ":3: rules[0].reply.status"
    assert error["message"].startswith("418 is not declared")
    assert status() == 200  # the last good set keeps serving
    stub.stop()
    assert "kept the last good scenarios" in stub.stderr


def test_watch_keeps_the_active_scenario_while_its_file_is_missing(serve, tmp_path):
    closed = write(tmp_path, "closed.yaml", (builtin_folder() / "store-closed.yaml").read_text())
    write(tmp_path, "other.yaml", SEQUENCE.format(description="other", third="three"))
    stub = serve("--port", "0", "--scenarios", str(tmp_path), "--scenario", "closed", "--watch")
    closed_answer = post(stub.url)
    assert closed_answer == (400, {"error": 400, "message": "The store is closed"})
    text = closed.read_text()
    closed.unlink()  # a `git checkout` half-way
    wait_for(lambda: listed(stub.url, "closed")["missing"])
    assert listing(stub.url)["active"] == "closed"
    assert post(stub.url) == closed_answer  # as before, not the happy path
    write(tmp_path, "closed.yaml", text.replace("The store is closed", "The store is shut"))
    wait_for(lambda: not listed(stub.url, "closed")["missing"])
    assert listing(stub.url)["active"] == "closed"
    assert post(stub.url) == (400, {"error": 400, "message": "The store is shut"})  # the file as it is back
    stub.stop()
    assert (f"plantstub: {closed} is gone; the active scenario 'closed' stays active as last loaded until its "
            "file is back") in stub.stderr.splitlines()
    assert f"plantstub: the active scenario 'closed' is back ({closed}); loaded, still active" in stub.stderr


def test_watch_keeps_counters_when_another_file_changes(serve, tmp_path):
    seq = write(tmp_path, "seq.yaml", SEQUENCE.format(description="seq", third="three"))
    other = write(tmp_path, "other.yaml", SEQUENCE.format(description="v1", third="three"))
    stub = serve("--port", "0", "--scenarios", str(tmp_path), "--scenario", "seq", "--watch")
    assert post(stub.url)[0] == 400
    other.write_text(SEQUENCE.format(description="v2", third="three"))
    wait_for(lambda: listed(stub.url, "other")["description"] == "v2")
    assert post(stub.url) == (200, {"name": "two"})  # the sequence carries on
    seq.write_text(SEQUENCE.format(description="seq 2", third="drei"))
    wait_for(lambda: listed(stub.url, "seq")["description"] == "seq 2")
    assert post(stub.url)[0] == 400  # its own rules changed: the sequence starts afresh


def test_watch_sees_an_edit_that_keeps_size_and_mtime(serve, tmp_path):
    seq = write(tmp_path, "seq.yaml", SEQUENCE.format(description="seq", third="aaaa"))
    stub = serve("--port", "0", "--scenarios", str(tmp_path), "--scenario", "seq", "--watch")
    before = os.stat(seq)
    seq.write_text(SEQUENCE.format(description="seq", third="bbbb"))
    os.utime(seq, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(seq)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    wait_for(lambda: listed(stub.url, "seq")["rules"] == 1 and post(stub.url) == (200, {"name": "bbbb"}))


def _many(count: int, name: str) -> str:
    rules = "".join(f"  - match: {{body: {{name: P{i}}}}}\n    reply: {{status: 200, body: {{name: {name}}}}}\n"
                    for i in range(count))
    return "description: many\nrules:\n" + rules


def test_watch_reload_of_5000_rules_never_stalls_traffic(serve, tmp_path):
    many = write(tmp_path, "many.yaml", _many(1, "old"))
    stub = serve("--port", "0", "--scenarios", str(tmp_path), "--scenario", "many", "--watch")
    host, port = address(stub.url)
    answers, stop = [], threading.Event()

    def health() -> None:
        connection = http.client.HTTPConnection(host, int(port), timeout=HANG)
        while not stop.is_set():
            connection.request("GET", "/__plantstub/health")
            response = connection.getresponse()
            response.read()
            answers.append(response.status)
            time.sleep(0.01)
        connection.close()

    prober = threading.Thread(target=health)
    prober.start()
    try:
        with LoopCPU(stub.proc.pid) as cpu:
            many.write_text(_many(5000, "new"))
            seen = set()
            deadline = time.monotonic() + HANG
            while listed(stub.url, "many")["rules"] != 5000:  # meanwhile the stub answers, old or new, never half
                assert time.monotonic() < deadline, "the 5,000 rules did not load"
                seen.add(json.dumps(post(stub.url, "P0")))
    finally:
        stop.set()
        prober.join()
    assert seen <= {json.dumps((200, {"name": "old"})), json.dumps((200, {"name": "new"}))}
    assert post(stub.url, "P4999") == (200, {"name": "new"})
    assert set(answers) == {200}
    assert len(answers) >= 10
    # The reload ran off the loop, which only served the requests meanwhile (on it, it took nearly all the CPU)
    assert cpu.share < 0.5, str(cpu)
