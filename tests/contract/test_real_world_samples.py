"""generate() on shapes from public OpenAPI documents: a value that keeps the schema, or why none does."""

from __future__ import annotations

from typing import Any

import pytest

from plantstub.contract import pattern as pattern_module
from plantstub.contract.flatten import flatten, types_of
from plantstub.contract.pattern import matching_strings
from plantstub.contract.samples import generate
from plantstub.contract.schema import SchemaCheck
from tests.helpers import jsonschema_rs_compiles


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/{name}"}


def errors(schema: dict, value: Any) -> list[str]:
    return [str(v) for v in SchemaCheck(schema, "test").errors(value, "value")]


OBJECT = {"type": "object"}
SATISFIABLE = {
    "one-of-open-objects": {"oneOf": [{**OBJECT, "properties": {"meows": {"type": "boolean"}}},
                                      {**OBJECT, "properties": {"barks": {"type": "boolean"}}}]},
    "one-of-any-object-or-narrower": {"oneOf": [OBJECT, {**OBJECT, "properties": {"a": {"type": "string"}}}]},
    "one-of-three-overlapping": {"oneOf": [OBJECT, {**OBJECT, "properties": {"a": {"type": "string"}}},
                                           {**OBJECT, "properties": {"b": {"type": "integer"}}}]},
    "one-of-same-property-other-types": {"oneOf": [
        {**OBJECT, "required": ["size"], "properties": {"size": {"type": "integer"}}},
        {**OBJECT, "required": ["size"], "properties": {"size": {"type": ["integer", "string"]}}}]},
    "all-of-loop": {**ref("A"), "$defs": {
        "A": {"allOf": [ref("B")], "type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}},
        "B": {"allOf": [ref("A")], "required": ["b"], "properties": {"b": {"type": "integer", "minimum": 3}}}}},
    "all-of-self": {**ref("S"), "$defs": {"S": {"allOf": [ref("S")], "type": "integer", "minimum": 4}}},
    "ref-beside-itself": {**ref("R"), "$defs": {"R": {**ref("R"), "type": "object", "required": ["x"],
                                                      "properties": {"x": {"type": "boolean"}}}}},
    "any-of-itself-twice": {**ref("A"), "$defs": {"A": {"anyOf": [ref("A"), ref("A"), {"type": "string"}]}}},
    "required-link-or-null": {**ref("L"), "$defs": {"L": {**OBJECT, "required": ["next"], "properties": {
        "next": {"oneOf": [ref("L"), {"type": "null"}]}}}}},
    "pattern-unicode-letters": {"type": "string", "pattern": "^\\p{L}+$"},
    "pattern-unicode-upper-then-lower": {"type": "string", "pattern": "^\\p{Lu}\\p{Ll}*$", "minLength": 3},
    "pattern-unicode-digit-class": {"type": "string", "pattern": "[\\p{N}]{3}"},
    "pattern-negated-unicode-class": {"type": "string", "pattern": "^[^\\p{L}\\s]+$"},
    "pattern-not-a-letter": {"type": "string", "pattern": "^\\P{L}{2}$"},
    "pattern-script": {"type": "string", "pattern": "^\\p{Script=Greek}+$"},
    "pattern-code-point": {"type": "string", "pattern": "^\\u{1F331}$"},
    "pattern-property-names": {"type": "object", "minProperties": 1, "additionalProperties": False,
                               "patternProperties": {"^\\p{Ll}+$": {"type": "integer"}}},
}


@pytest.mark.parametrize("schema", list(SATISFIABLE.values()), ids=list(SATISFIABLE))
def test_generate_keeps_the_schema(schema):
    made = generate(schema)
    assert made.problem is None
    assert errors(schema, made.value) == []


DEEP: dict = {"type": "string"}
for _ in range(14):
    DEEP = {"type": "object", "required": ["x"], "properties": {"x": DEEP}}


@pytest.mark.parametrize(("schema", "problem", "certain"), [
    ({**ref("Link"), "$defs": {"Link": {**OBJECT, "required": ["next"], "properties": {"next": ref("Link")}}}},
     "a required property holds its own schema again (Link.next -> Link)", True),
    ({**ref("Node"), "$defs": {"Node": {**OBJECT, "required": ["kids"], "properties": {
        "kids": {"type": "array", "minItems": 1, "items": ref("Node")}}}}},
     "a required property holds its own schema again (Node.kids[0] -> Node)", True),
    ({**ref("N"), "$defs": {"N": {**OBJECT, "required": list("abcd"), "properties": {k: ref("N") for k in "abcd"}}}},
     "a required property holds its own schema again (N.a -> N)", True),
    ({"allOf": [{"type": "string"}, {"type": "integer"}]},
     "its parts may contradict each other, or hold alternatives plantstub cannot tell apart; the closest value it"
     " makes breaks it at body: 'string' is not of type 'integer'", False),
    (DEEP, "it nests required values more than 12 levels deep (body.x.x.x.x.x.x.x.x.x.x.x.x)", False),
], ids=["required-self", "required-item-self", "four-required-selves", "contradiction", "too-deep"])
def test_generate_says_why_no_value_keeps_the_schema(schema, problem, certain):
    made = generate(schema)
    assert (made.problem, made.certain) == (problem, certain)


@pytest.mark.parametrize("schema", [SATISFIABLE["all-of-loop"], SATISFIABLE["any-of-itself-twice"]],
                         ids=["all-of-loop", "any-of-itself-twice"])
def test_flatten_and_types_of_fold_an_in_place_loop_once(schema):
    defs = schema["$defs"]
    flat = flatten(schema, defs)
    assert isinstance(flat, dict)
    assert types_of(schema, defs) in ({"object"}, None)


def test_all_of_loop_folds_both_parts():
    schema = SATISFIABLE["all-of-loop"]
    flat = flatten(schema, schema["$defs"])
    assert (sorted(flat["required"]), sorted(flat["properties"])) == (["a", "b"], ["a", "b"])
    assert generate(schema).value == {"a": "string", "b": 3}


@pytest.mark.parametrize(("pattern", "served", "readable"), [
    ("^\\p{L}+$", True, True), ("\\p{Script=Greek}", True, True), ("^\\u{1F331}$", True, True), ("\\cM", True, True),
    ("(?<n>x)\\k<n>", False, True), ("\\Z", False, True),  # set aside at load
    ("^.{0,262144}$", jsonschema_rs_compiles("^.{0,262144}$"), True),  # compiled by jsonschema-rs 0.61.2, not before
    ("^\\p{Letters}+$", False, False),  # no regular expression: set aside all the same, as an unknown class
    ("a{2,1}", False, False), ("[a-", False, False),  # refused at load
    ("\\u{110000}", False, False),
], ids=lambda v: repr(v) if isinstance(v, str) else str(v))
def test_servable_patterns(pattern, served, readable):
    """Served: jsonschema-rs compiles it. Readable: a regular expression at all, so one not served is set aside."""
    assert (pattern_module.servable(pattern), pattern_module.readable(pattern)) == (served, readable)


@pytest.mark.parametrize(("pattern", "unknown"), [
    ("[\\p{all}]*", "\\p{all}"), ("^\\p{Letters}+$", "\\p{Letters}"), ("\\P{L}\\p{nope}", "\\p{nope}"),
    ("\\p{L}+", None), ("[a-", None), ("(\\p{all}", None), ("\\\\p{all}", None),
], ids=repr)
def test_unknown_class_names_a_class_no_unicode_property_has_in_an_otherwise_regular_expression(pattern, unknown):
    assert pattern_module.unknown_class(pattern) == unknown


def test_matching_strings_spell_out_unicode_classes():
    assert matching_strings("^\\p{Lu}\\p{Ll}*$", 0)[:2] == ("A", "Aa")
    assert matching_strings("[\\p{N}]{3}", 0) == ("000",)
    assert matching_strings("^\\p{Letters}$", 0) == ()  # an unknown class: nothing built, the schema check decides
