"""The `$` matchers of `match:` ($regex, $contains, $present, $absent, $eq): the predicates, their checks at load,
and requests answered through a scenario file and through `stub.when(...)`."""

from __future__ import annotations

import pytest

from plantstub import Stub, create_app
from plantstub._json import MISSING
from plantstub.errors import ConfigError
from plantstub.matching import Mismatch, body_mismatches, matcher_problems, value_mismatches
from tests.helpers import JSON_AUTH, no_hang, write


# -- the predicates ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        ({"$regex": "^Bearer "}, "Bearer abc", True),
        ({"$regex": "^Bearer "}, "Basic abc", False),
        ({"$regex": "^Bearer "}, MISSING, False),
        ({"$contains": "act"}, "Cactus", True),
        ({"$contains": "act"}, "Fern", False),
        ({"$present": True}, "", True),
        ({"$present": True}, MISSING, False),
        ({"$absent": True}, MISSING, True),
        ({"$absent": True}, "x", False),
        ({"$present": True, "$regex": "^[0-9]+$"}, "42", True),
        ({"$present": True, "$regex": "^[0-9]+$"}, "4x", False),
        ("1", "1", True),
        (1, "1", True),
        (True, "true", True),
    ],
)
def test_value_mismatches_for_headers_and_query(expected, actual, ok):
    assert (value_mismatches(expected, actual, "headers.x") == []) is ok


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        ({"name": {"$regex": "^Cac"}}, {"name": "Cactus"}, True),
        ({"name": {"$regex": "^Cac"}}, {"name": 7}, False),
        ({"tag": {"$absent": True}}, {"name": "Fern"}, True),
        ({"tag": {"$absent": True}}, {"name": "Fern", "tag": None}, False),
        ({"tag": {"$present": True}}, {"name": "Fern", "tag": None}, True),
        ({"tags": {"$contains": "a"}}, {"tags": ["b", "a"]}, True),
        ({"tags": {"$contains": {"id": 2}}}, {"tags": [{"id": 1, "x": 0}, {"id": 2, "x": 0}]}, True),
        ({"tags": {"$contains": {"id": 3}}}, {"tags": [{"id": 1}]}, False),
        ({"$eq": {"$regex": "x"}}, {"$regex": "x"}, True),
        ({"$eq": {"a": 1}}, {"a": 1, "b": 2}, False),
        ({"$eq": 1}, True, False),
        ({"a": {"b": {"$regex": "z$"}}}, {"a": {"b": "xyz"}}, True),
        ({"name": "Fern"}, {"name": "Fern", "id": 1}, True),
    ],
)
def test_body_mismatches_with_matchers_at_any_depth(expected, actual, ok):
    assert (body_mismatches(expected, actual) == []) is ok


def test_a_mismatch_names_the_matcher_and_what_came():
    assert body_mismatches({"name": {"$regex": "^C"}}, {"name": "Fern"}) == [
        Mismatch("body.name", {"$regex": "^C"}, "Fern")]
    assert str(value_mismatches({"$absent": True}, "1", "query.debug")[0]) == "query.debug: expected {'$absent': True}, got '1'"


@pytest.mark.parametrize(
    ("value", "problems"),
    [
        ({"$regex": "^a"}, []),
        ({"$regx": "a"}, [("body.$regx", "unknown matcher '$regx' (did you mean '$regex'?); to match a key starting with $ "
                                      'literally, write {"$eq": {...}} around the object')]),
        ({"$regex": 5}, [("body.$regex", "5 is not a string")]),
        ({"$present": "yes"}, [("body.$present", "'yes' is not true or false")]),
        ({"a": [{"$contains": {"$bad": 1}}]}, [("body.a[0].$contains.$bad", "unknown matcher '$bad' (known: $regex, "
                                                "$contains, $present, $absent, $eq); to match a key starting with $ "
                                                'literally, write {"$eq": {...}} around the object')]),
        ({"$regex": "a", "name": 1}, [("body", "mixes matchers ('$regex') with keys ('name'); keys starting with $ are "
                                               'matchers: to match such a key literally, write {"$eq": {...}} around the object')]),
    ],
    ids=["ok", "typo", "regex-type", "present-type", "nested", "mixed"],
)
def test_matcher_problems(value, problems):
    assert matcher_problems(value, "body") == problems


def test_a_bad_regex_is_named_with_our_words():
    [(where, message)] = matcher_problems({"$regex": "(unclosed"}, "headers.x")
    assert where == "headers.x.$regex" and message.startswith("'(unclosed' is not a regular expression (")


@pytest.mark.parametrize("pattern", ["(((a{100}){100}){100}){100}", "(?:a{1000}){1000}", "\\p{L}{1000}{1000}"])
def test_a_regex_too_large_to_compile_is_refused_at_once(pattern):
    # The regex package writes counted repeats out when it compiles: the first of these would take minutes.
    with no_hang("the check"):
        [(where, message)] = matcher_problems({"$regex": pattern}, "body.name")
    assert where == "body.name.$regex"
    assert message.endswith("is too large once its counted repeats are written out (over 100,000 items); use fewer "
                            "or smaller {n} repeats")


