"""Seeds per test under the pytest plugin (issue 39): each test's dynamic answers come from the run's seed and its
node id, so one test rerun alone (its node id, -k, under -n 2 or not) with the printed seed draws the same answers,
whatever ran before it; in process and on a sidecar. A failing test that drew dynamic answers names the seed and the
command that draws them again, and the run's summary names the seed, under -q too."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

INNER = '''
import json
import os
import pathlib
import urllib.error
import urllib.request

import pytest


def get(url, n):
    request = urllib.request.Request(url + "plants?limit=3", headers={"Authorization": "Bearer t",
                                                                       "Prefer": "dynamic=true"})
    answers = []
    for _ in range(n):
        with urllib.request.urlopen(request, timeout=5) as response:
            answers.append(json.load(response))
    return answers


def keep(name, answers):
    pathlib.Path(os.environ["SEEN"], name).write_text(json.dumps(answers))


@pytest.mark.parametrize("calls", [1, 5, 2, 3])
def test_many(plantstub, calls):  # each draws a different number of answers before the next test
    keep(f"many-{calls}", get(plantstub.url, calls))


def test_single(plantstub):
    keep("single", get(plantstub.url, 3))


def test_fails_after_drawing(plantstub):
    answers = get(plantstub.url, 2)
    keep("fails", answers)
    assert answers == "something else"


def test_fails_without_drawing(plantstub):
    assert False, "no dynamic answer here"


def test_breaks_the_contract_after_drawing(plantstub):  # strict mode fails it
    keep("strict", get(plantstub.url, 1))
    request = urllib.request.Request(plantstub.url + "plants", data=b'{"id": "x"}', method="POST",
                                     headers={"Authorization": "Bearer t", "Content-Type": "application/json"})
    try:
        urllib.request.urlopen(request, timeout=5)
    except urllib.error.HTTPError:
        pass
'''
PASSING = ["many-1", "many-5", "many-2", "many-3", "single"]
COMMAND = re.compile(r"`(pytest [^`]+)` draws the same answers again, alone or in any run, on any worker\.")


def run(pytester: pytest.Pytester, seen: Path, *args: str) -> tuple[pytest.RunResult, dict[str, list]]:
    """The inner suite with `args` (every run with `-q`): its result and what each test saw."""
    for old in seen.glob("*"):
        old.unlink()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", "--plantstub-spec", "plant-store-full",
                                           *args)
    return result, {p.name: json.loads(p.read_text()) for p in seen.iterdir()}


@pytest.fixture
def inner(pytester, tmp_path, monkeypatch):
    seen = tmp_path / "seen"
    seen.mkdir()
    monkeypatch.setenv("SEEN", str(seen))
    pytester.makepyfile(test_shop=INNER)
    return seen


def test_one_test_rerun_alone_with_the_printed_seed_draws_its_answers_again(pytester, inner):
    whole, first = run(pytester, inner, "--plantstub-seed", "31337", "-n", "2")
    whole.assert_outcomes(passed=5, failed=3)
    assert sorted(first) == sorted([*PASSING, "fails", "strict"])
    assert first["many-3"] != first["single"] and len({json.dumps(a) for a in first["many-5"]}) > 1  # they vary
    # The same run again: the same answers, test by test, however xdist spread them.
    again = run(pytester, inner, "--plantstub-seed", "31337", "-n", "2")[1]
    assert again == first
    # Each test alone (its node id, -k), without xdist: the answers it drew in the whole run.
    alone = run(pytester, inner, "--plantstub-seed", "31337", "test_shop.py::test_many[3]")[1]
    assert alone == {"many-3": first["many-3"]}
    alone = run(pytester, inner, "--plantstub-seed", "31337", "-k", "single or fails_after")[1]
    assert alone == {"single": first["single"], "fails": first["fails"]}
    # Another seed: other answers.
    other = run(pytester, inner, "--plantstub-seed", "31338", "-k", "single")[1]
    assert other["single"] != first["single"]


def test_a_failing_test_names_the_seed_and_the_command_that_draws_its_answers_again(pytester, inner):
    # No seed given: the run's own, which the header would show. Whatever --show-capture says, the failure says it.
    result, first = run(pytester, inner, "-n", "2", "--show-capture=no")
    result.assert_outcomes(passed=5, failed=3)
    output = result.stdout.str()
    # Each failure that drew answers says it; the one that drew none does not. (The short summary may repeat a
    # failure's message in full, as pytest does when it thinks it runs on CI: one command, said twice.)
    commands = sorted(set(COMMAND.findall(output)))
    assert len(commands) == 2, output
    assert "test_fails_without_drawing --plantstub-seed" not in output
    seed = re.search(r"--plantstub-seed (\d+)$", commands[0])
    assert seed is not None, commands
    assert commands == [f"pytest test_shop.py::test_breaks_the_contract_after_drawing --plantstub-seed {seed[1]}",
                        f"pytest test_shop.py::test_fails_after_drawing --plantstub-seed {seed[1]}"]
    assert (f"plantstub: this test drew 2 dynamic answers from seed {seed.group(1)} and its node id "
            "(test_shop.py::test_fails_after_drawing)") in output
    # Under -q, the summary names the seed too: five passing tests and the two failing ones drew answers.
    assert (f"plantstub: 7 tests drew dynamic answers from seed {seed.group(1)}; --plantstub-seed {seed.group(1)} "
            "draws them again (each test's from the seed and its node id, alone or in any run)") in output
    # The printed command, run as printed, draws the failing test's answers again.
    rerun, again = run(pytester, inner, *shlex.split(commands[1])[1:])
    rerun.assert_outcomes(failed=1)
    assert again == {"fails": first["fails"]}


def test_on_a_sidecar_each_test_s_session_draws_from_the_sidecar_s_seed_and_the_node_id(pytester, inner, serve):
    sidecar = serve("--port", "0", "--spec", "plant-store-full", "--seed", "4242")
    result, first = run(pytester, inner, "-n", "2", f"--plantstub-url={sidecar.url}")
    result.assert_outcomes(passed=5, failed=3)
    alone = run(pytester, inner, f"--plantstub-url={sidecar.url}", "-k", "many and 5 or fails_after")
    assert alone[1] == {"many-5": first["many-5"], "fails": first["fails"]}
    output = alone[0].stdout.str()
    assert ("plantstub: this test drew 2 dynamic answers from seed 4242 and its node id "
            "(test_shop.py::test_fails_after_drawing); with a sidecar started with --seed 4242 (PLANTSTUB_SEED=4242), "
            "the test draws the same answers again, alone or in any run.") in output
    assert (f"plantstub: 2 tests drew dynamic answers on the sidecar at {sidecar.url} from seed 4242; a sidecar "
            "started with --seed 4242 (PLANTSTUB_SEED=4242) draws them again") in output
    # The same node ids in process, with the sidecar's seed: the same answers (the key is the node id alone).
    in_process = run(pytester, inner, "--plantstub-seed", "4242", "-k", "many and 5")[1]
    assert in_process == {"many-5": first["many-5"]}
