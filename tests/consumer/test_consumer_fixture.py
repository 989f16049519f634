"""The fixture where users meet it: built-in scenarios, markers, per-test calls, who is to blame, options.

Each test writes a small consumer project and runs it with `pytest` in a subprocess, so the plugin
loads from the installed entry point exactly as in a user's project (noxfile.py runs this folder
in virtualenvs built from the wheel).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

CLIENT = '''
import requests


def create_plant(base_url, plant, token="t", timeout=5):
    response = requests.post(base_url + "/plants", json=plant, headers={"Authorization": "Bearer " + token},
                             timeout=timeout)
    return response.status_code, response.json()
'''


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # hypothesis's plugin (in our dev venv, not a consumer's) costs 2.5 s per run where bytecode is not cached.
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args)


def output(result: pytest.RunResult) -> str:
    return result.stdout.str() + "\n" + result.stderr.str()


def add_scenario(project: pytest.Pytester, name: str, text: str) -> None:
    """Write scenarios/NAME.yaml in the project (the folder the plugin reads by default)."""
    (project.path / "scenarios").mkdir(exist_ok=True)
    (project.path / "scenarios" / f"{name}.yaml").write_text(text)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A consumer project with a client module and no scenarios folder of its own."""
    pytester.makepyfile(client=CLIENT)
    return pytester


# -- built-in scenarios -------------------------------------------------------------------------
def test_builtin_scenarios_work_with_no_folder(project):
    project.makepyfile(test_it='''
        import pytest
        import requests
        from client import create_plant
        from plantstub import Stub

        @pytest.mark.plantstub("store-closed")
        def test_closed(plantstub):
            assert create_plant(plantstub.url, {"id": 1, "name": "Fern"}) == (
                400, {"error": 400, "message": "The store is closed"})

        @pytest.mark.plantstub(scenario="flaky")
        def test_flaky(plantstub):
            assert [create_plant(plantstub.url, {"id": 1, "name": "Fern"})[0] for _ in range(2)] == [400, 200]

        @pytest.mark.plantstub("dropped-connection")
        def test_dropped(plantstub):
            with pytest.raises(requests.exceptions.ConnectionError):
                create_plant(plantstub.url, {"id": 1, "name": "Fern"})

        def test_stub_in_code():
            with Stub(scenario="store-closed") as stub:
                assert create_plant(stub.url, {"id": 1, "name": "Fern"})[0] == 400
    ''')
    result = run(project)
    assert result.ret == 0, output(result)
    result.assert_outcomes(passed=4)


def test_a_projects_own_scenario_wins_over_the_builtin(project):
    add_scenario(project, "store-closed",
        "rules:\n  - match: {path: /plants}\n    reply: {status: 400, body: {error: 9, message: Ours}}\n")
    project.makepyfile(test_it='''
        import pytest
        import requests
        from client import create_plant

        @pytest.mark.plantstub("store-closed")
        def test_ours(plantstub):
            assert create_plant(plantstub.url, {"id": 1, "name": "Fern"}) == (400, {"error": 9, "message": "Ours"})

        @pytest.mark.plantstub("slow")
        def test_builtins_still_there(plantstub):
            listed = requests.get(plantstub.url + "/__plantstub/scenarios").json()["scenarios"]
            assert {s["name"]: s["builtin"] for s in listed} == {
                "dropped-connection": True, "flaky": True, "slow": True, "store-closed": False}
    ''')
    result = run(project)
    assert result.ret == 0, output(result)
    result.assert_outcomes(passed=2)


def test_an_unknown_scenario_fails_that_test_in_one_line(project):
    project.makepyfile(test_it='''
        import pytest

        @pytest.mark.plantstub("stor-closed")
        def test_typo(plantstub):
            pass

        def test_next(plantstub):
            pass
    ''')
    result = run(project)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*@pytest.mark.plantstub: unknown scenario 'stor-closed' (known: dropped-connection, flaky, slow, store-closed)",
    ])
    assert "Traceback" not in output(result) and "UnknownScenario" not in output(result)
    assert "During handling" not in output(result)


