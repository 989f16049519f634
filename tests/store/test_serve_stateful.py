"""`plantstub serve --stateful` and PLANTSTUB_STATEFUL=1, in a real process; a bad value stops the start."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

import pytest

from tests.helpers import AUTH, ServeProcess, post_status, write


def names(url: str) -> list[str]:
    with urllib.request.urlopen(urllib.request.Request(url + "/plants", headers=AUTH), timeout=5) as response:
        return [plant["name"] for plant in json.load(response)]


@pytest.mark.parametrize(("args", "env"), [(("--stateful",), {}), ((), {"PLANTSTUB_STATEFUL": "1"})],
                         ids=["flag", "env"])
def test_serve_stateful_remembers_and_forgets_on_reset(tmp_path, args, env):
    write(tmp_path, "seeded.yaml", "state:\n  /plants:\n    - {id: 1, name: Moss}\n")
    serve = ServeProcess("--spec", "plant-store-full", "--port", "0", "--scenarios", str(tmp_path),
                         "--scenario", "seeded", *args, env=env)
    try:
        assert names(serve.url) == ["Moss"]
        assert post_status(serve.url, b'{"id": 2, "name": "Fern"}') == 200
        assert post_status(serve.url, b'{"id": 2, "name": "Fern"}') == 400
        assert names(serve.url) == ["Moss", "Fern"]
        urllib.request.urlopen(urllib.request.Request(serve.url + "/__plantstub/reset", method="POST"), timeout=5)
        assert names(serve.url) == ["Moss"]
    finally:
        serve.stop()


def test_serve_stateful_bad_value_stops_the_start():
    done = subprocess.run([sys.executable, "-m", "plantstub", "serve", "--port", "0"], capture_output=True, text=True,
                          env={"PLANTSTUB_STATEFUL": "maybe", "PATH": ""}, timeout=60)
    assert done.returncode != 0
    assert "PLANTSTUB_STATEFUL='maybe': not a boolean (expected 1/0, true/false, yes/no, on/off)" in done.stderr
