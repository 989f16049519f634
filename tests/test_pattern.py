"""One request pattern, one coercion: the same criteria mean the same to a rule (`stub.when`), `assert_called`,
`wait_for_calls` and the admin API's `POST calls/wait` and `GET calls`, against the same calls."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from multidict import CIMultiDict, CIMultiDictProxy

from plantstub import CallAssertionError, Stub
from plantstub._json import MISSING
from plantstub.matching import Mismatch, as_text, expected_text
from plantstub.pattern import RequestPattern
from tests.helpers import JSON_AUTH


# -- the coercion ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "text"),
    [("true", "true"), (True, "true"), (False, "false"), (None, "null"), (2, "2"), (2.5, "2.5"), (2.0, "2.0"),
     (-0.5, "-0.5"), (10**20, "100000000000000000000"), ({"$regex": "^a"}, {"$regex": "^a"}), ([1, True], ["1", "true"])],
    ids=["text", "true", "false", "null", "int", "float", "float-integral", "negative", "big", "matcher", "list"],
)
def test_expected_text_writes_values_as_json_does(value, text):
    assert expected_text(value) == text


def test_as_text_is_none_for_what_is_no_text():
    assert (as_text([1]), as_text({"a": 1}), as_text(7), as_text(True)) == (None, None, "7", "true")


# -- the pattern ----------------------------------------------------------------------------------
HEADERS = CIMultiDictProxy(CIMultiDict([("X-Flag", "true"), ("X-Tag", "a"), ("X-Tag", "b")]))


@pytest.mark.parametrize(
    ("pattern", "misses"),
    [
        (RequestPattern.of("post", "/plants/{id}"), []),
        (RequestPattern.of(headers={"x-FLAG": True}), []),
        (RequestPattern.of(headers={"X-Flag": "True"}), [Mismatch("headers.X-Flag", "True", "true")]),
        (RequestPattern.of(headers={"X-Tag": ["a", "b"]}), []),
        (RequestPattern.of(headers={"X-Gone": {"$absent": True}}), []),
        (RequestPattern.of(query={"page": 2}), []),
        (RequestPattern.of(query={"page": [2, 3]}), []),
        (RequestPattern.of(query={"page": 3}), [Mismatch("query.page", "3", "2")]),
        (RequestPattern.of(body={"id": {"$regex": "^7$"}, "on": {"$regex": "^t"}}), []),
        (RequestPattern.of(status=201), [Mismatch("status", 201, 200)]),
        (RequestPattern.of("GET", body={"id": 8}), [Mismatch("method", "GET", "POST"), Mismatch("body.id", 8, 7)]),
    ],
    ids=["method-path", "bool-header-any-case", "text-True", "repeated-header", "absent", "number-query",
         "repeated-query", "query-miss", "regex-on-json-numbers-and-booleans", "status", "two-fields"],
)
def test_request_pattern_mismatches(pattern, misses):
    query = {"page": ["2", "3"]}
    assert pattern.mismatches("POST", "/plants/7", HEADERS, query, {"id": 7, "on": True}, 200) == misses


def test_rows_show_every_field_looked_at_with_what_was_judged():
    pattern = RequestPattern.of("POST", headers={"X-Flag": False, "X-Gone": {"$present": True}},
                                query={"page": 2, "tag": ["a"]}, body={"id": 7})
    assert pattern.rows("POST", "/plants", HEADERS, {"page": ["2", "3"], "tag": "a"}, {"id": 7}) == [
        ("method", "POST", "POST", True),
        ("headers.X-Flag", "false", "true", False),
        ("headers.X-Gone", {"$present": True}, MISSING, False),
        ("query.page", "2", "2", True),  # the first value, as compared
        ("query.tag", ["a"], ["a"], True),  # a list: every value
        ("body", {"id": 7}, "matches", True),
    ]


# -- the four entry points agree ------------------------------------------------------------------
CALLS: list[tuple[str, dict[str, str], dict[str, Any]]] = [  # (query string, headers, body): all valid POST /plants
    ("?page=2", {"X-Flag": "true"}, {"id": 1, "name": "Cactus"}),
    ("?page=02", {"X-Flag": "True"}, {"id": 2, "name": "Fern", "tag": "spiky"}),
    ("?page=2.5", {"x-flag": "false", "X-Count": "3"}, {"id": 3, "name": "Cactus", "tag": "x"}),
    ("?page=2&page=3", {}, {"id": 4, "name": "Aloe"}),
]

CRITERIA: list[tuple[dict[str, Any], list[int]]] = [  # (criteria, the ids of the calls they match)
    ({"headers": {"X-Flag": True}}, [1]),
    ({"headers": {"x-flag": "true"}}, [1]),
    ({"headers": {"X-FLAG": False}}, [3]),
    ({"headers": {"X-Flag": "True"}}, [2]),
    ({"headers": {"X-Count": 3}}, [3]),
    ({"query": {"page": 2}}, [1, 4]),
    ({"query": {"page": 2.5}}, [3]),
    ({"query": {"page": {"$regex": "^0"}}}, [2]),
    ({"headers": {"X-Flag": {"$absent": True}}}, [4]),
    ({"headers": {"x-flag": {"$present": True}}, "body": {"name": "Cactus"}}, [1, 3]),
    ({"body": {"name": {"$contains": "act"}, "tag": {"$absent": True}}}, [1]),
    ({"body": {"id": {"$regex": "^[12]$"}}}, [1, 2]),
    ({"body": {"tag": {"$eq": "x"}}}, [3]),
    ({"method": "post", "path": "/plants"}, [1, 2, 3, 4]),
    ({"path": "/plants", "body": {"name": "Ivy"}}, []),
]


@pytest.fixture
def stub():
    with Stub() as running:
        yield running


def _send(url: str) -> None:
    for query, headers, body in CALLS:
        answer = requests.post(url + "/plants" + query, json=body, headers={**JSON_AUTH, **headers}, timeout=10)
        assert answer.status_code in (200, 400), answer.text


@pytest.mark.parametrize(("criteria", "ids"), CRITERIA, ids=[repr(c) for c, _ in CRITERIA])
def test_one_criterion_means_the_same_to_rules_assertions_waits_and_the_admin_api(stub, criteria, ids):
    stub.when(**criteria).reply(400, {"error": 1, "message": "the rule"})
    _send(stub.url)
    answered = [c.body["id"] for c in stub.calls if c.rule is not None]
    asserted = [c.body["id"] for c in stub.assert_called(**criteria, times=len(ids))] if ids else []
    if not ids:
        stub.assert_not_called(**criteria)
    waited = [c.body["id"] for c in stub.wait_for_calls(0, timeout=0, **criteria)]
    over_http = requests.post(stub.url + "/__plantstub/calls/wait", json={"n": 0, "timeout": 0, **criteria}, timeout=10)
    admin = [c["body"]["id"] for c in over_http.json()["calls"]]
    assert (answered, asserted, waited, admin) == (ids, ids, ids, ids)
    if set(criteria) <= {"method", "path"}:  # what GET calls filters on
        listed = requests.get(stub.url + "/__plantstub/calls", params=criteria, timeout=10).json()
        assert [c["body"]["id"] for c in listed] == ids


def test_status_means_the_same_to_assertions_waits_and_call_filters(stub):
    stub.when(body={"name": "Fern"}).reply(400, {"error": 1, "message": "the rule"})
    _send(stub.url)
    assert [c.body["id"] for c in stub.assert_called(status=400, times=1)] == [2]
    assert [c.body["id"] for c in stub.wait_for_calls(0, timeout=0, status=400)] == [2]
    over_http = requests.post(stub.url + "/__plantstub/calls/wait", json={"n": 0, "timeout": 0, "status": 400}, timeout=10)
    assert [c["body"]["id"] for c in over_http.json()["calls"]] == [2]
    listed = requests.get(stub.url + "/__plantstub/calls?status=400", timeout=10).json()
    assert [c["body"]["id"] for c in listed] == [2]
    stub.assert_not_called(status=500)


def test_assert_called_with_a_boolean_header_passes_where_the_rule_matched(stub):
    # The case that diverged: the rule matched `X-Flag: true`, the assertion wanted 'True'.
    stub.when(headers={"X-Flag": True}).reply(400, {"error": 1, "message": "flagged"})
    _send(stub.url)
    [found] = stub.assert_called("POST", "/plants", headers={"X-Flag": True}, times=1)
    assert found.rule is not None and found.body["id"] == 1


def test_a_near_miss_shows_the_expected_value_as_the_request_would_carry_it(stub):
    _send(stub.url)
    with pytest.raises(CallAssertionError) as caught:
        stub.assert_called("POST", "/plants", headers={"X-Count": 4}, query={"page": 2.5})
    assert str(caught.value) == (
        "plantstub: expected at least 1 call POST /plants with headers {'X-Count': 4}, query {'page': 2.5}; got 0.\n"
        "4 calls recorded:\n"
        "  #1 POST   /plants  200\n"
        "  #2 POST   /plants  200\n"
        "  #3 POST   /plants  200\n"
        "  #4 POST   /plants  200\n"
        "Closest: #3 POST /plants\n"
        "  method           'POST'        ok\n"
        "  path             '/plants'     ok\n"
        "  headers.X-Count  '3'           expected '4'   <<<<<\n"
        "  query.page       '2.5'         ok\n"
        "Next: #4 POST /plants\n"
        "  method           'POST'        ok\n"
        "  path             '/plants'     ok\n"
        "  headers.X-Count  <absent>      expected '4'   <<<<<\n"
        "  query.page       '2'           expected '2.5'   <<<<<\n"
        "Next: #2 POST /plants\n"
        "  method           'POST'        ok\n"
        "  path             '/plants'     ok\n"
        "  headers.X-Count  <absent>      expected '4'   <<<<<\n"
        "  query.page       '02'          expected '2.5'   <<<<<"
    )


def test_assert_not_called_takes_the_filters_of_assert_called(stub):
    _send(stub.url)
    stub.assert_not_called("POST", "/plants", headers={"X-Flag": True}, query={"page": 3})
    with pytest.raises(CallAssertionError) as caught:
        stub.assert_not_called("POST", "/plants", headers={"X-Flag": True}, status=200)
    assert str(caught.value).startswith(
        "plantstub: expected 0 calls POST /plants with headers {'X-Flag': True}, status 200; got 1.\n")
    assert str(caught.value).endswith("\nMatching: #1")  # a fresh stub: the first call is #1


# -- criteria that cannot be criteria -------------------------------------------------------------
def test_a_matcher_typo_in_an_assertion_is_an_error_not_a_pass(stub):
    with pytest.raises(ValueError) as caught:
        stub.assert_not_called(headers={"X-Flag": {"$regx": "^t"}})
    assert str(caught.value) == ("assert_not_called(): headers.X-Flag.$regx: unknown matcher '$regx' (did you mean "
                                 "'$regex'?); to match a key starting with $ literally, write {\"$eq\": {...}} around the object")
    with pytest.raises(ValueError) as caught:
        stub.assert_called(query={"page": {"$present": "yes"}}, status="200")
    assert str(caught.value) == ("assert_called(): query.page.$present: 'yes' is not true or false; "
                                 "assert_called(): status: '200' is not an HTTP status (an integer)")
    with pytest.raises(ValueError) as caught:
        stub.wait_for_calls(1, timeout=0, method=5)
    assert str(caught.value) == "wait_for_calls(): method: 5 is not text"


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"headers": "x"}, "body.headers: 'x' is not an object of names and values"),
        ({"query": [1]}, "body.query: [1] is not an object of names and values"),
        ({"path": 7}, "body.path: 7 is not text"),
        ({"status": True}, "body.status: True is not an HTTP status (an integer)"),
        ({"body": {"name": {"$regex": "("}}}, "body.body.name.$regex: '(' is not a regular expression ("),
    ],
    ids=["headers", "query", "path", "status", "regex"],
)
def test_bad_wait_filters_over_http_are_a_400_naming_them(stub, filters, message):
    _send(stub.url)  # calls to judge: a bad criterion must not reach them
    answer = requests.post(stub.url + "/__plantstub/calls/wait", json={"n": 1, "timeout": 0, **filters}, timeout=10)
    assert answer.status_code == 400 and answer.json()["message"].startswith(message)