def test_settings_that_cannot_start_a_stub_fail_in_one_line(project):
    project.makepyfile(test_it='''
        def test_one(plantstub):
            pass

        def test_two(plantstub):
            pass

        def test_without_the_stub():
            pass
    ''')
    result = run(project, "--plantstub-scenarios", "nowhere")
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines([
        f"*plantstub: the stub cannot start: --plantstub-scenarios='{project.path / 'nowhere'}': no such folder"])
    assert "Traceback" not in output(result) and "During handling" not in output(result)


# -- markers combine ----------------------------------------------------------------------------
def test_a_tests_marker_combines_with_its_modules(project):
    project.makepyfile(test_it='''
        import pytest
        from client import create_plant

        pytestmark = pytest.mark.plantstub("store-closed")

        @pytest.mark.plantstub(strict=False)
        def test_keeps_the_module_scenario(plantstub):
            assert create_plant(plantstub.url, {"id": 1, "name": "Fern"})[1]["message"] == "The store is closed"
            assert create_plant(plantstub.url, {"id": "x", "name": "Fern"})[0] == 400  # invalid, allowed here

        @pytest.mark.plantstub("flaky")
        def test_own_scenario_wins(plantstub):
            assert create_plant(plantstub.url, {"id": 1, "name": "Fern"})[1]["message"].startswith("Temporarily")

        def test_module_marker_is_strict(plantstub):
            create_plant(plantstub.url, {"id": "x", "name": "Fern"})

        @pytest.mark.plantstub("slow")
        class TestBase:
            pass

        @pytest.mark.plantstub("flaky")
        class TestChild(TestBase):
            def test_own_class_marker_wins_over_the_base_class(self, plantstub):
                assert create_plant(plantstub.url, {"id": 1, "name": "Fern"}, timeout=1)[0] == 400
    ''')
    result = run(project)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*plantstub: test_module_marker_is_strict sent 1 request that breaks the contract*"])


# -- a call belongs to the test it arrived in ---------------------------------------------------
def test_a_late_reply_is_not_counted_in_the_next_test(project):
    add_scenario(project, "late",
        "rules:\n  - match: {path: /plants}\n    reply: {status: 200, body: {name: late}, delay_ms: 600}\n")
    project.makepyfile(test_it='''
        import time
        import pytest
        import requests
        from client import create_plant

        @pytest.mark.plantstub("late")
        def test_client_gives_up(plantstub):
            with pytest.raises(requests.exceptions.Timeout):
                create_plant(plantstub.url, {"id": 1, "name": "Fern"}, timeout=0.1)

        def test_next_test_sees_only_its_own_call(plantstub):
            assert create_plant(plantstub.url, {"id": 2, "name": "Ivy"}) == (200, {"name": "Ivy"})
            time.sleep(0.8)  # the first test's reply has been sent by now
            plantstub.assert_called("POST", "/plants", times=1)
            assert [c.body["id"] for c in plantstub.calls] == [2]
    ''')
    result = run(project, "-p", "no:randomly")
    assert result.ret == 0, output(result)
    result.assert_outcomes(passed=2)


