"""Rules from code in a consumer project: each test declares what the stub answers, and sees nothing of another
test's rules or calls (the fixture resets per test); contract errors point at the test's own line."""

from __future__ import annotations

import pytest


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The inner suite in its own `pytest` process, the plugin loaded from its entry point (as in a user's project)."""
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args)


def output(result: pytest.RunResult) -> str:
    return result.stdout.str() + "\n" + result.stderr.str()


TESTS = '''
import inspect
import threading

import pytest
import requests

from plantstub import ScenarioError

AUTH = {"Authorization": "Bearer t"}


def create(url, name):
    response = requests.post(url + "/plants", json={"id": 1, "name": name}, headers=AUTH, timeout=5)
    return response.status_code, response.json()


def test_store_closed_for_cactus(plantstub):
    rule = plantstub.when(path="/plants", body={"name": {"$regex": "^Cact"}}).reply(
        400, {"error": 503, "message": "closed"})
    assert create(plantstub.url, "Cactus") == (400, {"error": 503, "message": "closed"})
    assert create(plantstub.url, "Fern") == (200, {"name": "Fern"})
    assert rule.uses == 1 and [r["id"] for r in plantstub.rules] == [rule.id]


def test_its_own_rule_and_nothing_of_the_other(plantstub):
    assert plantstub.rules == [] and plantstub.calls == []
    assert create(plantstub.url, "Cactus") == (200, {"name": "Cactus"})
    plantstub.when(path="/plants", times=1).replies([{"status": 400, "body": {"error": 1, "message": "once"}}])
    assert [create(plantstub.url, "Fern")[0] for _ in range(2)] == [400, 200]


@pytest.mark.plantstub("flaky")
def test_a_rule_answers_before_the_scenario(plantstub):
    plantstub.when(path="/plants").reply(200, {"name": "from code"})
    assert create(plantstub.url, "Fern") == (200, {"name": "from code"})


def test_wait_for_calls_from_a_background_client(plantstub):
    threading.Timer(0.2, create, (plantstub.url, "Ivy")).start()
    [call] = plantstub.wait_for_calls(1, path="/plants", body={"name": "Ivy"})
    assert call.status == 200


def test_a_contract_error_names_this_line(plantstub):
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(ScenarioError) as caught:
        plantstub.when(path="/plants").reply(418)
    assert str(caught.value).startswith(f"test_rules.py:{line}: reply.status: 418 is not declared for POST /plants")
'''


def test_each_test_declares_its_own_rules(pytester: pytest.Pytester):
    pytester.makepyfile(test_rules=TESTS)
    result = run(pytester)
    assert result.ret == 0, output(result)
    result.assert_outcomes(passed=5)


def test_each_test_declares_its_own_rules_under_xdist(pytester: pytest.Pytester):
    pytest.importorskip("xdist")
    pytester.makepyfile(test_rules=TESTS)
    result = run(pytester, "-n", "2")
    assert result.ret == 0, output(result)
    result.assert_outcomes(passed=5)
