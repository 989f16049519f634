"""--stateful: the create/read pairs issue 42's sweep found misbehaving, one resource each of
tests/data/specs/store-issue42.yaml, through `plantstub serve --stateful`: every answer valid against what the
document declares (jsonschema), and each created record read back by the key a client finds in the create."""

from __future__ import annotations

from typing import Any

from tests.helpers import call
from tests.store.stateful_doc import StatefulDoc

DOC = StatefulDoc("store-issue42.yaml")
served, url = DOC.fixtures()


def created_and_read(url: str, collection: str, item: str, sent: dict[str, Any], status: int, key_of: Any) -> tuple:
    got, created = call(url, "POST", collection, sent)
    assert got == status, created
    DOC.valid(collection, "post", status, created)
    key = key_of(created)
    got, read = call(url, "GET", f"{collection}/{key}")
    assert got == 200, read
    return created, DOC.valid(item, "get", 200, read)


def test_a_create_answering_a_string_answers_the_new_key(url):
    created, read = created_and_read(url, "/tokens", "/tokens/{tokenId}", {"label": "a"}, 201, lambda key: key)
    assert (created, read) == ("1", {"tokenId": "1", "label": "a"})


def test_a_create_answering_an_integer_answers_the_new_key_as_one(url):
    created, read = created_and_read(url, "/counters", "/counters/{id}", {"start": 3}, 200, lambda key: key)
    assert (created, read) == (1, {"id": 1, "start": 3})


def test_a_key_sent_under_the_parameters_name_is_the_key_the_answers_spell_otherwise(url):
    created, read = created_and_read(url, "/accounts", "/accounts/{id}", {"id": "acc-1", "name": "A"}, 201,
                                     lambda answer: answer["Id"])
    assert created == read == {"Id": "acc-1", "name": "A"}
    assert call(url, "GET", "/__plantstub/state")[1]["/accounts"] == [{"Id": "acc-1", "name": "A"}]


def test_an_id_the_answers_show_beside_another_key_field_is_that_key(url):
    created, read = created_and_read(url, "/users", "/users/{username}", {"username": "bob", "email": "b@x"}, 201,
                                     lambda answer: answer["id"])
    assert (created, read) == ({"id": "bob"}, {"id": "bob", "username": "bob", "email": "b@x"})


def test_a_required_field_not_under_properties_is_kept_in_answers(url):
    created, read = created_and_read(url, "/notes", "/notes/{id}", {"text": "t"}, 201, lambda answer: answer["id"])
    assert created == read and "createdAt" in created


def test_a_key_field_that_is_an_object_is_refused_saying_so(url):
    status, refused = call(url, "POST", "/refs", {"name": "r"})
    assert (status, refused["message"]) == (409, "body.id: the records are keyed by id, which the document makes "
                                                 "object: no path /refs/{id} names such a key, so the store can keep "
                                                 "no record here")
