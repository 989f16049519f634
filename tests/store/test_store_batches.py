"""--stateful: records sent and answered in an array (issue 25, Xero's `{"Contacts": [{...}]}` and a bare `[{...}]`
answered `{"Employees": [{...}]}`). `plantstub serve --stateful` over tests/data/specs/store-batches.yaml, raw HTTP:
each record of the array is created, the answer shows them in the envelope's array, a read shows its record in it,
every answer valid against the declared schema (jsonschema)."""

from __future__ import annotations

from tests.helpers import call
from tests.store.stateful_doc import StatefulDoc

DOC = StatefulDoc("store-batches.yaml")
served, url = DOC.fixtures()


valid = DOC.valid


def test_each_record_of_an_envelopes_array_is_created_and_read_back_in_it(url):
    status, created = call(url, "POST", "/Contacts", {"Contacts": [{"Name": "Ada"}, {"Name": "Bo"}]})
    assert status == 200, created
    valid("/Contacts", "post", 200, created)
    names = [c["Name"] for c in created["Contacts"]]
    assert names == ["Ada", "Bo"]
    for record in created["Contacts"]:
        status, read = call(url, "GET", f"/Contacts/{record['ContactID']}")
        assert status == 200, read
        assert valid("/Contacts/{ContactID}", "get", 200, read)["Contacts"] == [record]
    status, listed = call(url, "GET", "/Contacts")
    assert status == 200, listed
    assert valid("/Contacts", "get", 200, listed)["Contacts"] == created["Contacts"]


def test_records_sent_as_a_bare_array_are_answered_in_the_envelope(url):
    status, created = call(url, "POST", "/Employees", [{"FirstName": "Ada"}])
    assert status == 200, created
    (record,) = valid("/Employees", "post", 200, created)["Employees"]
    assert record["FirstName"] == "Ada"
    status, read = call(url, "GET", f"/Employees/{record['EmployeeID']}")
    assert status == 200, read
    assert valid("/Employees/{EmployeeID}", "get", 200, read) == {"Employees": [record]}
    state = call(url, "GET", "/__plantstub/state")[1]
    assert state["/Employees"] == [record]


def test_a_refused_record_of_the_array_takes_back_the_ones_before_it(url):
    status, created = call(url, "POST", "/Employees", [{"FirstName": "Ada"}])
    key = created["Employees"][0]["EmployeeID"]
    status, refused = call(url, "POST", "/Employees", [{"FirstName": "Bo"}, {"FirstName": "Cy", "EmployeeID": key}])
    assert status == 409, refused
    assert f"already has EmployeeID '{key}'" in refused["message"]
    state = call(url, "GET", "/__plantstub/state")[1]
    assert [r["FirstName"] for r in state["/Employees"]] == ["Ada"]


def test_an_empty_array_creates_nothing_and_answers_the_empty_envelope(url):
    status, created = call(url, "POST", "/Employees", [])
    assert status == 200, created
    assert valid("/Employees", "post", 200, created) == {"Employees": []}
    assert call(url, "GET", "/__plantstub/state")[1]["/Employees"] == []


def test_an_array_field_beside_a_records_text_fields_is_the_records_own(url):
    sent = {"name": "night", "policies": [{"level": 1, "wait": 5, "notify": "ops"}]}
    status, created = call(url, "POST", "/policies", sent)
    assert status == 200, created
    assert valid("/policies", "post", 200, created) == {"id": "1", **sent}
    status, read = call(url, "GET", "/policies/1")
    assert status == 200, read
    assert read == created
