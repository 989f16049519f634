"""`plantstub coverage URL [URL...]` (issue 29): the total coverage of several running stubs, summed into one report."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import call, free_port_url, post_status

PLANT = b'{"id": 1, "name": "Fern"}'
BROKEN = b'{"id": "x", "name": "Fern"}'


def coverage(*args: str, token: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PLANTSTUB_ADMIN_TOKEN"}
    if token is not None:
        env["PLANTSTUB_ADMIN_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "plantstub", "coverage", *args], capture_output=True, text=True,
                          env=env, timeout=30)


@pytest.fixture
def replicas(serve, tmp_path):
    """Two stubs: the first's calls in the default session, a live session and an ended one; the second's in a
    session, one of them invalid."""
    first, second = (serve("--port", "0", cwd=tmp_path) for _ in range(2))
    assert post_status(first.url, PLANT) == 200
    assert post_status(first.url, PLANT, path="/__session/a/plants") == 200
    assert post_status(first.url, PLANT, path="/__session/b/plants") == 200
    assert call(first.url, "DELETE", "/__plantstub/sessions/b")[0] == 200
    assert post_status(second.url, PLANT, path="/__session/c/plants") == 200
    assert post_status(second.url, BROKEN, path="/__session/c/plants") == 400
    return first.url, second.url


def test_coverage_sums_every_session_of_every_stub(replicas):
    done = coverage(*replicas, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    (plants,) = report["operations"]
    assert (plants["operation"], plants["operationId"]) == ("POST /plants", "createPlant")
    assert plants["responses"] == [{"status": "200", "calls": 4}, {"status": "400", "calls": 1}]
    assert (report["covered"], report["total"], report["percent"], report["stubs"]) == (2, 2, 100.0, list(replicas))


def test_coverage_prints_one_table_and_fails_under_a_threshold(replicas, serve, tmp_path):
    third = serve("--port", "0", cwd=tmp_path)  # only a 200: the sum of it alone covers half
    assert post_status(third.url, PLANT) == 200
    done = coverage(third.url, "--fail-under", "60")
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "plantstub: contract coverage of 1 stub, summed",
        "  operation                      response  calls",
        "  POST /plants                   200           1",
        "  POST /plants                   400           0   <- never exercised",
        "plantstub: 1 of 2 declared responses exercised (50.0%)",
    ]
    assert done.stderr == "plantstub: FAIL: contract coverage 50.0% is under --fail-under=60\n"
    done = coverage(*replicas, third.url, "--fail-under", "100")
    assert done.returncode == 0 and done.stdout.splitlines()[0] == "plantstub: contract coverage of 3 stubs, summed"
    assert "  POST /plants                   200           5" in done.stdout.splitlines()


def test_coverage_with_the_admin_token_from_the_environment(serve, tmp_path):
    stub = serve("--port", "0", cwd=tmp_path, env={"PLANTSTUB_ADMIN_TOKEN": "s3cret"})
    refused = coverage(stub.url)
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"plantstub: coverage of {stub.url}: GET {stub.url}/__plantstub/coverage?total=true "
                                     "answered 401: Authorization: is missing")
    assert coverage(stub.url, token="s3cret").returncode == 0


@pytest.mark.parametrize(("args", "message"), [
    (["not-a-url"], "plantstub: coverage of not-a-url: Stub.connect('not-a-url'): not the base URL of a stub"),
    (["--fail-under", "101", "http://127.0.0.1:1"], "argument --fail-under: '101' is not a percentage (expected a number 0-100)"),
    (["--fail-under", "nan", "http://127.0.0.1:1"], "argument --fail-under: 'nan' is not a percentage (expected a number 0-100)"),
], ids=["bad-url", "over-100", "nan"])
def test_coverage_refuses_what_it_cannot_use(args, message):
    done = coverage(*args)
    assert done.returncode in (1, 2) and message in done.stderr


def test_coverage_names_a_stub_it_cannot_reach():
    url = free_port_url()
    done = coverage(url)
    assert done.returncode == 1 and done.stderr.startswith(f"plantstub: coverage of {url}: cannot reach the stub at {url}")
