"""What `plantstub serve` imports before its first answer: nothing a feature that is off needs (issue 41, goal 2).

Each stub runs in a fresh interpreter: `plantstub.cli.main(["serve", ...])` on the main thread, and a thread that waits
for the first answer to `POST /plants`, prints the modules imported by then, and stops the stub with SIGTERM, as a
user's Ctrl-C or `docker stop` does. No timing: what is imported, not how long it takes.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from plantstub.contract.load import bundled_spec_path

# Imported by the features that are off in a plain start, each where it is first needed: aiohttp's server (only when
# the parser cannot be used on its own, or under create_app()), the proxy and its recorder (--proxy, --record), the
# store and the resources it serves (--stateful, a scenario's `state:`), waiting for calls (a test's wait), the
# installed releases' metadata (the spec cache of a big spec, or a jsonschema-rs that refuses plantstub's call),
# PyYAML and plantstub's loaders over it (a YAML file read: the bundled spec is read from its parsed form), the walk
# that draws random values (--dynamic, `Prefer: dynamic=true`).
NOT_FOR_A_PLAIN_START = ("aiohttp.web", "plantstub.server.app", "plantstub.proxy.forward", "plantstub.proxy.record",
                         "plantstub.stateful.resources", "plantstub.store", "plantstub.recording.waiting",
                         "importlib.metadata", "yaml", "plantstub._yaml_loaders", "plantstub.contract.random_values")

SERVE = r'''
import json, os, signal, socket, sys, threading, time
port, args = int(sys.argv[1]), sys.argv[2:]

def first_answer():
    body = b'{"id": 1, "name": "Fern", "tag": "indoor"}'
    request = (b"POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer t\r\n"
               b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)) + body
    for _ in range(3000):  # bounded: 30 s for the stub to listen
        try:
            conn = socket.create_connection(("127.0.0.1", port), timeout=30)
            break
        except OSError:
            time.sleep(0.01)
    with conn:
        conn.sendall(request)
        answer = conn.recv(65536)
    print(json.dumps({"answer": answer.split(b"\r\n", 1)[0].decode(), "modules": sorted(sys.modules)}), flush=True)
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=first_answer, daemon=True).start()
from plantstub.cli import main
raise SystemExit(main(["serve", "--host", "127.0.0.1", "--port", str(port), *args]))
'''


def served(tmp_path, *args: str) -> tuple[str, set[str]]:
    """The first answer's status line and the modules imported by then, of `plantstub serve ARGS` run from an
    empty folder (no ./scenarios)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = subprocess.run([sys.executable, "-c", SERVE, str(port), *args], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1, result.stdout + result.stderr
    seen = json.loads(lines[0])
    return seen["answer"], set(seen["modules"])


@pytest.mark.parametrize("spec", [(), ("--spec", "plant-store-full")], ids=["default", "plant-store-full"])
def test_a_plain_start_imports_no_feature_that_is_off(tmp_path, spec):
    answer, modules = served(tmp_path, *spec)
    assert answer.startswith("HTTP/1.1 2")
    assert sorted(modules.intersection(NOT_FOR_A_PLAIN_START)) == []


def test_a_spec_of_the_users_in_yaml_is_read_with_pyyaml(tmp_path):
    # The parsed form is the shipped documents' alone: the same file elsewhere is the user's, read as YAML (line
    # marks and all), which is what imports PyYAML.
    spec = tmp_path / "plants.yaml"
    spec.write_bytes(bundled_spec_path().read_bytes())
    answer, modules = served(tmp_path, "--spec", str(spec))
    assert answer.startswith("HTTP/1.1 2")
    assert {"yaml", "plantstub._yaml_loaders"} <= modules


@pytest.mark.parametrize(("args", "imported"), [
    (("--stateful", "--spec", "plant-store-full"), {"plantstub.stateful.resources", "plantstub.store"}),
    (("--proxy", "http://127.0.0.1:9"), {"plantstub.proxy.forward"}),
    (("--dynamic",), {"plantstub.contract.random_values"}),
])
def test_a_feature_that_is_on_imports_what_it_needs(tmp_path, args, imported):
    # The names above are the modules those features really use: were one renamed, the plain start's check would
    # pass for nothing, and this would fail.
    answer, modules = served(tmp_path, *args)
    assert answer.startswith("HTTP/1.1 ")
    assert imported <= modules
