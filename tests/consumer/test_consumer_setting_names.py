"""A bad setting under the pytest plugin is named as the consumer wrote it (the option, the ini key, the
environment variable, the key of plantstub_settings), in one line per test, with no traceback of plantstub's.

Found by a new user's trial: `pytest --plantstub-seed abc` failed every test with a traceback through plantstub's
code ending in `--seed='abc'`, a flag of `plantstub serve` the user never typed.
"""

from __future__ import annotations

import pytest

TEST = '''
def test_uses_the_stub(plantstub):
    assert plantstub.url
'''


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The inner suite in a fresh `pytest` process, as a user runs it (the plugin comes from the entry point)."""
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args)


def one_line_error(result: pytest.RunResult, expected: str) -> None:
    """The test errored at setup with `expected`, and plantstub's code is nowhere in the report."""
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert expected in out, out
    assert "raise ConfigError" not in out and "plantstub/config.py" not in out, out


def test_a_bad_command_line_option_is_named_as_typed(pytester):
    pytester.makepyfile(test_it=TEST)
    one_line_error(run(pytester, "--plantstub-seed", "abc"),
                   "plantstub: --plantstub-seed='abc': not a seed (expected an integer 0-4294967295)")


def test_a_bad_ini_setting_is_named_as_written(pytester):
    pytester.makeini("[pytest]\nplantstub_seed = abc\n")
    pytester.makepyfile(test_it=TEST)
    one_line_error(run(pytester), "plantstub: plantstub_seed='abc': not a seed")


def test_a_bad_environment_variable_is_named(pytester, monkeypatch):
    monkeypatch.setenv("PLANTSTUB_MAX_BODY", "1x")
    pytester.makepyfile(test_it=TEST)
    one_line_error(run(pytester), "plantstub: PLANTSTUB_MAX_BODY='1x': not a size in bytes")


def test_a_bad_key_of_plantstub_settings_is_named_as_the_dict_spells_it(pytester):
    pytester.makeconftest('''
import pytest

@pytest.fixture(scope="session")
def plantstub_settings():
    return {"max_body": "1x"}
''')
    pytester.makepyfile(test_it=TEST)
    result = run(pytester)
    one_line_error(result, "max_body='1x': not a size in bytes")
    assert "--max-body" not in result.stdout.str()


def test_a_missing_scenarios_folder_from_the_ini_file_is_named_as_written(pytester):
    pytester.makeini("[pytest]\nplantstub_scenarios = nowhere\n")
    pytester.makepyfile(test_it=TEST)
    result = run(pytester)
    one_line_error(result, "plantstub: the stub cannot start: plantstub_scenarios=")
    assert f"plantstub_scenarios={str(pytester.path / 'nowhere')!r}: no such folder" in result.stdout.str()
