"""Replicas behind a real load balancer (issues 29 and 39): three `plantstub serve` processes, nginx or HAProxy in
front with docs/scale.md's configuration, started by the page's own command line, and a consumer suite with `-n 4
--plantstub-url` through it. Each test sees only its own calls, rules and records, and each replica serves
sessions; a replica killed mid-run fails exactly its sessions' tests, each naming its lost session."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from subprocess import PIPE, STDOUT

import pytest

from tests.balancers import RECIPES, Balancer
from tests.helpers import call, wait_until

AUTH = {"Authorization": "Bearer t"}
TESTS = 24
SPREAD = '''
import os
import pathlib

import pytest
import requests

AUTH = {"Authorization": "Bearer t"}


@pytest.mark.parametrize("i", range(24))
def test_own_session(plantstub, i):
    pathlib.Path(os.environ["SCALE_OUT"], str(i)).write_text(plantstub.session_id)
    name, n = f"plant-{i}", i % 3 + 1
    rule = plantstub.when(method="GET", path="/plants", query={"limit": str(900 + i)}).reply(
        200, body=[{"name": f"rule-{i}"}])
    for k in range(n):
        answer = requests.post(plantstub.url + "plants", json={"id": i * 10 + k, "name": name}, headers=AUTH,
                               timeout=10)
        assert answer.status_code == 200, answer.text
    assert requests.get(plantstub.url + "plants", headers=AUTH, timeout=10).json() == [{"name": name}] * n
    ruled = requests.get(plantstub.url + f"plants?limit={900 + i}", headers=AUTH, timeout=10).json()
    assert ruled == [{"name": f"rule-{i}"}]
    assert [(c.method, c.path) for c in plantstub.calls] == [("POST", "/plants")] * n + [("GET", "/plants")] * 2
    assert {c.body["name"] for c in plantstub.calls if c.method == "POST"} == {name}
    assert [r.id for r in plantstub.rules] == [rule.id]
    assert plantstub.state == {"/plants": [{"id": i * 10 + k, "name": name} for k in range(n)]}
'''
GATED = '''
import os
import pathlib
import time

import pytest
import requests

AUTH = {"Authorization": "Bearer t"}
OUT = pathlib.Path(os.environ["SCALE_OUT"])


@pytest.mark.parametrize("i", range(4))
def test_gated(plantstub, i):
    name = f"gated-{i}"
    plantstub.when(method="GET", path="/plants", query={"limit": "7"}).reply(200, body=[{"name": "ruled"}])
    answer = requests.post(plantstub.url + "plants", json={"id": i, "name": name}, headers=AUTH, timeout=10)
    assert answer.status_code == 200
    (OUT / f"{i}.tmp").write_text(plantstub.session_id)
    os.replace(OUT / f"{i}.tmp", OUT / f"{i}.id")
    deadline = time.monotonic() + 60
    while not (OUT / "go").exists():  # the outer test kills a replica, then says go
        assert time.monotonic() < deadline, "no go within 60 s"
        time.sleep(0.05)
    assert requests.get(plantstub.url + "plants?limit=7", headers=AUTH, timeout=10).json() == [{"name": "ruled"}]
    assert requests.get(plantstub.url + "plants", headers=AUTH, timeout=10).json() == [{"name": name}]
    assert len(plantstub.calls) == 3
'''


@pytest.fixture(params=sorted(RECIPES))
def farm(request, serve, tmp_path):
    """Three stateful replicas (each with its journal file) and the balancer in front, all stopped after the test."""
    replicas = [serve("--port", "0", "--spec", "plant-store-full", "--stateful", "--journal",
                      str(tmp_path / f"journal-{n}.jsonl"), "--journal-flush", "call", cwd=tmp_path)
                for n in range(3)]
    balancer = Balancer(RECIPES[request.param], tmp_path / "balancer", [r.url for r in replicas])
    try:
        yield replicas, balancer
    finally:
        balancer.stop()


def journal_sessions(path: Path) -> Counter[str]:
    """How many calls each session made on the replica that wrote `path`."""
    lines = path.read_text().splitlines() if path.exists() else []
    return Counter(json.loads(line).get("session") for line in lines)


def test_each_test_sees_only_its_own_session_spread_over_three_replicas(pytester, farm, tmp_path, monkeypatch):
    replicas, balancer = farm
    out = tmp_path / "ids"
    out.mkdir()
    monkeypatch.setenv("SCALE_OUT", str(out))
    pytester.makepyfile(test_spread=SPREAD)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "4", f"--plantstub-url={balancer.url}")
    result.assert_outcomes(passed=TESTS)
    ids = {int(p.name): p.read_text() for p in out.iterdir()}
    assert sorted(ids) == list(range(TESTS)) and len(set(ids.values())) == TESTS  # a fresh id per test
    # Each replica served sessions, as its own admin API says, and every test's session ended on its replica.
    listings = [call(r.url, "GET", "/__plantstub/sessions")[1] for r in replicas]
    assert all(listing["ended"] > 0 and listing["count"] == 0 for listing in listings), listings
    assert sum(listing["ended"] for listing in listings) == TESTS
    # Each session lived on one replica only, which recorded exactly its calls.
    journals = [journal_sessions(tmp_path / f"journal-{n}.jsonl") for n in range(3)]
    for i, sid in ids.items():
        holders = [n for n, journal in enumerate(journals) if sid in journal]
        assert len(holders) == 1, f"session {sid} of test {i} was served by replicas {holders}"
        assert journals[holders[0]][sid] == i % 3 + 1 + 2
    assert all(None not in journal for journal in journals)  # nothing reached a default session
    # The coverage of the three replicas, summed by `plantstub coverage`: every test's calls, once.
    done = subprocess.run([sys.executable, "-m", "plantstub", "coverage", "--json", *(r.url for r in replicas)],
                          capture_output=True, text=True, timeout=30)
    calls = {op["operation"]: {r["status"]: r["calls"] for r in op["responses"]}
             for op in json.loads(done.stdout)["operations"]}
    posts = sum(i % 3 + 1 for i in range(TESTS))
    assert (calls["POST /plants"]["200"], calls["GET /plants"]["200"]) == (posts, 2 * TESTS)
    # Requests naming no session share one key: they all reach one replica's default session. A big body goes on as
    # it came (no temporary file that the balancer's workers, nobody under root, could not write).
    for n in range(6):
        name = "x" * 300_000 if n == 0 else f"default-{n}"
        assert call(balancer.url, "POST", "/plants", {"id": 1000 + n, "name": name})[0] == 200
    defaults = sorted(journal_sessions(tmp_path / f"journal-{n}.jsonl")[None] for n in range(3))
    assert defaults == [0, 0, 6]


def gated_run(pytester, balancer, out: Path):
    """The gated suite started through the balancer: each of its 4 tests (one per worker) waits for `out/go`."""
    pytester.makepyfile(test_gated=GATED)
    report = out / "report.xml"
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "4", f"--plantstub-url={balancer.url}",
            f"--junitxml={report}", "test_gated.py"]
    return pytester.popen(args, stdout=PIPE, stderr=STDOUT, stdin=PIPE), report


def outcomes(report: Path) -> dict[int, str]:
    """Each gated test's problems (failure and error messages, joined), '' for a test that passed."""
    found: dict[int, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        i = int(case.get("name", "").rpartition("[")[2].rstrip("]"))
        texts = [f"{e.get('message', '')} {e.text or ''}" for e in case if e.tag in ("failure", "error")]
        found[i] = found.get(i, "") + " ".join(texts)
    return found


def test_a_replica_killed_mid_run_fails_only_its_sessions_tests_naming_them(pytester, farm, tmp_path, monkeypatch):
    replicas, balancer = farm
    victim = None
    for attempt in range(4):  # 4 sessions all on one replica (1 run in 27) show no survivors: run again
        out = tmp_path / f"gated-{attempt}"
        out.mkdir()
        monkeypatch.setenv("SCALE_OUT", str(out))
        proc, report = gated_run(pytester, balancer, out)
        try:
            wait_until(lambda out=out, proc=proc: len(list(out.glob("*.id"))) == 4 or proc.poll() is not None,
                       seconds=90)
            assert proc.poll() is None, proc.stdout.read()
            ids = {int(p.stem): p.read_text() for p in out.glob("*.id")}
            # Where each test's session lives, from each replica's own admin API.
            holder = {sid: n for n, r in enumerate(replicas)
                      for sid in (s["id"] for s in call(r.url, "GET", "/__plantstub/sessions")[1]["sessions"])}
            assert sorted(holder) == sorted(ids.values())  # each session on exactly one replica
            spread = Counter(holder.values())
            if len(spread) > 1:
                victim = spread.most_common(1)[0][0]
                replicas[victim].stop(signal.SIGKILL)  # by its PID: the replica dies mid-test
            (out / "go").write_text("")
            output = proc.communicate(timeout=120)[0]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if victim is not None:
            break
    assert victim is not None, "the sessions of 4 runs all sat on one replica"
    found = outcomes(report)
    assert sorted(found) == [0, 1, 2, 3], output
    for i, sid in ids.items():
        if holder[sid] == victim:
            assert f"test_gated[{i}]: session '{sid}' was lost during the test" in found[i], output
        else:
            assert found[i] == "", f"test_gated[{i}] on a live replica failed: {found[i]}"
    # The balancer sent the lost sessions' later calls to the replicas left, which still answer through it.
    assert call(balancer.url, "GET", "/__plantstub/health")[0] == 200
