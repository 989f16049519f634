"""Dynamic answers end to end: `plantstub serve --dynamic --seed N` over HTTP, `Prefer: dynamic=true` on a plain
stub, the seed printed at start, a bad seed refused. Answers are checked with the jsonschema library."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from plantstub import Stub
from plantstub.contract.load import load_spec
from tests.helpers import call

FULL = load_spec("plant-store-full")
SEED_LINE = re.compile(r"^plantstub: dynamic answers, seed (\d+) \(--seed \1 gives the same answers to the same calls\)$",
                       re.MULTILINE)
# (method, path, body, Prefer): a run of calls as a consumer's test sends them
CALLS: list[tuple[str, str, Any, str | None]] = [
    *[("POST", "/plants", {"id": i, "name": f"Plant {i}"}, None) for i in range(4)],
    ("POST", "/plants", {"id": 9, "name": "Fern", "tag": "indoor"}, None),
    *[("GET", "/plants", None, None) for _ in range(4)],
    ("POST", "/plants", {"id": 5, "name": "Moss"}, "code=400"),
    ("DELETE", "/plants/3", None, None),
]


def validator(method: str, status: int) -> Any:
    """jsonschema's check of the bundled full store's answer `status` to `method` (its declared `default` else)."""
    op = next(op for op in FULL.operations if op.method == method)
    response = op.responses.get(str(status)) or op.responses["default"]
    schema = response.content["application/json"].schema
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def answers(url: str, headers: dict[str, str] | None = None) -> list[tuple[int, Any]]:
    """Each of CALLS sent in turn; every answer checked against its declared schema, the posted name echoed."""
    found = []
    for method, path, body, prefer in CALLS:
        status, answer = call(url, method, path, body, {**({"Prefer": prefer} if prefer else {}), **(headers or {})})
        assert status < 500, (method, path, status, answer)
        if answer is not None:
            validator(method, status).validate(answer)
        if method == "POST" and status == 200:
            assert answer["name"] == body["name"]  # the echo stays: only what plantstub invents varies
            if "tag" in body:
                assert answer["tag"] == body["tag"]
        found.append((status, answer))
    return found


def test_serve_dynamic_with_a_seed_repeats_its_answers_and_another_seed_changes_them(serve):
    runs = {}
    for name, seed in (("first", "7"), ("again", "7"), ("other", "8")):
        stub = serve("--port", "0", "--spec", "plant-store-full", "--dynamic", "--seed", seed)
        runs[name] = answers(stub.url)
        assert stub.stop() == 0
        assert SEED_LINE.search(stub.stderr).group(1) == seed
    assert runs["first"] == runs["again"]
    assert runs["first"] != runs["other"]
    lists = [answer for (_, answer), (method, *_) in zip(runs["first"], CALLS, strict=True) if method == "GET"]
    assert len({repr(a) for a in lists}) > 1  # one run's lists differ from call to call
    assert [s for s, _ in runs["first"]] == [200] * 9 + [400, 204]


def test_serve_dynamic_without_a_seed_prints_the_one_it_chose_and_that_seed_repeats_the_run(serve):
    stub = serve("--port", "0", "--spec", "plant-store-full", env={"PLANTSTUB_DYNAMIC": "1"})
    first = answers(stub.url)
    stub.stop()
    seed = SEED_LINE.search(stub.stderr).group(1)
    again = serve("--port", "0", "--spec", "plant-store-full", "--dynamic", "--seed", seed)
    assert answers(again.url) == first


def test_serve_without_dynamic_prints_no_seed_and_answers_the_same_every_time(serve):
    stub = serve("--port", "0", "--spec", "plant-store-full")
    assert answers(stub.url)[5:9] == [(200, [{"name": "string"}])] * 4
    stub.stop()
    assert "seed" not in stub.stderr


@pytest.mark.parametrize(("args", "env", "message"), [
    (("--seed", "abc"), {}, "plantstub: --seed='abc': not a seed (expected an integer 0-4294967295)"),
    (("--seed", "-1"), {}, "plantstub: --seed='-1': not a seed (expected an integer 0-4294967295)"),
    ((), {"PLANTSTUB_SEED": "1.5"}, "plantstub: PLANTSTUB_SEED='1.5': not a seed (expected an integer 0-4294967295)"),
    (("--dynamic",), {"PLANTSTUB_DYNAMIC": "x"}, None),  # the flag wins over a bad variable: it starts
    ((), {"PLANTSTUB_DYNAMIC": "sometimes"},
     "plantstub: PLANTSTUB_DYNAMIC='sometimes': not a boolean (expected 1/0, true/false, yes/no, on/off)"),
], ids=["letters", "negative", "env-fraction", "flag-beats-env", "env-dynamic"])
def test_serve_refuses_a_bad_seed_or_dynamic_setting(serve, args, env, message):
    if message is None:
        stub = serve("--port", "0", *args, env=env)
        assert call(stub.url, "POST", "/plants", {"id": 1, "name": "Fern"})[0] == 200
        return
    result = subprocess.run([sys.executable, "-m", "plantstub", "serve", "--port", "0", *args], capture_output=True,
                            text=True, timeout=30, env={**os.environ, **env})
    assert (result.returncode, result.stderr.strip()) == (1, message)


def test_prefer_dynamic_on_a_plain_stub_varies_that_answer_only():
    with Stub(spec="plant-store-full", seed=5) as stub:
        fixed = call(stub.url, "GET", "/plants")
        varied = [call(stub.url, "GET", "/plants", headers={"Prefer": "dynamic=true"}) for _ in range(6)]
        assert call(stub.url, "GET", "/plants") == fixed == (200, [{"name": "string"}])
        assert len({repr(v) for v in varied}) > 1
        for status, body in varied:
            assert status == 200
            validator("GET", 200).validate(body)
        status, body = call(stub.url, "POST", "/plants", {"id": 1, "name": "Fern"}, {"Prefer": "dynamic=true"})
        assert (status, body["name"]) == (200, "Fern")
        assert call(stub.url, "POST", "/plants", {"id": 1, "name": "Fern"}, {"Prefer": "dynamic=maybe"}) == (
            400, {"error": 400, "message": "headers.Prefer: dynamic='maybe' is neither true nor false"})
    with Stub(spec="plant-store-full", seed=5) as again:  # the same seed: the same answers to the same calls
        assert [call(again.url, "GET", "/plants", headers={"Prefer": "dynamic=true"}) for _ in range(6)] == varied


def test_prefer_dynamic_false_on_a_dynamic_stub_gives_the_fixed_answer():
    with Stub(spec="plant-store-full", dynamic=True) as stub, Stub(spec="plant-store-full") as plain:
        for method, path, body, prefer in CALLS:
            asked = ", ".join(p for p in (prefer, "dynamic=false") if p)
            assert call(stub.url, method, path, body, {"Prefer": asked}) == call(plain.url, method, path, body,
                                                                                 {"Prefer": prefer} if prefer else {})


def test_stub_seed_is_the_one_chosen_at_start_and_repeats_the_answers():
    with Stub(spec="plant-store-full", dynamic=True) as stub:
        first = [call(stub.url, "GET", "/plants") for _ in range(5)]
        seed = stub.seed
    with Stub(spec="plant-store-full", dynamic=True, seed=seed) as again:
        assert again.seed == seed
        assert [call(again.url, "GET", "/plants") for _ in range(5)] == first


def test_a_scenario_rule_still_answers_first_on_a_dynamic_stub(tmp_path):
    (tmp_path / "fixed.yaml").write_text("rules:\n  - match: {path: /plants}\n    reply: {status: 200, body: {name: Rule}}\n")
    with Stub(scenarios=tmp_path, scenario="fixed", dynamic=True, seed=1) as stub:
        assert call(stub.url, "POST", "/plants", {"id": 1, "name": "Fern"}) == (200, {"name": "Rule"})
