"""The pytest plugin as a consumer project meets it: pytester suites with the `plantstub` fixture.

Run by the main suite and, by noxfile.py, in fresh virtualenvs built from the wheel (see
test_consumer_untouched.py). Inner suites run in a subprocess, as a user's `pytest` would.
"""

from __future__ import annotations

import importlib.util

import pytest

CLIENT = '''
import requests


def create_plant(base_url, plant, token="t", timeout=5):
    response = requests.post(base_url + "/plants", json=plant, headers={"Authorization": "Bearer " + token},
                             timeout=timeout)
    return response.status_code, response.json()
'''

SCENARIO = '''
description: The store refuses every creation.
rules:
  - match: {method: POST, path: /plants}
    reply:
      status: 400
      body: {error: 503, message: Store is closed}
'''

HAS_ASYNCIO = importlib.util.find_spec("pytest_asyncio") is not None
HAS_XDIST = importlib.util.find_spec("xdist") is not None


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The inner suite in a fresh `pytest` process, as a user runs it (the plugin comes from the entry point)."""
    # hypothesis's plugin (in our dev venv, not a consumer's) costs 2.5 s per run where bytecode is not cached.
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args)


@pytest.fixture
def consumer(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(client=CLIENT)
    pytester.mkdir("scenarios")
    (pytester.path / "scenarios" / "store-closed.yaml").write_text(SCENARIO)
    return pytester


def test_plugin_passing_suite(consumer):
    consumer.makepyfile(test_it='''
        from client import create_plant

        def test_create(plantstub):
            assert create_plant(plantstub.url, {"id": 1, "name": "Fern"}) == (200, {"name": "Fern"})
            plantstub.assert_called("POST", "/plants", body={"name": "Fern"}, times=1)

        def test_each_test_starts_empty(plantstub):
            assert plantstub.calls == []
    ''')
    run(consumer).assert_outcomes(passed=2)


def test_plugin_contract_violation_fails_exactly_that_test(consumer):
    consumer.makepyfile(test_it='''
        from client import create_plant

        def test_good(plantstub):
            create_plant(plantstub.url, {"id": 1, "name": "Fern"})

        def test_create_plant(plantstub):
            create_plant(plantstub.url, {"id": "x", "name": "Fern"})
    ''')
    result = run(consumer)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "plantstub: test_create_plant sent 1 request that breaks the contract: #? POST /plants -> 400: "
        "body.id: 'x' is not of type 'integer'. If that was the point of the test, mark it "
        "@pytest.mark.plantstub(strict=False).",
        "*FAILED test_it.py::test_create_plant*",
    ])
    assert "teardown" not in result.stdout.str().lower()


def test_plugin_strict_false_opts_out(consumer):
    consumer.makepyfile(test_it='''
        import pytest
        from client import create_plant

        @pytest.mark.plantstub(strict=False)
        def test_broken_on_purpose(plantstub):
            status, body = create_plant(plantstub.url, {"id": "x", "name": "Fern"})
            assert status == 400
            assert body["message"] == "body.id: 'x' is not of type 'integer'"
    ''')
    run(consumer).assert_outcomes(passed=1)


def test_plugin_marker_selects_scenario_for_one_test(consumer):
    consumer.makepyfile(test_it='''
        import pytest
        from client import create_plant

        @pytest.mark.plantstub(scenario="store-closed")
        def test_closed(plantstub):
            assert create_plant(plantstub.url, {"id": 1, "name": "Fern"}) == (
                400, {"error": 503, "message": "Store is closed"})
            assert plantstub.calls[0].rule == "rules[0]"

        def test_next_test_is_back_to_default(plantstub):
            assert create_plant(plantstub.url, {"id": 1, "name": "Fern"})[0] == 200
    ''')
    run(consumer, "--strict-markers").assert_outcomes(passed=2)


def test_plugin_marker_typo_is_an_error(consumer):
    consumer.makepyfile(test_it='''
        import pytest

        @pytest.mark.plantstub(scenarioo="store-closed")
        def test_typo(plantstub):
            pass

        @pytest.mark.plantstub(strict="no")
        def test_strict_not_a_bool(plantstub):
            pass

        @pytest.mark.plantstub("store-closed")
        def test_positional_name(plantstub):
            from client import create_plant
            assert create_plant(plantstub.url, {"id": 1, "name": "Fern"})[1]["message"] == "Store is closed"
    ''')
    result = run(consumer)
    result.assert_outcomes(errors=2, passed=1)
    result.stdout.fnmatch_lines([
        "*@pytest.mark.plantstub: unknown argument 'scenarioo' (did you mean 'scenario'?). "
        "It takes scenario=NAME, strict=True|False and proxy=URL.",
        "*@pytest.mark.plantstub: strict must be True or False, got 'no'.*",
    ])
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize("how", ["ini", "cli"])
def test_plugin_scenarios_folder_from_ini_or_command_line(pytester, how):
    pytester.makepyfile(client=CLIENT)
    pytester.mkdir("stubs")
    (pytester.path / "stubs" / "closed.yaml").write_text(SCENARIO)
    pytester.makepyfile(test_it='''
        import pytest
        from client import create_plant

        @pytest.mark.plantstub(scenario="closed")
        def test_closed(plantstub):
            assert create_plant(plantstub.url, {"id": 1, "name": "Fern"})[0] == 400
    ''')
    if how == "ini":
        pytester.makeini("[pytest]\nplantstub_scenarios = stubs\n")
        result = run(pytester)
    else:
        result = run(pytester, "--plantstub-scenarios", "stubs")
    result.assert_outcomes(passed=1)


def test_plugin_spec_option(pytester):
    pytester.makefile(".yaml", api='''
        openapi: 3.0.3
        info: {title: Trees, version: "1"}
        paths:
          /trees:
            get:
              responses:
                "200":
                  description: ok
                  content:
                    application/json:
                      example: [{"name": "Oak"}]
    ''')
    pytester.makeini("[pytest]\nplantstub_spec = api.yaml\n")
    pytester.makepyfile(test_it='''
        import json, urllib.request

        def test_trees(plantstub):
            with urllib.request.urlopen(plantstub.url + "/trees") as response:
                assert json.load(response) == [{"name": "Oak"}]
    ''')
    run(pytester).assert_outcomes(passed=1)


@pytest.mark.parametrize("how", ["ini", "option"])
def test_plugin_spec_root_option(pytester, how):
    pytester.mkdir("reference")
    pytester.mkdir("models")
    (pytester.path / "models" / "Tree.yaml").write_text("type: object\nrequired: [name]\n")
    (pytester.path / "reference" / "api.yaml").write_text('''
openapi: 3.0.3
info: {title: Trees, version: "1"}
paths:
  /trees:
    post:
      requestBody: {content: {application/json: {schema: {$ref: "../models/Tree.yaml"}}}}
      responses: {"204": {description: ok}}
''')
    pytester.makepyfile(test_it='''
        import urllib.error, urllib.request

        import pytest

        @pytest.mark.plantstub(strict=False)  # the point: a body the referenced schema refuses
        def test_trees(plantstub):
            request = urllib.request.Request(plantstub.url + "/trees", data=b"{}", method="POST",
                                             headers={"Content-Type": "application/json"})
            try:
                urllib.request.urlopen(request)
            except urllib.error.HTTPError as exc:
                assert exc.code == 400
            else:
                raise AssertionError("a body without name was accepted")
    ''')
    if how == "ini":
        pytester.makeini("[pytest]\nplantstub_spec = reference/api.yaml\nplantstub_spec_root = .\n")
        result = run(pytester)
    else:
        pytester.makeini("[pytest]\nplantstub_spec = reference/api.yaml\n")
        refused = run(pytester)
        refused.assert_outcomes(errors=1)
        refused.stdout.fnmatch_lines(["*(--spec-root DIR lets $refs read files under DIR)*"])
        result = run(pytester, "--plantstub-spec-root", ".")
    result.assert_outcomes(passed=1)


def test_plugin_help_and_markers_show_options(pytester):
    result = run(pytester, "--help")
    result.stdout.fnmatch_lines(["*--plantstub-spec=FILE*", "*--plantstub-scenarios=DIR*",
                                 "*--plantstub-coverage-fail-under=PCT*", "*plantstub_scenarios*"])
    result = run(pytester, "--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.plantstub(scenario=None, strict=True, proxy=None)*"])


@pytest.mark.skipif(not HAS_ASYNCIO, reason="needs pytest-asyncio (the lane with it runs this)")
def test_plugin_async_tests(consumer):
    consumer.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    consumer.makepyfile(test_it='''
        import aiohttp

        async def test_async_client(plantstub):
            async with aiohttp.ClientSession() as session:
                async with session.post(plantstub.url + "/plants", json={"id": 1, "name": "Ivy"},
                                        headers={"Authorization": "Bearer t"}) as response:
                    assert response.status == 200
                    assert await response.json() == {"name": "Ivy"}
            plantstub.assert_called("POST", "/plants", body={"name": "Ivy"})
    ''')
    run(consumer).assert_outcomes(passed=1)


def test_plugin_coverage_summary_and_fail_under(consumer):
    consumer.makepyfile(test_it='''
        from client import create_plant

        def test_create(plantstub):
            create_plant(plantstub.url, {"id": 1, "name": "Fern"})
    ''')
    result = run(consumer, "--plantstub-coverage")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "*plantstub contract coverage*",
        "  POST /plants*200*1",
        "  POST /plants*400*0   <- never exercised",
        "plantstub: 1 of 2 declared responses exercised (50.0%)",
    ])
    assert result.ret == 0
    result = run(consumer, "--plantstub-coverage-fail-under=80")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*contract coverage 50.0% is under --plantstub-coverage-fail-under=80*"])


@pytest.mark.skipif(not HAS_XDIST, reason="needs pytest-xdist (the lane with it runs this)")
def test_plugin_parallel_with_xdist(consumer):
    consumer.makepyfile(test_it='''
        import pytest
        from client import create_plant

        @pytest.mark.parametrize("i", range(8))
        def test_create(plantstub, i):
            assert create_plant(plantstub.url, {"id": i, "name": "P"})[0] == 200
            assert len(plantstub.calls) == 1
    ''')
    result = run(consumer, "-n", "2", "--plantstub-coverage")
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["  POST /plants*200*8"])
