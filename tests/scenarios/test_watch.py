"""`plantstub serve --watch`: scenario files reloaded as they change, the last good set kept on errors."""

from __future__ import annotations

import shutil
import time

import pytest

from plantstub.scenarios.load import builtin_folder
from tests.helpers import post_status

pytestmark = pytest.mark.slow  # starts `plantstub serve` and waits for the watcher


def test_watch_reloads_and_keeps_last_good_set(serve, tmp_path):
    import json
    import urllib.request

    folder = tmp_path / "s"
    folder.mkdir()
    shutil.copy(builtin_folder() / "store-closed.yaml", folder / "closed.yaml")
    stub = serve("--port", "0", "--scenarios", str(folder), "--scenario", "closed", "--watch")

    def status() -> int:
        return post_status(stub.url, b'{"id": 1, "name": "A"}')

    def scenarios() -> dict:
        with urllib.request.urlopen(stub.url + "/__plantstub/scenarios", timeout=5) as response:
            return json.load(response)

    def wait_for(condition, seconds=3.0):
        deadline = time.monotonic() + seconds
        while not condition():
            assert time.monotonic() < deadline, "the watcher did not react in time"
            time.sleep(0.05)

    assert status() == 400
    (folder / "closed.yaml").write_text(
        "rules:\n  - match: {path: /plants}\n    reply: {status: 200, body: {name: reloaded}}\n")
    wait_for(lambda: status() == 200)
    (folder / "closed.yaml").write_text("rules:\n  - match: {path: /plants}\n    reply: {status: 418}\n")
    wait_for(lambda: scenarios()["errors"] != [])
    assert scenarios()["errors"][0].startswith(str(folder / "closed.yaml") + ":3: rules[0].reply.status: 418 is not declared")
    assert status() == 200  # the last good set keeps serving
    stub.stop()
    assert "kept the last good scenarios" in stub.stderr
