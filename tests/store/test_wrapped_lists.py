"""--stateful lists wrapped in an object (issue 25): `plantstub serve --stateful` over tests/data/specs/wrapped-lists.yaml,
raw HTTP, each answer validated with jsonschema against the schema the document declares for it."""

from __future__ import annotations

import pytest

from tests.helpers import SPECS, ServeProcess, call
from tests.store.stateful_doc import StatefulDoc

DOC = StatefulDoc("wrapped-lists.yaml")
served, url = DOC.fixtures()


def listed(url: str, path: str, query: str = "") -> dict:
    """GET a list; its answer, checked against the declared 200 schema."""
    status, body = call(url, "GET", path + query)
    assert status == 200, body
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in DOC.declared(path).iter_errors(body)]
    assert errors == [], body
    return body


def create(url: str, path: str, *bodies: dict) -> list:
    made = []
    for body in bodies:
        status, answer = call(url, "POST", path, body)
        assert status in (200, 201), answer
        made.append(answer)
    return made


def test_stripe_list_shows_data_has_more_and_generated_required_fields(url):
    charges = create(url, "/v1/charges", *({"amount": n, "currency": "eur"} for n in (5, 6, 7)))
    assert [c["id"] for c in charges] == ["1", "2", "3"]
    page = listed(url, "/v1/charges", "?limit=2")
    assert page == {"data": charges[:2], "has_more": True, "object": "list", "url": "/v1/charges"}
    assert listed(url, "/v1/charges", "?limit=3")["has_more"] is False
    assert listed(url, "/v1/charges") == {**page, "data": charges, "has_more": False}
    assert call(url, "GET", "/v1/charges/2") == (200, charges[1])


def test_items_and_total_with_limit_offset_and_filters(url):
    things = create(url, "/things", {"name": "a", "color": "red"}, {"name": "b"}, {"name": "c", "color": "red"},
                    {"name": "d"})
    assert listed(url, "/things", "?limit=2&offset=1") == {"items": things[1:3], "total": 4, "limit": 2, "offset": 1}
    assert listed(url, "/things") == {"items": things, "total": 4, "offset": 0}  # limit: nothing applied, optional
    # the total counts what the filters keep, before the page; limit 0 breaks `limit`'s minimum 1: left out
    assert listed(url, "/things", "?color=red&offset=1") == {"items": [things[2]], "total": 2, "offset": 1}
    assert listed(url, "/things", "?color=red&limit=0") == {"items": [], "total": 2, "offset": 0}
    assert listed(url, "/things", "?offset=9") == {"items": [], "total": 4, "offset": 9}


def test_page_and_page_size_with_count_and_null_links(url):
    books = create(url, "/books", *({"title": f"B{n}"} for n in range(1, 6)))
    empty = {"count": 5, "next": None, "previous": None}
    assert listed(url, "/books") == {**empty, "results": books}  # no page asked: every record
    assert listed(url, "/books", "?page=2") == {**empty, "results": books[2:4]}  # page_size's default: 2
    assert listed(url, "/books", "?page=3") == {**empty, "results": books[4:]}
    assert listed(url, "/books", "?page=4") == {**empty, "results": []}
    assert listed(url, "/books", "?page=2&page_size=3") == {**empty, "results": books[3:]}
    assert listed(url, "/books", "?page_size=1") == {**empty, "results": books[:1]}


def test_page_without_a_size_holds_every_record_on_page_one(url):
    people = create(url, "/people", *({"name": f"P{n}"} for n in range(1, 4)))
    whole = {"@odata.context": "string", "@odata.count": 3}  # nextLink: optional and not nullable, left out
    assert listed(url, "/people") == {**whole, "value": people}
    assert listed(url, "/people", "?page=1") == {**whole, "value": people}
    assert listed(url, "/people", "?page=2") == {**whole, "value": []}  # so a client paging to the end stops
    assert listed(url, "/people", "?page=2&per_page=2") == {**whole, "value": people[2:]}


def test_two_arrays_of_records_the_conventional_name_holds_them(url):
    shelves = create(url, "/shelves", {"name": "Oak"}, {"name": "Pine"})
    answer = listed(url, "/shelves")
    assert answer["data"] == shelves
    assert answer["featured"] != shelves and answer["facets"] == [{"label": "string"}]  # generated, as required
    assert answer["itemsTotal"] == 2  # a count, filled though optional (Adyen's name)
    assert "warnings" not in answer and "pagesTotal" not in answer  # optional, not a count of records


def test_two_arrays_of_records_the_one_named_as_the_collection_holds_them(url):
    authors = create(url, "/authors", {"name": "Austen"})
    answer = listed(url, "/authors")  # the wrapper is an allOf of a $ref and an object
    assert answer["authors"] == authors
    assert set(answer) == {"request_id", "authors"}


@pytest.mark.parametrize("path", ["/orders", "/notes"], ids=["hal-embedded", "two-arrays-no-name"])
def test_unsupported_wrappers_keep_the_default_answer(url, path):
    default = listed(url, path)
    create(url, path, {"item": "Rare plant"} if path == "/orders" else {"text": "Rare plant"})
    assert listed(url, path) == default
    assert "Rare plant" not in str(default)


def test_an_object_where_nothing_creates_records_is_no_list(url):
    default = listed(url, "/status")
    assert default == {"checks": [{"name": "string"}]}
    assert call(url, "PUT", "/__plantstub/state", {"/status": []})[0] == 400  # not a collection
    assert listed(url, "/status") == default


def test_a_page_size_of_zero_counts_as_none_sent(url):
    people = create(url, "/people", *({"name": f"P{n}"} for n in range(1, 4)))
    whole = {"@odata.context": "string", "@odata.count": 3}
    assert listed(url, "/people", "?page=1&per_page=0") == {**whole, "value": people}  # not an endless empty page
    assert listed(url, "/people", "?page=2&per_page=0") == {**whole, "value": []}


def test_a_wrapper_no_value_satisfies_keeps_the_default_answer(tmp_path):
    """Its required `next` is a Link that requires a Link: no answer is valid, so the list is not served from the
    store (which answered an invalid 200, found in review); the default answer's 501 names the contradiction."""
    stub = ServeProcess("--spec", str(SPECS / "wrapped-unsatisfiable.yaml"), "--port", "0", "--stateful",
                        "--scenarios", str(tmp_path))
    try:
        assert call(stub.url, "POST", "/things", {"name": "a"})[0] == 201
        status, body = call(stub.url, "GET", "/things")
    finally:
        stub.stop()
    assert status == 501, body
    assert "no value" in body["message"] and "Link" in body["message"]
