"""Webhooks through the fixture, with the store on (`stateful`), as a consumer project uses them: its own receiver subscribed by a test,
deliveries and subscriptions per test, and strict mode blaming a receiver that answers an undeclared status."""

from __future__ import annotations

import pytest

CONFTEST = '''
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@pytest.fixture(scope="session")
def plantstub_settings():
    return {"spec": "plant-store-full", "stateful": True}


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


@pytest.mark.status(418)
@pytest.mark.plantstub(strict=False)
def test_undeclared_status_on_purpose(plantstub, receiver):
    url, got = receiver
    plantstub.subscribe(url)
    requests.post(plantstub.url + "/plants", json={"id": 3, "name": "Moss"}, headers=AUTH, timeout=5)
    assert plantstub.wait_for_deliveries(1)[0].valid is False
'''


def test_webhooks_through_the_fixture(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_hooks=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines([
        "*plantstub: in test_receiver_answers_undeclared_status, the consumer's webhook receiver broke the contract on "
        "1 delivery: #* /plant/webhook -> http://127.0.0.1:*: the receiver answered 418, which /plant/webhook does "
        "not declare (declared: 200). Make the receiver answer a declared status, or mark the test "
        "@pytest.mark.plantstub(strict=False) if that was the point.",
    ])
