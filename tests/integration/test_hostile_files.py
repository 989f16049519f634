"""Hostile spec and scenario files through `plantstub check` and `plantstub serve` (with and without --watch).

A 50,000-deep YAML list killed each of them with SIGSEGV in libyaml's composer; a "billion laughs" in a spec
grew to 8 GB without end. Each is now refused with `file:line:` and the server keeps serving.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from plantstub.scenarios.load import builtin_folder
from tests.helpers import HANG, post_status, same, write
from tests.test_yaml_hostile import BOMB, SECRET, TOO_DEEP, deep_flow, laughs, spec_with_schema, too_deep

DEEP_SCENARIO = f"description: deep\nrules: []\nx: {deep_flow(50_000)}\n"
BOMB_SCENARIO = "description: bomb\nrules: []\n" + laughs()


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PLANTSTUB_")}
    return subprocess.run([sys.executable, "-m", "plantstub", *args], capture_output=True, text=True, timeout=HANG,
                          env=environ, cwd=cwd)


def get_json(url: str) -> tuple[int, object]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.status, json.load(response)


def test_check_refuses_deep_and_bomb_scenarios_with_file_and_line(tmp_path):
    deep, bomb = write(tmp_path, "deep.yaml", DEEP_SCENARIO), write(tmp_path, "bomb.yaml", BOMB_SCENARIO)
    result = run("check", str(deep), str(bomb))
    assert (result.returncode, result.stdout) == (1, "")  # was -11, SIGSEGV
    assert same(result.stderr.splitlines(), [too_deep(f"{deep}:3"), f"{bomb}:8: {BOMB}", "plantstub: 2 errors in 2 files"])


@pytest.mark.parametrize(("name", "text", "line", "reason"), [
    ("deep.yaml", spec_with_schema(deep_flow(50_000)), 11, None),  # None: too_deep()
    ("deep.json", '{"openapi": "3.1.0",\n"x": ' + deep_flow(50_000) + "}", 2, TOO_DEEP),
    ("bomb.yaml", spec_with_schema("{type: array, enum: *a9}", "x-lol:\n" + laughs(indent="  ")), 9, BOMB),
], ids=["deep-yaml", "deep-json", "billion-laughs"])
@pytest.mark.parametrize("command", ["check", "serve"])
def test_check_and_serve_refuse_a_deep_or_bomb_spec(tmp_path, name, text, line, reason, command):
    spec = write(tmp_path, name, text)
    args = ("check", "--spec", str(spec), str(builtin_folder())) if command == "check" else (
        "serve", "--spec", str(spec), "--port", "0")
    result = run(*args)  # about 0.7 s; the bomb ran past 30 s at 8 GB before, and would end in a hang here
    where = f"plantstub: cannot use spec {spec}:{line}"
    assert (result.returncode, result.stdout) == (1, "")  # refused, and no listening line: nothing served
    assert same(result.stderr.splitlines(), [too_deep(where) if reason is None else f"{where}: {reason}"])
    assert result.stderr.endswith("\n")


def test_serve_refuses_a_deep_scenario_folder_cleanly(tmp_path):
    deep = write(tmp_path, "deep.yaml", DEEP_SCENARIO)
    result = run("serve", "--port", "0", "--scenarios", str(tmp_path))
    assert (result.returncode, result.stdout) == (1, "")
    assert same(result.stderr.splitlines(), ["plantstub: scenarios cannot load:", too_deep(f"{deep}:3")])


def test_watch_keeps_serving_when_deep_and_bomb_files_appear(serve, tmp_path):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    shutil.copy(builtin_folder() / "store-closed.yaml", folder / "closed.yaml")
    stub = serve("--port", "0", "--scenarios", str(folder), "--scenario", "closed", "--watch")
    assert post_status(stub.url, b'{"id": 1, "name": "A"}') == 400
    write(folder, "deep.yaml", DEEP_SCENARIO)
    write(folder, "bomb.yaml", BOMB_SCENARIO)
    expected = [f"{folder / 'bomb.yaml'}:8: {BOMB}", too_deep(f"{folder / 'deep.yaml'}:3")]
    deadline = time.monotonic() + HANG
    while not same(errors := sorted(f"{e['at']}: {e['message']}" for e in get_json(stub.url + "/__plantstub/scenarios")[1]["errors"]), expected):
        assert stub.proc.poll() is None, "the server died"
        assert time.monotonic() < deadline, "the watcher did not report the files"
        time.sleep(0.1)
    assert stub.proc.poll() is None
    assert get_json(stub.url + "/__plantstub/health")[0] == 200
    assert post_status(stub.url, b'{"id": 1, "name": "A"}') == 400  # the last good set keeps answering
    stub.stop()
    for line in errors:
        assert f"plantstub: {line}" in stub.stderr


def test_no_message_quotes_a_file_outside_or_linked_into_the_folders(serve, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text(f"{SECRET} is the password\nsecond line\n")
    api, folder = tmp_path / "api", tmp_path / "scenarios"
    api.mkdir()
    folder.mkdir()
    os.link(secret, api / "plant.yaml")
    os.link(secret, folder / "linked.yaml")
    (folder / "symlinked.yaml").symlink_to(secret)
    spec = write(api, "outside.yaml", spec_with_schema("{$ref: '../secret.txt'}"))
    inside = write(api, "inside.yaml", spec_with_schema("{$ref: 'plant.yaml'}"))
    outputs = [run("check", "--spec", str(spec), str(folder)), run("check", "--spec", str(inside), str(folder)),
               run("check", str(folder)), run("serve", "--port", "0", "--spec", str(spec)),
               run("serve", "--port", "0", "--scenarios", str(folder))]
    for result in outputs:
        assert result.returncode == 1
        assert SECRET not in result.stdout + result.stderr
    assert outputs[2].stderr.splitlines() == [
        f"{folder / 'linked.yaml'}:1: a scenario file holds a mapping (description:, rules:), not a string",
        f"{folder / 'symlinked.yaml'}: links to {secret}, outside {folder}; not read",
        "plantstub: 2 errors in 2 files",
    ]
    watched = tmp_path / "watched"
    watched.mkdir()
    stub = serve("--port", "0", "--scenarios", str(watched), "--watch")
    os.link(secret, watched / "linked.yaml")
    (watched / "symlinked.yaml").symlink_to(secret)
    deadline = time.monotonic() + HANG
    while len(listed := get_json(stub.url + "/__plantstub/scenarios")[1]["errors"]) < 2:
        assert time.monotonic() < deadline, "the watcher did not report the files"
        time.sleep(0.1)
    assert SECRET not in json.dumps(listed)
    stub.stop()
    assert "linked.yaml:1: a scenario file holds a mapping" in stub.stderr
    assert SECRET not in stub.stderr
