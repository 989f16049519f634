"""A consumer project's own tests, which never name plantstub: installing plantstub must leave them alone.

noxfile.py runs this folder in fresh virtualenvs built from the wheel, as a project that depends on
plantstub would (only pytest and requests; with pytest-xdist and `-n 2`; with pytest-asyncio in auto mode;
without jsonschema-rs), and the main suite collects it too. Self-contained on purpose: no `__init__.py`, no
plantstub import, nothing from tests/conftest.py; pytester comes from `-p pytester` (or the main suite's
conftest). Inner runs use `runpytest_subprocess`, so they load plantstub's pytest11 plugin exactly as a
user's `pytest` does, and inherit the lane's `PYTEST_ADDOPTS` (such as `-n 2`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest


# -- a consumer's ordinary tests, with plantstub's plugin loaded ------------------------------------
def test_plantstub_plugin_is_loaded(pytestconfig):
    # Without this the other tests here would prove nothing about plantstub.
    assert pytestconfig.pluginmanager.hasplugin("plantstub")


def test_plain_assert():
    assert sorted({"ivy", "fern", "moss"}) == ["fern", "ivy", "moss"]


@pytest.mark.parametrize(("text", "words"), [("water the fern", 3), ("", 0), ("moss", 1)])
def test_parametrized(text, words):
    assert len(text.split()) == words


@pytest.fixture
def basket():
    items = ["fern"]
    yield items
    items.clear()


def test_fixture(basket):
    basket.append("ivy")
    assert basket == ["fern", "ivy"]


def test_tmp_path(tmp_path):
    (tmp_path / "notes.txt").write_text("water on Mondays\n")
    assert list(tmp_path.iterdir()) == [tmp_path / "notes.txt"]
    assert (tmp_path / "notes.txt").read_text().splitlines() == ["water on Mondays"]


# -- whole pytest runs of a consumer suite, in a subprocess -----------------------------------------
INNER_PASSING = '''
import pytest


@pytest.fixture
def numbers():
    return [1, 2, 3]


def test_sum(numbers):
    assert sum(numbers) == 6


@pytest.mark.parametrize("n", [1, 2, 3])
def test_positive(n):
    assert n > 0


def test_tmp_path(tmp_path):
    assert tmp_path.is_dir()


@pytest.mark.skip(reason="not today")
def test_skipped():
    raise AssertionError("skipped tests do not run")


@pytest.mark.xfail(reason="known bug", strict=True)
def test_known_bug():
    assert [] == [1]
'''


def test_plain_suite_runs_to_the_end(pytester):
    """A suite that does not use plantstub: pytest must finish it (no INTERNALERROR from our hooks)."""
    pytester.makepyfile(test_inner=INNER_PASSING)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=5, skipped=1, xfailed=1, warnings=0)


def test_failing_test_still_fails(pytester):
    """plantstub's hooks must not hide a consumer's failure, nor turn it into an error."""
    pytester.makepyfile(test_inner='''
        def test_good():
            assert True

        def test_bad():
            assert 1 + 1 == 3
    ''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1, failed=1)


def readme_path() -> Path:
    """The repository's README: PLANTSTUB_README (noxfile.py sets it), else two folders up from here."""
    path = Path(os.environ.get("PLANTSTUB_README") or Path(__file__).resolve().parents[2] / "README.md")
    if not path.is_file():
        pytest.fail(f"no README at {path}; set PLANTSTUB_README to the repository's README.md", pytrace=False)
    return path


def readme_examples() -> dict[str, str]:
    """Files of the README's consumer example: each `<!-- example: NAME -->` comment, then a fenced block."""
    text = readme_path().read_text(encoding="utf-8")
    return {m.group(1): m.group(2) for m in re.finditer(r"<!-- example: (\S+) -->\n```\w*\n(.*?)```", text, re.S)}


def test_readme_consumer_example(pytester):
    """The README's complete consumer project (client, scenario, tests) passes as written."""
    files = readme_examples()
    tests = [name for name in files if Path(name).name.startswith("test_")]
    assert tests, f"no test file among the README's examples: {sorted(files)}"
    for name, content in files.items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    expected = sum(len(re.findall(r"^(?:async )?def test_", files[name], re.M)) for name in tests)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=expected)
