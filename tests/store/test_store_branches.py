"""--stateful: records answered as a choice of objects whose branch the record must be shown in (issue 25): Qovery's
credentials (the branch told by the fields the record has, its `object_type` filled, a closed branch's extra fields
left out of the answer), Discord's rules (`trigger_metadata: {}` sent, the branch's required fields nested in it
filled). `plantstub serve --stateful` over tests/data/specs/store-branches.yaml, raw HTTP, every answer valid against
the declared schema (jsonschema)."""

from __future__ import annotations

import pytest

from tests.helpers import call
from tests.store.stateful_doc import StatefulDoc

DOC = StatefulDoc("store-branches.yaml")
served, url = DOC.fixtures()


valid = DOC.valid


def test_a_record_is_shown_in_the_branch_its_fields_tell_with_that_branchs_fields(url):
    status, created = call(url, "POST", "/credentials", {"type": "ROLE", "name": "ci", "role_arn": "arn:x"})
    assert status == 201, created
    valid("/credentials", "post", 201, created)
    assert created["object_type"] == "ROLE" and created["role_arn"] == "arn:x"
    assert "type" not in created  # the branch forbids other fields: left out of the answer only
    status, read = call(url, "GET", f"/credentials/{created['id']}")
    assert status == 200, read
    assert valid("/credentials/{credentialsId}", "get", 200, read) == created
    status, listed = call(url, "GET", "/credentials")
    assert status == 200, listed
    assert valid("/credentials", "get", 200, listed) == {"results": [created]}
    state = call(url, "GET", "/__plantstub/state")[1]
    assert state["/credentials"][0]["type"] == "ROLE"  # the record keeps what was sent


def test_another_branch_for_another_record_and_after_a_replace(url):
    status, created = call(url, "POST", "/credentials", {"type": "STATIC", "name": "ci", "access_key": "AK"})
    assert status == 201, created
    assert valid("/credentials", "post", 201, created)["object_type"] == "STATIC"
    assert created["type"] == "STATIC"  # an open branch shows the record's other fields
    status, put = call(url, "PUT", f"/credentials/{created['id']}", {"type": "STATIC", "name": "cd", "access_key": "B"})
    assert status == 200, put
    assert valid("/credentials/{credentialsId}", "put", 200, put)["name"] == "cd"
    status, put = call(url, "PUT", f"/credentials/{created['id']}", {"type": "ROLE", "name": "r", "role_arn": "a"})
    assert status == 200, put
    assert valid("/credentials/{credentialsId}", "put", 200, put) == {
        "id": created["id"], "name": "r", "role_arn": "a", "object_type": "ROLE"}  # the old branch's value not kept


@pytest.mark.parametrize(("trigger", "sent"), [(4, {}), (1, {"keywords": ["spam"]}), (4, None)])
def test_required_fields_nested_in_the_chosen_branch_are_filled_and_kept(url, trigger, sent):
    body = {"name": "r", "trigger_type": trigger, **({} if sent is None else {"trigger_metadata": sent})}
    status, created = call(url, "POST", "/rules", body)
    assert status == 200, created
    valid("/rules", "post", 200, created)
    assert created["trigger_type"] == trigger
    if sent:
        assert created["trigger_metadata"] == sent
    status, read = call(url, "GET", f"/rules/{created['id']}")
    assert status == 200, read
    assert valid("/rules/{rule_id}", "get", 200, read) == created
    status, patched = call(url, "PATCH", f"/rules/{created['id']}", {"name": "s"})
    assert status == 200, patched
    assert valid("/rules/{rule_id}", "patch", 200, patched) == {**created, "name": "s"}
    status, listed = call(url, "GET", "/rules")
    assert valid("/rules", "get", 200, listed) == [{**created, "name": "s"}]


def test_a_record_valid_under_one_branch_as_sent_is_left_as_it_is(url):
    """Branches that overlap (Okta's apps): filling the first would make the record valid under both."""
    sent = {"name": "n", "mode": "m", "settings": {"text": "t"}}
    status, created = call(url, "POST", "/entries", sent)
    assert status == 201, created
    assert valid("/entries", "post", 201, created) == {"id": created["id"], **sent}
    status, read = call(url, "GET", f"/entries/{created['id']}")
    assert valid("/entries/{id}", "get", 200, read) == created
