"""`plantstub serve --webhook` and PLANTSTUB_WEBHOOK: subscriptions from the command line and the environment."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from plantstub import ConfigError, Stub
from tests.helpers import HANG, Receiver, call


def _deliveries(url: str, n: int) -> list:
    deadline = time.monotonic() + HANG
    listed: list = []
    while len(listed) < n and time.monotonic() < deadline:
        listed = call(url, "GET", "/__plantstub/deliveries")[1]  # type: ignore[assignment]
        time.sleep(0.02)
    return listed


def test_serve_webhook_flag_and_environment_subscribe(serve, tmp_path) -> None:
    with Receiver() as by_flag, Receiver() as by_env:
        stub = serve("--spec", "plant-store-full", "--port", "0", "--webhook", f"/plant/webhook={by_flag.url}/a",
                     cwd=tmp_path)
        assert call(stub.url, "GET", "/__plantstub/webhooks") == (200, {"/plant/webhook": by_flag.url + "/a"})
        call(stub.url, "POST", "/plants", {"id": 1, "name": "Fern"})
        [delivery] = _deliveries(stub.url, 1)
        assert (delivery["url"], delivery["status"], delivery["valid"]) == (by_flag.url + "/a", 200, True)
        stub = serve("--spec", "plant-store-full", "--port", "0", cwd=tmp_path,
                     env={"PLANTSTUB_WEBHOOK": f"{by_env.url}/all  /plant/webhook={by_env.url}/one"})
        assert call(stub.url, "GET", "/__plantstub/webhooks")[1] == {
            "*": by_env.url + "/all", "/plant/webhook": by_env.url + "/one"}
        call(stub.url, "POST", "/plants", {"id": 2, "name": "Ivy"})
        assert sorted(d["url"] for d in _deliveries(stub.url, 2)) == [by_env.url + "/all", by_env.url + "/one"]


@pytest.mark.parametrize(("args", "env", "message"), [
    (["--webhook", "/plant/webhok=http://127.0.0.1:9"], {},
     "plantstub: --webhook: '/plant/webhok' is not a webhook of the spec (did you mean '/plant/webhook'?)"),
    (["--webhook", "ftp://127.0.0.1/x"], {},
     "plantstub: --webhook: 'ftp://127.0.0.1/x' is not an http:// or https:// URL with a host (expected URL or NAME=URL)"),
    ([], {"PLANTSTUB_WEBHOOK": "http://a http://b"},
     "plantstub: PLANTSTUB_WEBHOOK: two URLs for every webhook (http://a, http://b); give one"),
], ids=["unknown-name", "not-http", "two-for-every-webhook"])
def test_serve_refuses_bad_webhook_subscription(tmp_path, args: list[str], env: dict[str, str], message: str) -> None:
    done = subprocess.run([sys.executable, "-m", "plantstub", "serve", "--spec", "plant-store-full", "--port", "0", *args],
                          capture_output=True, text=True, timeout=30, cwd=tmp_path, env={**os.environ, **env})
    assert (done.returncode, done.stderr.strip()) == (1, message)


NONE_DECLARED = "'*': the spec declares no webhooks, so nothing would ever be sent there (the bundled plant-store-full declares one)"


def test_serve_refuses_a_subscription_on_a_spec_without_webhooks(tmp_path) -> None:
    """`--webhook URL` on the default spec (which declares no webhook) would never send anything: refused at start,
    not kept in silence."""
    done = subprocess.run([sys.executable, "-m", "plantstub", "serve", "--port", "0", "--webhook", "http://127.0.0.1:9"],
                          capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert (done.returncode, done.stderr.strip()) == (1, f"plantstub: --webhook: {NONE_DECLARED}")


def test_admin_and_python_refuse_a_subscription_on_a_spec_without_webhooks(serve, tmp_path) -> None:
    stub = serve("--port", "0", cwd=tmp_path)
    assert call(stub.url, "PUT", "/__plantstub/webhooks", {"*": "http://127.0.0.1:9"}) == (
        400, {"error": 400, "message": f"body: {NONE_DECLARED}"})
    assert call(stub.url, "GET", "/__plantstub/webhooks") == (200, {})
    with Stub() as local, pytest.raises(ConfigError, match=r"^name: '\*': the spec declares no webhooks"):
        local.subscribe("http://127.0.0.1:9")
