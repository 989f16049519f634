"""--stateful: every created record can be read back (issue 25). `plantstub serve --stateful` over
tests/data/specs/store-keys.yaml, raw HTTP: the create answer shows the key a client reads the record back by, and
every answer is valid against the schema the document declares for it (jsonschema)."""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

from tests.helpers import JSON_AUTH, call
from tests.store.stateful_doc import StatefulDoc

DOC = StatefulDoc("store-keys.yaml")
served, url = DOC.fixtures()


valid = DOC.valid


def roundtrip(url: str, collection: str, item: str, sent: dict, key_of: Any) -> tuple[Any, Any]:
    """POST `sent`, read the key from the answer with `key_of`, GET the item by it: (created, read), both valid."""
    status, created = call(url, "POST", collection, sent)
    assert status in (200, 201), created
    valid(collection, "post", status, created)
    key = key_of(created)
    status, read = call(url, "GET", f"{collection}/{key}")
    assert status == 200, read
    return created, valid(item, "get", 200, read)


def test_key_field_named_as_the_parameter_in_another_case(url):
    created, read = roundtrip(url, "/services", "/services/{Sid}", {"FriendlyName": "chat"}, lambda a: a["sid"])
    assert re.fullmatch("IS[0-9a-fA-F]{32}", created["sid"])
    assert read == created


def test_key_field_the_parameter_ends_with_inside_a_wrapper_sent_and_answered(url):
    created, read = roundtrip(url, "/allocations", "/allocations/{allocation_gid}", {"data": {"name": "a"}},
                              lambda a: a["data"]["gid"])
    assert created == read == {"data": {"gid": "1", "name": "a"}}
    state = call(url, "GET", "/__plantstub/state")[1]
    assert state["/allocations"] == [{"gid": "1", "name": "a"}]


def test_record_in_one_property_of_an_answer_of_several(url):
    created, read = roundtrip(url, "/Employees", "/Employees/{EmployeeID}", {"firstName": "Ada"},
                              lambda a: a["employee"]["employeeID"])
    assert created["employee"] == {"employeeID": "00000000-0000-4000-8000-000000000001", "firstName": "Ada"}
    assert read["employee"] == created["employee"]


def test_sent_key_the_item_path_refuses_is_replaced_by_one_it_takes(url):
    created, read = roundtrip(url, "/mappings", "/mappings/{id}", {"id": "x", "label": "a"}, lambda a: a["id"])
    assert created == read == {"id": "1", "label": "a"}
    created, read = roundtrip(url, "/mappings", "/mappings/{id}", {"id": "7", "label": "b"}, lambda a: a["id"])
    assert created == read == {"id": "7", "label": "b"}  # a key the path takes is the client's


def test_key_field_is_the_answers_before_a_body_field_named_as_the_parameter(url):
    created, read = roundtrip(url, "/stages", "/stages/{stageId}", {"label": "a"}, lambda a: a["id"])
    assert created == read == {"id": "1", "label": "a"}


def test_create_with_no_body_stores_a_record_read_back_by_its_key(url):
    request = urllib.request.Request(url + "/conversations", method="POST", headers=JSON_AUTH)
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 201
        created = valid("/conversations", "post", 201, json.loads(response.read()))
    assert re.fullmatch("CH0{31}1", created["sid"])  # assigned, not the default answer's generated sid
    status, read = call(url, "GET", f"/conversations/{created['sid']}")
    assert (status, valid("/conversations/{Sid}", "get", 200, read)) == (200, created)
    assert call(url, "GET", "/__plantstub/state")[1]["/conversations"] == [created]


def test_create_from_a_form_body_is_read_back(url):
    request = urllib.request.Request(url + "/conversations", data=b"FriendlyName=chat", method="POST",
                                     headers={**JSON_AUTH, "Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(request, timeout=10) as response:
        created = valid("/conversations", "post", 201, json.loads(response.read()))
    status, read = call(url, "GET", f"/conversations/{created['sid']}")
    assert (status, read) == (200, created)
    assert call(url, "GET", "/__plantstub/state")[1]["/conversations"][0]["FriendlyName"] == "chat"


def test_assigned_key_keeps_a_pattern_that_the_counter_in_its_tail_would_break(url):
    keys = [roundtrip(url, "/tools", "/tools/{id}", {"name": n}, lambda a: a["id"])[1]["id"] for n in "ab"]
    assert len(set(keys)) == 2 and all(k.startswith("aia_tool_") for k in keys), keys


def test_record_in_the_one_object_property_beside_a_field_named_as_a_record_field(url):
    created, read = roundtrip(url, "/bills", "/bills/{id}", {"status": "paid", "total": 3.5},
                              lambda a: a["data"]["id"])
    assert created["data"] == {"id": "1"}
    assert read["data"] == {"id": "1", "status": "paid", "total": 3.5}
