"""Webhooks through the fixture, with the store on (`stateful`), as a consumer project uses them: its own receiver subscribed by a test,
deliveries (numbered from #1 in each test) and subscriptions per test, and strict mode blaming a receiver that answers an undeclared status, in
process and on a sidecar (`--plantstub-url`, a `plantstub serve` started apart)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SETTINGS = '''
@pytest.fixture(scope="session")
def plantstub_settings():
    return {"spec": "plant-store-full", "stateful": True}
'''

CONFTEST = '''
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@pytest.fixture
def receiver(request):
    """The consumer's webhook receiver on 127.0.0.1; answers the status the test's `status` marker gives."""
    marker = request.node.get_closest_marker("status")
    status = marker.args[0] if marker else 200
    got = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", got
    server.shutdown()
    server.server_close()


def pytest_configure(config):
    config.addinivalue_line("markers", "status(code): what the receiver answers")
'''

TESTS = '''
import pytest
import requests

AUTH = {"Authorization": "Bearer t"}


def test_receives_the_new_plant(plantstub, receiver):
    url, got = receiver
    plantstub.subscribe(url + "/hook")
    answer = requests.post(plantstub.url + "/plants", json={"id": 1, "name": "Fern"}, headers=AUTH, timeout=5)
    assert answer.status_code == 200
    plantstub.wait_for_deliveries(1)
    plantstub.assert_delivered("/plant/webhook", body={"id": 1, "name": "Fern"}, times=1)
    assert got == [{"id": 1, "name": "Fern"}]
    # The store: the plant is listed, and deleting it answers 204 (a second time, 400 naming the id).
    assert requests.get(plantstub.url + "/plants", headers=AUTH, timeout=5).json() == [{"name": "Fern"}]
    assert requests.delete(plantstub.url + "/plants/1", headers=AUTH, timeout=5).status_code == 204
    assert requests.delete(plantstub.url + "/plants/1", headers=AUTH, timeout=5).json()["message"] == (
        "path.id: no record in /plants has id 1")


def test_next_test_starts_without_subscriptions_or_deliveries(plantstub):
    assert requests.get(plantstub.url + "/__plantstub/webhooks", timeout=5).json() == {}
    assert plantstub.deliveries == []
    assert plantstub.state == {"/plants": []}


@pytest.mark.status(418)
def test_receiver_answers_undeclared_status(plantstub, receiver):
    url, got = receiver
    plantstub.subscribe(url, name="/plant/webhook")
    requests.post(plantstub.url + "/plants", json={"id": 2, "name": "Ivy"}, headers=AUTH, timeout=5)


@pytest.mark.status(500)
def test_receiver_answers_500(plantstub, receiver):
    url, got = receiver
    plantstub.subscribe(url + "/hook", name="/plant/webhook")
    requests.post(plantstub.url + "/plants", json={"id": 4, "name": "Fir"}, headers=AUTH, timeout=5)


@pytest.mark.status(418)
@pytest.mark.plantstub(strict=False)
def test_undeclared_status_on_purpose(plantstub, receiver):
    url, got = receiver
    plantstub.subscribe(url)
    requests.post(plantstub.url + "/plants", json={"id": 3, "name": "Moss"}, headers=AUTH, timeout=5)
    assert plantstub.wait_for_deliveries(1)[0].valid is False


def test_numbers_its_deliveries_from_one(plantstub, receiver):
    url, got = receiver
    plantstub.subscribe(url + "/hook")
    for n in (5, 6):
        requests.post(plantstub.url + "/plants", json={"id": n, "name": "Yew"}, headers=AUTH, timeout=5)
    assert sorted(d.seq for d in plantstub.wait_for_deliveries(2)) == [1, 2]
    listed = requests.get(plantstub.url + "/__plantstub/deliveries", timeout=5).json()
    assert sorted(d["seq"] for d in listed) == [1, 2]
'''


@contextmanager
def sidecar(folder: Path, *args: str) -> Iterator[str]:
    """`plantstub serve --port 0 ARGS` started apart, as CI starts a sidecar; yields its URL."""
    proc = subprocess.Popen([sys.executable, "-m", "plantstub", "serve", "--port", "0", *args], cwd=folder,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("plantstub listening on "), line + proc.stderr.read() if proc.stderr else line
        yield line.strip().removeprefix("plantstub listening on ")
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


@pytest.mark.parametrize("where", ["in process", "on a sidecar"])
def test_webhooks_through_the_fixture(pytester: pytest.Pytester, tmp_path: Path, where: str) -> None:
    pytester.makepyfile(test_hooks=TESTS)
    args = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
    if where == "in process":
        pytester.makeconftest(CONFTEST + SETTINGS)
        result = pytester.runpytest_subprocess(*args)
    else:  # the spec and the store are the sidecar's; the receiver is the test's own, on 127.0.0.1 beside it
        pytester.makeconftest(CONFTEST)
        with sidecar(tmp_path, "--spec", "plant-store-full", "--stateful") as url:
            result = pytester.runpytest_subprocess(*args, "--plantstub-url", url)
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines([
        "*plantstub: in test_receiver_answers_undeclared_status, the consumer's webhook receiver broke the contract on "
        "1 delivery: #1 /plant/webhook -> http://127.0.0.1:*: the receiver answered 418, which /plant/webhook does "
        "not declare (declared: 200). Make the receiver answer a declared status, or mark the test "
        "@pytest.mark.plantstub(strict=False) if that was the point.",
    ])
    result.stdout.fnmatch_lines([
        "*plantstub: in test_receiver_answers_500, the consumer's webhook receiver broke the contract on 1 delivery: "
        "#1 /plant/webhook -> http://127.0.0.1:*/hook: the receiver answered 500 on each of 3 attempts. Make the "
        "receiver answer a declared status, or mark the test @pytest.mark.plantstub(strict=False) if that was the point.",
    ])
