"""--stateful: records that are a choice of objects (issue 25): PagerDuty's `{"action": {"oneOf": [...]}}` envelope
and Discord's rules, a `oneOf` whose branches have the key field (`id` for `{rule_id}`). `plantstub serve --stateful`
over tests/data/specs/store-choices.yaml, raw HTTP: created records are read back and listed, the fields every
branch requires are filled, every answer valid against the declared schema (jsonschema)."""

from __future__ import annotations

from tests.helpers import call
from tests.store.stateful_doc import StatefulDoc

DOC = StatefulDoc("store-choices.yaml")
served, url = DOC.fixtures()


valid = DOC.valid


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
