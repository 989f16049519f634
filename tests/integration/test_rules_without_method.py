"""A rule without `method:` answers only the operations its replies fit (issue 24): the repository's scenarios serve
under plant-store-full, as the Docker image serves them, and the operations a rule leaves out get their own answers
(`plantstub check` of such rules: tests/integration/test_cli_check.py)."""

from __future__ import annotations

import pytest

from tests.helpers import JSON_AUTH, REPO, call, write

ANY_PLANT = "validate_requests: false\nrules:\n  - match: {path: /plants}\n    reply: {status: 200, body: {name: Any}}\n"


def test_serve_repo_scenarios_under_the_full_spec(serve):
    stub = serve("--spec", "plant-store-full", "--scenarios", str(REPO / "scenarios"), "--scenario", "product-example",
                 "--port", "0")
    assert call(stub.url, "POST", "/plants", {"id": 1, "name": "Ivy", "tag": "poison"}, JSON_AUTH) == (200, {"name": "Ivy"})
    status, listed = call(stub.url, "GET", "/plants", headers={"Authorization": "Bearer t"})
    assert status == 200 and isinstance(listed, list)


@pytest.mark.parametrize("where", ["scenario", "rule from code"])
def test_rule_without_method_leaves_the_operations_it_does_not_fit_alone(serve, tmp_path, where):
    write(tmp_path, "any-plant.yaml", ANY_PLANT)
    stub = serve("--spec", "plant-store-full", "--scenarios", str(tmp_path), "--port", "0",
                 *(["--scenario", "any-plant"] if where == "scenario" else []))
    if where == "rule from code":
        rule = {"match": {"path": "/plants"}, "reply": {"status": 200, "body": {"name": "Any"}}}
        assert call(stub.url, "POST", "/__plantstub/rules", rule)[0] == 201
    assert call(stub.url, "POST", "/plants", {"id": 1, "name": "Fern"}, JSON_AUTH) == (200, {"name": "Any"})
    # GET /plants declares a list: the rule's object is not its answer, with or without request checks
    status, listed = call(stub.url, "GET", "/plants", headers={"Authorization": "Bearer t"})
    assert status == 200 and isinstance(listed, list)
    [_, got] = call(stub.url, "GET", "/__plantstub/calls")  # type: ignore[misc]
    assert [(c["method"], c["rule"]) for c in got] == [("POST", "rules[0]" if where == "scenario" else "r1"),  # type: ignore[index]
                                                       ("GET", None)]
