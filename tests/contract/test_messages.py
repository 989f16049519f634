"""400 messages written from jsonschema-rs's errors, its regular expressions bounded in time."""

from __future__ import annotations

import pytest

from plantstub.contract.schema import SchemaCheck
from tests.helpers import no_hang


@pytest.mark.parametrize(("schema", "value", "expected"), [
    ({"type": "integer"}, "x", "body: 'x' is not of type 'integer'"),
    ({"type": ["string", "null"]}, 1, "body: 1 is not of type 'null', 'string'"),
    ({"required": ["name"]}, {}, "body: 'name' is a required property"),
    ({"minimum": 1}, 0, "body: 0 is less than the minimum of 1"),
    ({"exclusiveMaximum": 3}, 3, "body: 3 is greater than or equal to the maximum of 3"),
    ({"multipleOf": 5}, 7, "body: 7 is not a multiple of 5"),
    ({"minLength": 1}, "", "body: '' should be non-empty"),
    ({"maxItems": 1}, [1, 2], "body: [1, 2] is too long"),
    ({"enum": ["a", "b"]}, "c", "body: 'c' is not one of ['a', 'b']"),
    ({"const": "a"}, "c", "body: 'a' was expected"),
    ({"pattern": "^[a-z]+$"}, "A", "body: 'A' does not match '^[a-z]+$'"),
    ({"format": "uuid"}, "x", "body: 'x' is not a 'uuid'"),
    ({"properties": {}, "additionalProperties": False}, {"b": 1, "a": 2},
     "body: Additional properties are not allowed ('a', 'b' were unexpected)"),
    ({"anyOf": [{"type": "integer"}, {"type": "boolean"}]}, "x", "body: 'x' is not valid under any of the given schemas"),
    ({"oneOf": [{}, {"type": "integer"}]}, 1, "body: 1 is valid under more than one of the given schemas"),
    ({"uniqueItems": True}, [1, 1], "body: [1, 1] has non-unique elements"),
    ({"propertyNames": {"maxLength": 2}}, {"abc": 1}, "body: property name 'abc' is too long"),
])
def test_each_kind_of_violation_reads_in_plantstub_words(schema, value, expected):
    [violation] = SchemaCheck(schema, "test").errors(value, "body")
    assert str(violation) == expected


def test_locations_use_the_one_notation_and_come_in_path_order():
    schema = {"type": "object", "properties": {"items": {"type": "array", "items": {
        "type": "object", "properties": {"name": {"type": "string"}}}}, "id": {"type": "integer"}}}
    found = SchemaCheck(schema, "test").errors({"items": [{"name": 1}, {"name": "ok"}, {"name": 2}], "id": "x"}, "body")
    assert [v.where for v in found] == ["body.id", "body.items[0].name", "body.items[2].name"]


def test_a_huge_value_is_cut_short_in_its_message():
    [violation] = SchemaCheck({"type": "integer"}, "test").errors("x" * 100_000, "body")
    assert len(violation.message) < 250 and violation.message.endswith("is not of type 'integer'")


@pytest.mark.parametrize(("pattern", "said"), [
    ("^(a|aa)+$", "does not match '^(a|aa)+$'"),  # no lookaround: a linear-time engine, nothing to bound
    ("^(a|aa)+(?!b)$", "could not be checked against its pattern (too costly to match)"),  # backtracks: stopped
])
def test_patterns_that_backtrack_are_run_in_linear_time_or_stopped(pattern, said):
    check = SchemaCheck({"type": "string", "pattern": pattern}, "test")
    with no_hang("the check"):  # Python's `re` would backtrack for ages (2^60 ways to split the a's)
        [violation] = check.errors("a" * 60 + "!", "body")
    assert str(violation) == f"body: '{'a' * 60}!' {said}"
    assert check.errors("aaa", "body") == []


def test_a_property_name_too_costly_to_match_is_a_violation_of_its_object():
    schema = {"type": "object", "patternProperties": {"^(a|aa)+(?!b)$": {"type": "integer"}}, "additionalProperties": False}
    check = SchemaCheck(schema, "test")
    key = "a" * 40 + "!"
    with no_hang("the check"):
        # jsonschema-rs 0.52 counts a name it could not match as unexpected; later ones say it could not tell.
        assert [str(v) for v in check.errors({key: 1}, "body")] in (
            [f"body: {{'{key}': 1}} could not be checked against its pattern (too costly to match)"],
            [f"body: Additional properties are not allowed ('{key}' was unexpected)"])
    assert [str(v) for v in check.errors({"aa": "x", "b": 1}, "body")] == [
        "body: Additional properties are not allowed ('b' was unexpected)", "body.aa: 'x' is not of type 'integer'"]


def test_a_kind_plantstub_has_no_words_for_names_its_keyword():
    from plantstub.contract.messages import message_of

    class Kind:  # what a later jsonschema-rs might add
        pass

    class Error:
        kind, instance, schema_path = Kind(), "x", ["properties", "a", "newKeyword"]

    assert message_of(Error()) == "'x' is not valid under 'newKeyword'"


def test_indices_sort_as_numbers_and_the_list_is_capped():
    check = SchemaCheck({"type": "array", "items": {"type": "string"}}, "test")
    found = check.errors(["a", "b", 2, "c", "d", "e", "f", "g", "h", "i", 10], "body")
    assert [v.where for v in found] == ["body[2]", "body[10]"]
    many = check.errors(list(range(60)), "body")
    assert len(many) == 51 and str(many[-1]) == "body: more violations follow; the first 50 are listed"
    assert [v.where for v in many[:3]] == ["body[0]", "body[1]", "body[2]"]


def test_a_large_value_lists_its_first_violation_only():
    found = SchemaCheck({"type": "array", "items": {"type": "string"}}, "test").errors([1] * 300_000, "body")
    assert [str(v) for v in found] == [
        "body[0]: 1 is not of type 'string'", "body: more than 1000 parts: only the first violation is listed"]
