"""`plantstub check` and `plantstub schema` as a user runs them: a real process, exit codes, exact output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from plantstub.scenarios.load import builtin_folder, scenario_schema
from tests.helpers import REPO, SCENARIO_DATA, TREES, write

BUILTIN = builtin_folder()



def plantstub(*args: str, cwd: Path = SCENARIO_DATA, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PLANTSTUB_")}
    return subprocess.run(
        [sys.executable, "-m", "plantstub", *args], capture_output=True, text=True, cwd=cwd,
        env={**environ, **(env or {})}, timeout=60,
    )


def test_cli_check_good_folder_exits_0():
    result = plantstub("check", "good")
    assert (result.returncode, result.stdout, result.stderr) == (0, "plantstub: 4 scenarios OK\n", "")


def test_cli_check_prints_each_error_and_a_summary_and_exits_1():
    result = plantstub("check", "good", "broken/unknown-key.yaml", "broken/status-not-declared.yaml", "nowhere.yaml")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "broken/unknown-key.yaml:7: rules[0].match: unknown key 'heders' (did you mean 'headers'?)",
        "broken/status-not-declared.yaml:8: rules[0].replies[1].status: 418 is not declared for POST /plants"
        " (declared: 200, 400); add `off_contract: true` to this rule to serve it anyway",
        "nowhere.yaml: no such file or folder",
        "plantstub: 3 errors in 3 files",
    ]


# Issue 24: a rule without `method:` answers only the operations its replies fit; one that fits none is refused.
def test_cli_check_repo_scenarios_under_the_full_spec_notes_the_narrowed_rule():
    scenarios = REPO / "scenarios"
    result = plantstub("check", "--spec", "plant-store-full", str(scenarios))
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [
        f"plantstub: note: {scenarios / 'product-example.yaml'}:16: rules[1]: answers only POST /plants; its replies "
        "do not fit GET /plants, whose requests go on to the next rules (add `method:` to say which operation it is for)",
        "plantstub: 1 scenario OK",
    ]


def test_cli_check_rule_without_method_that_fits_no_operation_is_refused(tmp_path):
    write(tmp_path, "bad.yaml", "rules:\n  - match: {path: /plants}\n    reply: {status: 200, body: {name: 5}}\n")
    result = plantstub("check", "--spec", "plant-store-full", "bad.yaml", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        "bad.yaml:3: rules[0].reply.body: {'name': 5} is not of type 'array' (GET /plants response 200)",
        "bad.yaml:3: rules[0].reply.body.name: 5 is not of type 'string' (POST /plants response 200)",
        "plantstub: 2 errors in 1 file",
    ]


def test_cli_check_folder_with_duplicates():
    result = plantstub("check", "duplicates")
    assert (result.returncode, result.stderr.splitlines()[-1]) == (1, "plantstub: 1 error in 1 file")


def test_cli_check_repo_scenarios():
    # Not from the repository root: `python -m plantstub` there would import the source tree, not the install.
    result = plantstub("check", str(REPO / "scenarios"))
    assert (result.returncode, result.stdout, result.stderr) == (0, "plantstub: 1 scenario OK\n", "")
    result = plantstub("check", str(BUILTIN))
    assert (result.returncode, result.stdout, result.stderr) == (0, "plantstub: 4 scenarios OK\n", "")


@pytest.mark.parametrize("how", ["flag", "env"])
def test_cli_check_spec_from_flag_or_environment(tmp_path, how):
    spec = write(tmp_path, "trees.yaml", TREES)
    write(tmp_path, "felled.yaml", "rules:\n  - match: {method: DELETE, path: /trees/7}\n    reply: {status: 204}\n")
    assert plantstub("check", str(tmp_path / "felled.yaml")).stderr.splitlines()[0] == (
        f"{tmp_path}/felled.yaml:2: rules[0].match.path: /trees/7 matches no path in the spec (paths: /plants)"
    )
    args, env = (["--spec", str(spec)], None) if how == "flag" else ([], {"PLANTSTUB_SPEC": str(spec)})
    result = plantstub("check", *args, str(tmp_path / "felled.yaml"), env=env)
    assert (result.returncode, result.stdout) == (0, "plantstub: 1 scenario OK\n")


def test_cli_check_empty_folder_and_usage(tmp_path):
    result = plantstub("check", str(tmp_path))
    assert (result.returncode, result.stderr.splitlines()) == (
        1, [f"{tmp_path}: no scenario files here (*.yaml, *.yml)", "plantstub: 1 error in 1 file"]
    )
    assert plantstub("check").returncode == 2


def test_cli_check_bad_spec_exits_1(tmp_path):
    result = plantstub("check", "--spec", str(tmp_path / "missing.yaml"), "good")
    assert result.returncode == 1
    assert result.stderr.startswith(f"plantstub: cannot use spec {tmp_path / 'missing.yaml'}")


def test_cli_schema_prints_a_valid_json_schema_that_the_examples_fit():
    result = plantstub("schema")
    assert result.returncode == 0
    schema = json.loads(result.stdout)
    assert schema == scenario_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    examples = [*sorted((REPO / "scenarios").glob("*.yaml")), *sorted(BUILTIN.glob("*.yaml")),
                *sorted((SCENARIO_DATA / "good").glob("*.y*ml"))]
    assert len(examples) == 9
    for path in examples:
        assert list(validator.iter_errors(yaml.safe_load(path.read_text()))) == [], path


def test_cli_check_refuses_a_20000_rule_file_at_the_line_where_it_passes_the_values_it_may_hold(tmp_path):
    # Each rule holds 10 values: the 100,000th is on rule 10,000's line. It used to be composed whole first (9 s)
    # and refused with no line, as "(aliases expanded)" though the file has no alias.
    rules = "".join(f"  - match: {{method: POST, path: /plants, body: {{name: n{i}}}}}\n"
                    f"    reply: {{status: 200, body: {{name: r{i}}}}}\n" for i in range(20_000))
    write(tmp_path, "many.yaml", "description: many\nrules:\n" + rules)
    result = plantstub("check", "many.yaml", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        "many.yaml:20002: too large: more than the 100,000 values plantstub reads in one file (each list item and "
        "mapping value counts); split it into several files",
        "plantstub: 1 error in 1 file",
    ]


def test_cli_check_a_path_of_no_spec_names_ten_paths_and_the_closest(tmp_path):
    # A spec of 30 paths (the 20 MB specs users load have 12,000): the message names ten, counts the rest and
    # offers the closest, so a line stays a line.
    paths = {f"/group{n}/items": {"get": {"responses": {"200": {"description": "ok"}}}} for n in range(30)}
    write(tmp_path, "groups.json", json.dumps({"openapi": "3.0.3", "info": {"title": "t", "version": "1"},
                                               "paths": paths}))
    write(tmp_path, "typo.yaml", "rules:\n  - match: {method: GET, path: /group17/itemz}\n    reply: {status: 200}\n")
    result = plantstub("check", "--spec", str(tmp_path / "groups.json"), str(tmp_path / "typo.yaml"))
    ten = ", ".join(f"/group{n}/items" for n in range(10))
    assert (result.returncode, result.stderr.splitlines()[0]) == (1, (
        f"{tmp_path}/typo.yaml:2: rules[0].match.path: /group17/itemz matches no path in the spec (paths: {ten} and "
        "20 more); did you mean '/group17/items'?"))


def test_cli_check_tells_the_spec_s_problems_and_the_schema_s_in_one_run(tmp_path):
    """A rule the scenario schema refuses does not hide what the spec says of the others: one run tells every
    problem (the broken rule is checked against the spec once it is mended)."""
    write(tmp_path, "mixed.yaml", (
        "description: 3\n"
        "rules:\n"
        "  - match: {method: POST, path: /plants}\n"
        "    reply: {status: 201, bodyy: {}}\n"
        "  - match: {method: GET, path: /nowhere}\n"
        "    reply: {status: 200}\n"
        "  - match: {method: POST, path: /plants}\n"
        "    reply: {status: 418}\n"
        "state: {plants: 5}\n"))
    result = plantstub("check", "mixed.yaml", cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == "mixed.yaml:1: description: 3 is not of type 'string'"
    assert lines[1] == "mixed.yaml:4: rules[0].reply: unknown key 'bodyy' (did you mean 'body'?)"
    assert lines[2].startswith("mixed.yaml:5: rules[1].match.path: /nowhere matches no path in the spec")
    assert lines[3].startswith("mixed.yaml:8: rules[2].reply.status: 418 is not declared for POST /plants")
    assert lines[4].startswith("mixed.yaml:9: state")
    assert lines[5:] == ["plantstub: 5 errors in 1 file"]
    assert not any("rules[0].reply.status" in line for line in lines)  # the refused rule waits until it is mended
