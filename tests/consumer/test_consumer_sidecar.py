"""The fixture on a sidecar: `--plantstub-url` (env PLANTSTUB_URL, ini plantstub_url) gives each test a session of
its own on a `plantstub serve` process started apart, with and without pytest-xdist.

Like the other consumer tests, this file runs in consumer venvs too (noxfile.py): it uses nothing of tests/.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

HAS_XDIST = importlib.util.find_spec("xdist") is not None

CLIENT = '''
import requests


def create_plant(base_url, plant):
    response = requests.post(base_url + "/plants", json=plant, headers={"Authorization": "Bearer t"}, timeout=5)
    return response.status_code, response.json()
'''

# Each test sends the same plant twice: with `flaky` active, each must see the 400 first, whichever
# worker runs it and whatever runs beside it.
SUITE = '''
import pytest
from client import create_plant


@pytest.mark.plantstub(scenario="flaky")
@pytest.mark.parametrize("i", range(12))
def test_flaky_per_test(plantstub, i):
    assert "/__session/" in plantstub.url
    assert create_plant(plantstub.url, {"id": i, "name": "P"})[0] == 400
    assert create_plant(plantstub.url, {"id": i, "name": "P"})[0] == 200
    assert [c.status for c in plantstub.calls] == [400, 200]
    plantstub.assert_called("POST", "/plants", body={"id": i}, times=2)


def test_no_scenario_here(plantstub):
    assert create_plant(plantstub.url, {"id": 1, "name": "Fern"}) == (200, {"name": "Fern"})
    assert len(plantstub.calls) == 1


def test_a_rule_from_code(plantstub):
    rule = plantstub.when("POST", "/plants", body={"name": "Cactus"}).reply(400, {"error": 1, "message": "no"})
    assert create_plant(plantstub.url, {"id": 1, "name": "Cactus"}) == (400, {"error": 1, "message": "no"})
    assert rule.uses == 1
    assert plantstub.wait_for_calls(1, timeout=1, path="/plants")[0].rule == rule.id
'''


class Sidecar:
    """`plantstub serve --port 0` in a subprocess, from an empty folder."""

    def __init__(self, folder: Path, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "plantstub", "serve", "--port", "0", *args], cwd=folder,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("plantstub listening on "), line
        self.url = line.strip().removeprefix("plantstub listening on ")

    def get(self, path: str, token: str | None = None) -> dict:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        request = urllib.request.Request(self.url + path, headers=headers)
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.load(response)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def sidecar(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sidecar]:
    running = Sidecar(tmp_path_factory.mktemp("sidecar"))
    yield running
    running.stop()


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args)


@pytest.fixture
def consumer(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(client=CLIENT, test_it=SUITE)
    return pytester


def test_fixture_on_a_sidecar_one_session_per_test(consumer, sidecar):
    result = run(consumer, f"--plantstub-url={sidecar.url}", "--plantstub-coverage")
    result.assert_outcomes(passed=14)
    result.stdout.fnmatch_lines(["  POST /plants*200*13", "  POST /plants*400*13"])
    health = sidecar.get("/__plantstub/health")
    assert health["sessions"] == 0  # every session ended at teardown
    assert health["journal"]["calls"] == 0  # nothing reached the default session
    listing = sidecar.get("/__plantstub/sessions")
    assert listing["ended"] == 14


@pytest.mark.skipif(not HAS_XDIST, reason="needs pytest-xdist (the lane with it runs this)")
def test_fixture_on_a_sidecar_with_xdist(consumer, sidecar, monkeypatch):
    monkeypatch.setenv("PLANTSTUB_URL", sidecar.url)
    result = run(consumer, "-n", "2")
    result.assert_outcomes(passed=14)
    assert sidecar.get("/__plantstub/sessions")["ended"] == 14


def test_fixture_on_a_sidecar_strict_mode_and_markers(pytester, sidecar):
    pytester.makepyfile(client=CLIENT)
    pytester.makeini(f"[pytest]\nplantstub_url = {sidecar.url}\n")
    pytester.makepyfile(test_it='''
        import pytest
        from client import create_plant

        def test_sends_a_broken_request(plantstub):
            create_plant(plantstub.url, {"id": "x", "name": "Fern"})

        @pytest.mark.plantstub(strict=False)
        def test_allowed_to(plantstub):
            assert create_plant(plantstub.url, {"id": "x", "name": "Fern"})[0] == 400

        @pytest.mark.plantstub(scenario="store-closed")
        def test_store_closed(plantstub):
            assert create_plant(plantstub.url, {"id": 1, "name": "Fern"})[0] == 400

        @pytest.mark.plantstub(scenario="nope")
        def test_unknown_scenario(plantstub):
            pass
    ''')
    result = run(pytester)
    result.assert_outcomes(passed=2, failed=1, errors=1)
    result.stdout.fnmatch_lines([
        "@pytest.mark.plantstub: unknown scenario 'nope' (known: dropped-connection, flaky, slow, store-closed)",
        "plantstub: test_sends_a_broken_request sent 1 request that breaks the contract: #1 POST /plants -> 400: "
        "body.id: 'x' is not of type 'integer'. If that was the point of the test, mark it "
        "@pytest.mark.plantstub(strict=False).",
    ])
    assert sidecar.get("/__plantstub/health")["sessions"] == 0


def test_fixture_on_a_sidecar_that_is_not_there(consumer):
    result = run(consumer, "--plantstub-url=http://127.0.0.1:9", "-k", "no_scenario")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*plantstub: --plantstub-url: cannot reach the stub at http://127.0.0.1:9: *"])


def test_fixture_on_a_sidecar_with_an_admin_token(consumer, tmp_path_factory, monkeypatch):
    guarded = Sidecar(tmp_path_factory.mktemp("guarded"), "--admin-token", "s3cret")
    try:
        monkeypatch.setenv("PLANTSTUB_ADMIN_TOKEN", "s3cret")
        result = run(consumer, f"--plantstub-url={guarded.url}", "-k", "no_scenario")
        result.assert_outcomes(passed=1)
        assert guarded.get("/__plantstub/sessions", token="s3cret")["ended"] == 1
    finally:
        guarded.stop()


# Issue 24: a folder's plantstub_settings on a sidecar, in either order; the session's URL and headers; the cap.
LOCKED_CONFTEST = '''
import pytest

@pytest.fixture(scope="session")
def plantstub_settings():
    return {"admin_token": "s3cret", "scenario": "store-closed"}
'''
LOCKED_TESTS = '''
from client import create_plant

def test_closed_by_the_folders_scenario(plantstub):
    assert create_plant(plantstub.url, {"id": 1, "name": "Fern"})[0] == 400
    assert plantstub.calls[0].seq == 1

def test_again(plantstub):
    assert create_plant(plantstub.url, {"id": 2, "name": "Ivy"})[0] == 400
'''


@pytest.mark.parametrize("order", [("locked", "plain"), ("plain", "locked")], ids=["override-first", "override-last"])
def test_a_folders_settings_on_a_sidecar_in_either_order(pytester, tmp_path_factory, order):
    guarded = Sidecar(tmp_path_factory.mktemp("guarded"), "--admin-token", "s3cret")
    try:
        pytester.makepyfile(client=CLIENT)
        pytester.mkpydir("locked")
        (pytester.path / "locked" / "conftest.py").write_text(LOCKED_CONFTEST)
        (pytester.path / "locked" / "test_locked.py").write_text(LOCKED_TESTS)
        pytester.mkpydir("plain")
        (pytester.path / "plain" / "test_plain.py").write_text(
            "def test_without_a_token(plantstub):\n    pass\n")
        result = run(pytester, f"--plantstub-url={guarded.url}", *order)
        # the folder's token opens its sessions; the other folder, with no token, fails alone and says why
        result.assert_outcomes(passed=2, errors=1)
        result.stdout.fnmatch_lines([
            f"*plantstub: --plantstub-url: Stub.connect('{guarded.url}'): the stub runs with --admin-token and no "
            "admin token was given; pass the token of its --admin-token (the admin_token argument; "
            "PLANTSTUB_ADMIN_TOKEN for the pytest fixture)"])
        assert guarded.get("/__plantstub/sessions", token="s3cret")["ended"] == 2
        run(pytester, "locked").assert_outcomes(passed=2)  # in process, the folder's scenario too
    finally:
        guarded.stop()


def test_a_folders_settings_a_sidecar_cannot_honour_are_refused_by_name(pytester, sidecar):
    pytester.makeconftest('''
        import pytest

        @pytest.fixture(scope="session")
        def plantstub_settings():
            return {"spec": "plant-store-full", "max_body": 10, "scenario": "flaky"}
    ''')
    pytester.makepyfile(test_it="def test_x(plantstub):\n    pass\n")
    result = run(pytester, f"--plantstub-url={sidecar.url}")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        f"*plantstub: plantstub_settings gives 'max_body', 'spec', which a sidecar (--plantstub-url {sidecar.url}) "
        "cannot honour for one test: *"])


URLS = '''
import asyncio
from urllib.parse import urljoin

import aiohttp
import requests
from client import create_plant

AUTH = {"Authorization": "Bearer t"}
FERN = {"id": 1, "name": "Fern"}


def test_each_way_of_joining_reaches_the_tests_session(plantstub, request):
    on_sidecar = request.config.getoption("plantstub_url") is not None
    assert plantstub.url.endswith("/")
    assert (plantstub.session_id is not None) == on_sidecar
    assert plantstub.headers == ({"X-Plantstub-Session": plantstub.session_id} if on_sidecar else {})
    assert create_plant(plantstub.url, FERN)[0] == 200  # url + "/plants"
    assert requests.post(urljoin(plantstub.url, "plants"), json=FERN, headers=AUTH, timeout=5).status_code == 200
    assert requests.post(f"{plantstub.url}plants", json=FERN, headers=AUTH, timeout=5).status_code == 200
    root = plantstub.url.partition("/__session/")[0]  # a client whose base URL is fixed sends the headers
    assert requests.post(urljoin(root, "/plants"), json=FERN, headers={**AUTH, **plantstub.headers},
                         timeout=5).status_code == 200

    async def with_aiohttp():
        async with aiohttp.ClientSession(base_url=plantstub.url) as client:
            async with client.post("plants", json=FERN, headers=AUTH) as response:
                return response.status

    assert asyncio.run(with_aiohttp()) == 200
    plantstub.assert_called("POST", "/plants", times=5)
    assert [c.seq for c in plantstub.calls] == [1, 2, 3, 4, 5]


def test_a_client_that_drops_the_prefix(plantstub):
    requests.post(urljoin(plantstub.url, "/plants"), json=FERN, headers=AUTH, timeout=5)
    plantstub.assert_called("POST", "/plants")
'''


def test_the_sessions_url_and_headers_on_a_sidecar_and_in_process(pytester, sidecar):
    pytester.makepyfile(client=CLIENT, test_urls=URLS)
    result = run(pytester, f"--plantstub-url={sidecar.url}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*plantstub: expected at least 1 call POST /plants; got 0.*",
        "*plantstub: 1 call reached the sidecar's default session during this test: does your client drop the "
        "/__session/* prefix? urljoin(url, \"/plants\") and aiohttp's base_url with \"/plants\" do; join \"plants\" "
        "(no leading slash), or send the test's session header with each request (plantstub.headers: "
        "X-Plantstub-Session: *)."])
    in_process = run(pytester)
    in_process.assert_outcomes(passed=2)  # one stub per test run: the client's calls reach the test's stub


def test_at_the_session_cap_the_fixture_waits_then_names_the_cap(pytester, tmp_path_factory):
    capped = Sidecar(tmp_path_factory.mktemp("capped"), "--max-sessions", "1")
    try:
        pytester.makepyfile(test_it="def test_x(plantstub):\n    pass\n")
        with urllib.request.urlopen(urllib.request.Request(capped.url + "/__plantstub/sessions", method="POST"),
                                    timeout=5) as response:
            assert response.status == 201  # the one session there is room for, opened by the admin API
        result = run(pytester, f"--plantstub-url={capped.url}", "--plantstub-session-wait=0.5")
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines([
            f"*plantstub: no session on the sidecar at {capped.url} after waiting 0.5 s: session '*': this stub "
            "already serves 1 session, its cap (--max-sessions, PLANTSTUB_MAX_SESSIONS); *. Wait longer with "
            "--plantstub-session-wait SECONDS (ini plantstub_session_wait, env PLANTSTUB_SESSION_WAIT), or give the "
            "sidecar a higher --max-sessions."])
    finally:
        capped.stop()


OTHER_CLIENTS = '''
from urllib.parse import urljoin

import requests

AUTH = {"Authorization": "Bearer t"}


def test_another_client_of_the_sidecar_lists_plants(plantstub):
    requests.get(urljoin(plantstub.url, "/plants"), headers=AUTH, timeout=5)  # another worker's, as it were
    requests.post(plantstub.url + "plants", json={"id": 1, "name": "Ivy"}, headers=AUTH, timeout=5)
    plantstub.assert_called("POST", "/plants", body={"name": "Fern"})


def test_this_client_drops_the_prefix_of_its_posts(plantstub):
    requests.get(urljoin(plantstub.url, "/plants"), headers=AUTH, timeout=5)
    requests.post(urljoin(plantstub.url, "/plants"), json={"id": 1, "name": "Fern"}, headers=AUTH, timeout=5)
    plantstub.wait_for_calls(1, timeout=0.2, method="POST", body={"name": "Fern"})
'''


def test_the_default_session_hint_counts_only_calls_the_assertion_wants(pytester, sidecar):
    """Calls of other clients (other xdist workers, other jobs) reach the default session during any test: the hint
    names only those the failed assertion or wait would have counted, so it never blames a client that did not."""
    pytester.makepyfile(test_others=OTHER_CLIENTS)
    result = run(pytester, f"--plantstub-url={sidecar.url}")
    result.assert_outcomes(failed=2)
    text = result.stdout.str()
    first, second = text.split("test_this_client_drops_the_prefix_of_its_posts", 1)
    assert "plantstub: expected at least 1 call POST /plants with body {'name': 'Fern'}; got 0." in first
    assert "default session" not in first  # a GET from elsewhere is no sign of this test's POSTs going astray
    assert ("plantstub: 1 call reached the sidecar's default session during this test: does your client drop the "
            "/__session/") in second  # the POST, not the GET