def test_an_admin_rule_with_a_huge_regex_is_refused_and_the_stub_keeps_answering():
    import requests

    with Stub() as stub:
        answer = requests.post(stub.url + "/__plantstub/rules", timeout=10, json={
            "match": {"headers": {"X": {"$regex": "(((a{100}){100}){100}){100}"}}}, "reply": {"status": 200}})
        assert answer.status_code == 400 and "too large once its counted repeats" in answer.json()["message"]
        assert requests.get(stub.url + "/__plantstub/health", timeout=5).status_code == 200


def test_a_backtracking_regex_gives_up_instead_of_freezing():
    with no_hang("the match"):  # gives up after 0.1 s instead of running for hours
        [miss] = value_mismatches({"$regex": "^(a|aa)+$"}, "a" * 60 + "!", "headers.x")
    assert miss.actual == "too costly to match (over 0.1 s); simplify the pattern"


# -- scenario files -------------------------------------------------------------------------------
MATCHERS = """\
rules:
  - match:
      path: /plants
      headers: {X-Tenant: {$regex: "^acme-[0-9]+$"}}
    reply: {status: 400, body: {error: 1, message: tenant}}
  - match:
      path: /plants
      query: {debug: {$present: true}}
    reply: {status: 400, body: {error: 2, message: debug}}
  - match:
      path: /plants
      body: {name: {$contains: act}, tag: {$absent: true}}
    reply: {status: 400, body: {error: 3, message: untagged cactus}}
"""


@pytest.fixture
async def client(aiohttp_client, tmp_path):
    write(tmp_path, "matchers.yaml", MATCHERS)
    return await aiohttp_client(create_app(scenarios=str(tmp_path), scenario="matchers"))


@pytest.mark.parametrize(
    ("path", "headers", "body", "error"),
    [
        ("/plants", {"X-Tenant": "acme-42"}, {"id": 1, "name": "Fern"}, 1),
        ("/plants", {"X-Tenant": "acme-x"}, {"id": 1, "name": "Fern"}, None),
        ("/plants?debug=", {}, {"id": 1, "name": "Fern"}, 2),
        ("/plants", {}, {"id": 1, "name": "Cactus"}, 3),
        ("/plants", {}, {"id": 1, "name": "Cactus", "tag": "spiky"}, None),
    ],
    ids=["regex", "regex-no", "present", "contains-absent", "absent-no"],
)
async def test_matchers_in_a_scenario_file_over_http(client, path, headers, body, error):
    response = await client.post(path, json=body, headers={**JSON_AUTH, **headers})
    answer = await response.json()
    assert (response.status, answer.get("error")) == ((400, error) if error else (200, None))


@pytest.mark.parametrize(
    ("match", "message"),
    [
        ('{headers: {X-A: {$regex: "(x"}}}', "rules[0].match.headers.X-A.$regex: '(x' is not a regular expression ("),
        ("{headers: {X-A: {$regx: x}}}", "rules[0].match.headers.X-A: unknown key '$regx' (did you mean '$regex'?)"),
        ("{body: {name: {$contain: x}}}", "rules[0].match.body.name.$contain: unknown matcher '$contain' (did you mean '$contains'?)"),
        ("{query: {q: {$present: 1}}}", "rules[0].match.query.q.$present: 1 is not of type 'boolean'"),
    ],
    ids=["bad-regex", "header-typo", "body-typo", "present-type"],
)
def test_matcher_mistakes_are_load_errors_at_their_line(tmp_path, match, message):
    write(tmp_path, "bad.yaml", f"rules:\n  - reply: {{status: 200}}\n    match: {match}\n")
    with pytest.raises(ConfigError) as caught:
        Stub(scenarios=tmp_path).start()
    assert str(caught.value).startswith(f"scenarios cannot load:\n{tmp_path / 'bad.yaml'}:3: {message}")


# -- rules from code, assertions --------------------------------------------------------------------
def test_matchers_in_rules_from_code_and_assertions():
    import requests

    with Stub() as stub:
        stub.when(path="/plants", headers={"Authorization": {"$regex": "^Bearer adm"}}).reply(400, {"error": 1, "message": "admin"})
        assert requests.post(stub.url + "/plants", json={"id": 1, "name": "Fern"}, headers={"Authorization": "Bearer admin"}).status_code == 400
        assert requests.post(stub.url + "/plants", json={"id": 1, "name": "Fern"}, headers={"Authorization": "Bearer t"}).status_code == 200
        stub.assert_called("POST", "/plants", headers={"Authorization": {"$regex": "^Bearer t$"}}, body={"tag": {"$absent": True}}, times=1)
