"""Dynamic answers under the pytest fixture: --plantstub-dynamic, the run's seed in the header, --plantstub-seed
repeating a run, every xdist worker on the header's seed."""

from __future__ import annotations

import json
import re

import pytest

INNER = '''
import json
import os
import pathlib
import urllib.request


def get(url):
    request = urllib.request.Request(url + "plants", headers={"Authorization": "Bearer t"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)


def test_answers(plantstub):
    answers = [get(plantstub.url) for _ in range(4)]
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    pathlib.Path(f"seen-{worker}.json").write_text(json.dumps({"seed": plantstub.seed, "answers": answers}))


def test_other(plantstub):
    pathlib.Path(f"seen-other-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.json").write_text(str(plantstub.seed))
'''
HEADER = re.compile(r"^plantstub: dynamic answers, seed (\d+) \(--plantstub-seed \1 repeats them\)$", re.M)


def run(pytester: pytest.Pytester, *args: str) -> tuple[str | None, list[dict]]:
    """The inner run: the seed its header shows (None: no line), and what each test_answers saw."""
    for old in pytester.path.glob("seen-*.json"):
        old.unlink()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "--plantstub-spec",
                                           "plant-store-full", *args)
    result.assert_outcomes(passed=2)
    found = HEADER.search(result.stdout.str())
    seen = [json.loads(p.read_text()) for p in sorted(pytester.path.glob("seen-*.json")) if "other" not in p.name]
    others = [int(p.read_text()) for p in pytester.path.glob("seen-other-*.json")]
    assert all(s["seed"] == seen[0]["seed"] for s in seen) and set(others) == {seen[0]["seed"]}
    return (found.group(1) if found else None), seen


def test_the_fixture_s_dynamic_answers_show_their_seed_and_it_repeats_them(pytester):
    pytester.makepyfile(test_inner=INNER)
    seed, seen = run(pytester, "--plantstub-dynamic")
    assert seed is not None and seen[0]["seed"] == int(seed)
    assert len({json.dumps(a) for a in seen[0]["answers"]}) > 1  # the answers vary from call to call
    again_seed, again = run(pytester, "--plantstub-dynamic", "--plantstub-seed", seed)
    assert (again_seed, again) == (seed, seen)
    assert run(pytester)[0] is None  # without it: no header line


def test_every_xdist_worker_uses_the_seed_of_the_header(pytester):
    pytest.importorskip("xdist")
    pytester.makepyfile(test_inner=INNER)
    seed, seen = run(pytester, "--plantstub-dynamic", "-n", "2")
    assert seed is not None and seen[0]["seed"] == int(seed)