def test_a_delayed_call_is_seen_at_once_and_judged_by_its_request_in_strict_mode(project):
    add_scenario(project, "lenient-slow", "validate_requests: false\nrules:\n  - match: {path: /plants}\n"
                                          "    reply: {status: 200, body: {name: late}, delay_ms: 5000}\n")
    project.makepyfile(test_it='''
        import threading
        import pytest
        import requests
        from client import create_plant

        def send(url):
            try:
                create_plant(url, {"name": "no id"}, timeout=10)
            except requests.RequestException:
                pass  # the stub stopped at the end of the run

        @pytest.mark.plantstub("lenient-slow")
        def test_gives_up(plantstub):
            with pytest.raises(requests.exceptions.Timeout):
                create_plant(plantstub.url, {"name": "no id"}, timeout=0.3)
            [call] = plantstub.calls  # at once, not after the 5 s delay
            assert call.body == {"name": "no id"}
            plantstub.wait_for_calls(1, timeout=3, status=499)  # recorded as the client left

        @pytest.mark.plantstub("lenient-slow")
        def test_still_waiting(plantstub):
            threading.Thread(target=send, args=(plantstub.url,), daemon=True).start()
            [call] = plantstub.wait_for_calls(1, timeout=3)
            assert call.pending and call.response is None
    ''')
    result = run(project, "-p", "no:randomly")
    result.assert_outcomes(failed=2)  # strict mode fails each at teardown
    result.stdout.fnmatch_lines([
        "*plantstub: test_gives_up sent 1 request that breaks the contract: #* POST /plants -> 499: body: 'id' is a "
        "required property*",
        "*plantstub: test_still_waiting sent 1 request that breaks the contract: #* POST /plants -> pending: body: 'id' "
        "is a required property*",
    ])


# -- templated replies keep the contract; the stub's faults are its own ----------------------------
def test_a_template_of_the_wrong_type_is_refused_at_load(project):
    add_scenario(project, "by-id",
        "description: names plants by id\nrules:\n  - match: {path: /plants}\n    reply:\n"
        "      status: 200\n      body: {name: \"{{ request.body.id }}\"}\n")
    expected = ("scenarios/by-id.yaml:6: rules[0].reply.body.name: {{ request.body.id }} gives an integer (as the "
                "request schema of POST /plants says), but POST /plants response 200 needs a string here")
    check = subprocess.run([sys.executable, "-m", "plantstub", "check", "scenarios"], capture_output=True, text=True,
                           cwd=project.path, timeout=60)
    assert check.returncode == 1
    assert check.stderr.startswith(expected), check.stderr
    project.makepyfile(test_it='''
        def test_uses_the_stub(plantstub):
            pass
    ''')
    result = run(project)
    result.assert_outcomes(errors=1)
    assert expected in output(result)


def test_a_reply_that_breaks_the_contract_once_rendered_names_the_rule(project):
    add_scenario(project, "echo-tag",
        "rules:\n  - match: {path: /plants}\n    reply:\n      status: 200\n"
        "      body: {name: \"{{ request.body.tag }}\"}\n")
    project.makepyfile(test_it='''
        import pytest
        from client import create_plant

        @pytest.mark.plantstub("echo-tag")
        def test_with_tag(plantstub):
            assert create_plant(plantstub.url, {"id": 1, "name": "Fern", "tag": "green"}) == (200, {"name": "green"})

        @pytest.mark.plantstub("echo-tag")
        def test_without_tag(plantstub):
            assert create_plant(plantstub.url, {"id": 2, "name": "Ivy"}) == (200, {})  # name is left out
            plantstub.assert_all_valid()  # the request was fine: the scenario is at fault
    ''')
    result = run(project)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "plantstub: the stub, not test_without_tag, broke the contract on 1 call: #* POST /plants -> 200: "
        "scenario 'echo-tag' rules[[]0] (*echo-tag.yaml:3) sent a reply that breaks the contract: "
        "body: 'name' is a required property (POST /plants response 200).*",
    ])
    assert "sent 1 request that breaks the contract" not in output(result)


def test_an_internal_error_is_blamed_on_plantstub_not_the_client(project):
    project.makepyfile(test_it='''
        from client import create_plant

        def test_stub_breaks(plantstub, monkeypatch):
            def broken(*args):
                raise RuntimeError("simulated plantstub bug")

            monkeypatch.setattr(next(iter(plantstub._live().runtime.served.values())), "default", broken)
            status, body = create_plant(plantstub.url, {"id": 1, "name": "Fern"})
            assert status == 500 and "a bug in plantstub, not in the client" in body["message"]
            plantstub.assert_all_valid()
            [call] = plantstub.calls
            assert call.valid and call.errors == ()
    ''')
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "plantstub: the stub, not test_stub_breaks, broke the contract on 1 call: #* POST /plants -> 500: plantstub "
        "internal error (a bug in plantstub, not in the client): RuntimeError: simulated plantstub bug.*",
    ])
    assert "sent 1 request that breaks the contract" not in output(result)


