"""The fixture with `--plantstub-stateful` (or ini `plantstub_stateful = true`): the whole Plant Store in a
consumer project, the store emptied (or seeded by the test's scenario) before each test."""

from __future__ import annotations

from importlib import resources

import pytest


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The inner suite in its own `pytest` process, the plugin loaded from its entry point (as in a user's project)."""
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args)


def output(result: pytest.RunResult) -> str:
    return result.stdout.str() + "\n" + result.stderr.str()

TESTS = '''
import pytest
import requests

AUTH = {"Authorization": "Bearer t"}


def names(url):
    response = requests.get(url + "/plants", headers=AUTH, timeout=5)
    assert response.status_code == 200
    return [plant["name"] for plant in response.json()]


def test_create_then_list(plantstub):
    for i, name in enumerate(["Fern", "Ivy", "Aloe"], 1):
        assert requests.post(plantstub.url + "/plants", json={"id": i, "name": name}, headers=AUTH).status_code == 200
    assert names(plantstub.url) == ["Fern", "Ivy", "Aloe"]
    assert requests.delete(plantstub.url + "/plants/2", headers=AUTH).status_code == 204
    assert names(plantstub.url) == ["Fern", "Aloe"]


def test_each_test_starts_empty(plantstub):
    assert names(plantstub.url) == []
    assert plantstub.state == {"/plants": []}


@pytest.mark.plantstub("two-plants")
def test_a_scenario_seeds_the_store(plantstub):
    assert names(plantstub.url) == ["Moss", "Palm"]
    plantstub.set_state({"/plants": [{"id": 9, "name": "Cactus"}]})
    assert names(plantstub.url) == ["Cactus"]


def test_after_a_seeded_test_the_store_is_empty_again(plantstub):
    assert names(plantstub.url) == []
'''


@pytest.fixture
def store_project(pytester: pytest.Pytester) -> pytest.Pytester:
    spec = resources.files("plantstub") / "data" / "plant-store-full.openapi.yaml"
    (pytester.path / "store.yaml").write_text(spec.read_text(encoding="utf-8"), encoding="utf-8")
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "two-plants.yaml").write_text(
        "state:\n  /plants:\n    - {id: 1, name: Moss}\n    - {id: 2, name: Palm}\n", encoding="utf-8")
    pytester.makepyfile(test_store=TESTS)
    return pytester


def test_stateful_fixture_from_the_command_line(store_project):
    result = run(store_project, "--plantstub-spec", "plant-store-full", "--plantstub-stateful")  # a bundled document, by name
    assert result.ret == 0, output(result)
    result.assert_outcomes(passed=4)


def test_stateful_fixture_from_the_ini_file(store_project):
    store_project.makeini("[pytest]\nplantstub_spec = plant-store-full\nplantstub_stateful = true\n")
    result = run(store_project)
    assert result.ret == 0, output(result)
    result.assert_outcomes(passed=4)


def test_without_stateful_the_fixture_remembers_nothing(store_project):
    store_project.makepyfile(test_store='''
        import requests

        AUTH = {"Authorization": "Bearer t"}

        def test_the_same_id_twice_is_fine(plantstub):
            for _ in range(2):
                response = requests.post(plantstub.url + "/plants", json={"id": 1, "name": "Fern"}, headers=AUTH)
                assert response.status_code == 200

        def test_state_says_how_to_turn_it_on(plantstub):
            plantstub.state
    ''')
    result = run(store_project, "--plantstub-spec", "store.yaml")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*state: this stub keeps no records; start it with --stateful*"])
