"""--stateful: records that are a choice of objects (issue 25): PagerDuty's `{"action": {"oneOf": [...]}}` envelope
and Discord's rules, a `oneOf` whose branches have the key field (`id` for `{rule_id}`). `plantstub serve --stateful`
over tests/data/specs/store-choices.yaml, raw HTTP: created records are read back and listed, the fields every
branch requires are filled, every answer valid against the declared schema (jsonschema)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import yaml

from tests.helpers import SPECS, ServeProcess, call

SPEC = SPECS / "store-choices.yaml"
DOC = yaml.safe_load(SPEC.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    serve = ServeProcess("--spec", str(SPEC), "--port", "0", "--stateful",
                         "--scenarios", str(tmp_path_factory.mktemp("scenarios")))
    yield serve.url
    serve.stop()


@pytest.fixture
def url(served):
    assert call(served, "POST", "/__plantstub/reset")[0] == 200
    return served


def valid(path: str, method: str, status: int, body: Any) -> Any:
    """`body`, checked against the answer the document declares for `method path` and `status`."""
    content = DOC["paths"][path][method]["responses"][str(status)]["content"]
    root = {**next(iter(content.values()))["schema"], "components": DOC["components"]}
    checker = jsonschema.Draft202012Validator(root, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    assert [f"{list(e.absolute_path)}: {e.message}" for e in checker.iter_errors(body)] == [], body
    return body


def test_a_choice_of_objects_in_an_envelope_is_answered_in_it_and_read_back(url):
    sent = {"action": {"name": "restart", "action_type": "job", "job_id": "J1"}}
    status, created = call(url, "POST", "/actions", sent)
    assert status == 201, created
    action = valid("/actions", "post", 201, created)["action"]
    assert {k: action[k] for k in ("name", "action_type", "job_id")} == sent["action"]
    status, read = call(url, "GET", f"/actions/{action['id']}")
    assert status == 200, read
    assert valid("/actions/{id}", "get", 200, read) == created


def test_the_key_field_of_a_choice_is_found_in_its_branches_and_each_answer_keeps_them(url):
    status, created = call(url, "POST", "/rules", {"name": "spam", "trigger_type": 3})
    assert status == 200, created
    valid("/rules", "post", 200, created)
    assert "rule_id" not in created
    status, read = call(url, "GET", f"/rules/{created['id']}")
    assert status == 200, read
    assert valid("/rules/{rule_id}", "get", 200, read) == created
    status, listed = call(url, "GET", "/rules")
    assert status == 200, listed
    assert valid("/rules", "get", 200, listed) == [created]