# -- configuration as users give it ---------------------------------------------------------------
def test_command_line_paths_are_relative_to_where_pytest_runs(project, monkeypatch):
    project.makeini("[pytest]\n")  # the rootdir is the project; pytest runs from a sub-folder
    sub = project.mkdir("sub")
    (sub / "stubs").mkdir()
    (sub / "stubs" / "closed.yaml").write_text(
        "rules:\n  - match: {path: /plants}\n    reply: {status: 400, body: {error: 1, message: from sub}}\n")
    (sub / "test_it.py").write_text(
        "import pytest\nfrom client import create_plant\n\n"
        "@pytest.mark.plantstub('closed')\ndef test_closed(plantstub):\n"
        "    assert create_plant(plantstub.url, {'id': 1, 'name': 'Fern'})[1]['message'] == 'from sub'\n")
    monkeypatch.chdir(sub)
    monkeypatch.setenv("PYTHONPATH", str(project.path))  # client.py
    result = run(project, "--plantstub-scenarios", "stubs", "test_it.py")
    assert result.ret == 0, output(result)
    result.assert_outcomes(passed=1)


def test_a_sub_folders_settings_apply_to_that_folder_only(project):
    add_scenario(project, "closed",
        "rules:\n  - match: {path: /plants}\n    reply: {status: 400, body: {error: 1, message: root}}\n")
    other = project.mkdir("other")
    (other / "stubs").mkdir()
    (other / "stubs" / "closed.yaml").write_text(
        "rules:\n  - match: {path: /plants}\n    reply: {status: 400, body: {error: 2, message: other}}\n")
    (other / "conftest.py").write_text(
        "import pathlib\nimport pytest\n\n@pytest.fixture(scope='session')\ndef plantstub_settings():\n"
        "    return {'scenarios': pathlib.Path(__file__).parent / 'stubs'}\n")
    test = ("import pytest\nfrom client import create_plant\n\n@pytest.mark.plantstub('closed')\n"
            "def test_{name}(plantstub):\n"
            "    assert create_plant(plantstub.url, {{'id': 1, 'name': 'F'}})[1]['message'] == '{name}'\n")
    (project.path / "test_a_root.py").write_text(test.format(name="root"))
    (other / "test_b_other.py").write_text(test.format(name="other"))
    (project.path / "test_c_root_again.py").write_text(test.format(name="root"))
    result = run(project, "-p", "no:randomly")
    assert result.ret == 0, output(result)
    result.assert_outcomes(passed=3)


@pytest.mark.parametrize("value", ["150", "-1", "lots"])
def test_coverage_fail_under_takes_a_percentage(project, value):
    project.makepyfile(test_it="def test_x():\n    pass\n")
    result = run(project, f"--plantstub-coverage-fail-under={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"'{value}' is not a percentage (expected a number from 0 to 100)" in output(result)


def test_coverage_fail_under_fails_when_no_test_used_the_stub(project):
    project.makepyfile(test_it="def test_x():\n    pass\n")
    result = run(project, "--plantstub-coverage-fail-under=50")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "plantstub: FAIL: --plantstub-coverage-fail-under=50 was given, but no test used the plantstub fixture*"])


def test_a_session_ending_with_a_reply_in_flight_ends_quietly(project):
    project.makepyfile(test_it='''
        import pytest
        import requests
        from client import create_plant

        @pytest.mark.plantstub("slow")
        def test_last(plantstub):
            with pytest.raises(requests.exceptions.Timeout):
                create_plant(plantstub.url, {"id": 1, "name": "Fern"}, timeout=0.1)
    ''')
    result = run(project)
    assert result.ret == 0, output(result)
    result.assert_outcomes(passed=1)
    assert "Task was destroyed" not in output(result) and "Traceback" not in output(result), output(result)
