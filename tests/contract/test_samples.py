"""sample() makes values that validate against the schema they came from: a table, then a property."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plantstub.contract.bundle import Bundler
from plantstub.contract.samples import sample
from plantstub.contract.schema import SchemaCheck
from plantstub.errors import SpecError
from tests.helpers import examples

TREE = {
    "$ref": "#/$defs/Node",
    "$defs": {
        "Node": {
            "type": "object",
            "required": ["name", "children"],
            "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
            },
        }
    },
}


def no_refs(target: str, where: str, ref: str) -> tuple[Any, str]:
    raise SpecError(f"{where}: unexpected $ref {ref!r}")


def openapi30(schema: dict) -> dict | bool:
    """The 2020-12 meaning of an OpenAPI 3.0 schema, as the spec loader bundles it."""
    return Bundler(no_refs, legacy=True).bundle(schema, "file:///api.yaml", "test")


def errors(schema: dict | bool, value: Any) -> list[str]:
    return [str(v) for v in SchemaCheck(schema, "test").errors(value, "value")]


SCHEMAS = {
    "string": {"type": "string"},
    "date-time": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "email": {"type": "string", "format": "email"},
    "uuid": {"type": "string", "format": "uuid"},
    "uri": {"type": "string", "format": "uri"},
    "ipv4": {"type": "string", "format": "ipv4"},
    "ipv6": {"type": "string", "format": "ipv6"},
    "hostname": {"type": "string", "format": "hostname"},
    "enum": {"type": "string", "enum": ["fern", "moss"]},
    "enum-after-bad-value": {"type": "string", "enum": [3, "moss"]},
    "const": {"const": {"kind": "plant"}},
    "example-of-wrong-type": {"type": "string", "example": 94301},
    "int-min-max": {"type": "integer", "minimum": 10, "maximum": 12},
    "int-exclusive": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 2},
    "number-narrow-exclusive": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.1},
    "number-negative-range": {"type": "number", "minimum": -8.5, "maximum": -7.9},
    "int-multiple-of": {"type": "integer", "minimum": 7, "multipleOf": 5},
    "number-multiple-of-fraction": {"type": "number", "minimum": 0.3, "multipleOf": 0.25},
    "int64": {"type": "integer", "minimum": 2**62},
    "not-zero": {"type": "integer", "not": {"const": 0}},
    "min-length": {"type": "string", "minLength": 12},
    "max-length": {"type": "string", "maxLength": 2},
    "pattern-id": {"type": "string", "pattern": "^[\\da-z]{26}$"},
    "pattern-alternation": {"type": "string", "pattern": "^(cm|mm)-[A-F0-9]{2,4}$"},
    "pattern-lookaheads": {"type": "string", "pattern": "^(?=.*[A-Z])(?=.*\\d).{8,}$"},
    "pattern-and-min-length": {"type": "string", "pattern": "^a+$", "minLength": 5},
    "array-min-items": {"type": "array", "minItems": 3, "items": {"type": "string", "minLength": 2}},
    "array-max-items-zero": {"type": "array", "maxItems": 0},
    "array-unique-integers": {"type": "array", "minItems": 3, "uniqueItems": True, "items": {"type": "integer"}},
    "array-unique-enum": {"type": "array", "minItems": 2, "uniqueItems": True, "items": {"enum": ["a", "b"]}},
    "array-contains": {"type": "array", "items": {"type": "integer"}, "contains": {"const": 7}},
    "array-prefix-items": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}], "items": False},
    "nested-object": {
        "type": "object",
        "required": ["plant"],
        "properties": {"plant": {"type": "object", "required": ["name", "height"], "properties": {
            "name": {"type": "string"}, "height": {"type": "number", "exclusiveMinimum": 0}}}},
    },
    "closed-object": {"type": "object", "additionalProperties": False, "required": ["a"],
                      "properties": {"a": {"type": "integer"}}},
    "min-properties": {"type": "object", "minProperties": 2, "additionalProperties": {"type": "integer", "minimum": 3}},
    "all-of": {"allOf": [{"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
                         {"required": ["id"], "properties": {"id": {"type": "integer", "minimum": 1}}}]},
    "all-of-stricter-bound": {"allOf": [{"type": "integer", "minimum": 1}, {"minimum": 5}, {"maximum": 6}]},
    "all-of-property-twice": {"allOf": [
        {"required": ["size"], "properties": {"size": {"type": "integer"}}},
        {"properties": {"size": {"minimum": 10}}}]},
    "one-of-numbers": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
    "one-of-objects": {"oneOf": [
        {"type": "object", "required": ["cat"], "properties": {"cat": {"type": "string"}}},
        {"type": "object", "required": ["dog"], "properties": {"dog": {"type": "string"}}}]},
    "one-of-closed-objects": {"oneOf": [
        {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
        {"type": "object", "properties": {"b": {"type": "string"}}, "additionalProperties": False}]},
    "any-of-null": {"anyOf": [{"type": "null"}, {"type": "string", "minLength": 2}]},
    "type-list": {"type": ["null", "integer"], "minimum": 3},
    "recursive-tree": TREE,
    "recursive-ref-in-all-of": {"$ref": "#/$defs/Node", "$defs": {"Node": {"allOf": [TREE["$defs"]["Node"]]}}},
    "empty": {},
    "true": True,
}
OPENAPI_30 = {
    "nullable-string": {"type": "string", "nullable": True, "minLength": 3},
    "nullable-enum": {"type": "string", "enum": ["calm"], "nullable": True},
    "nullable-all-of": {"allOf": [{"type": "integer"}], "nullable": True},
    "exclusive-minimum-true": {"type": "integer", "minimum": 5, "exclusiveMinimum": True},
    "exclusive-maximum-true": {"type": "number", "minimum": 0, "maximum": 0, "exclusiveMaximum": False},
    "int32": {"type": "integer", "format": "int32", "minimum": 2**31 - 1},
}


@pytest.mark.parametrize("schema", list(SCHEMAS.values()), ids=list(SCHEMAS))
def test_sample_validates(schema):
    assert errors(schema, sample(schema)) == []


@pytest.mark.parametrize("schema", list(OPENAPI_30.values()), ids=list(OPENAPI_30))
def test_sample_validates_openapi_30_schema(schema):
    bundled = openapi30(schema)
    assert errors(bundled, sample(bundled)) == []


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string", "enum": ["fern", "moss"]}, "fern"),
        ({"type": "string", "examples": ["Monstera"], "default": "Fern"}, "Monstera"),
        ({"type": "string", "example": 94301, "default": "Fern"}, "Fern"),
        ({"type": "integer", "minimum": 10, "maximum": 12}, 10),
        ({"type": "integer", "format": "int64"}, 0),
        ({"type": "boolean"}, True),
        ({"anyOf": [{"type": "null"}, {"type": "string"}]}, "string"),
        ({"type": "object", "required": ["name"],
          "properties": {"name": {"type": "string"}, "tag": {"type": "string"}}}, {"name": "string"}),
        ({"type": "array", "items": {"type": "integer"}}, [0]),
        (TREE, {"name": "string", "children": [{"name": "string", "children": []}]}),
    ],
    ids=["enum-first", "examples-first", "default-over-bad-example", "lower-bound", "zero", "true", "not-null",
         "required-only", "one-item", "tree-stays-small"],
)
def test_sample_is_small_and_predictable(schema, expected):
    assert sample(schema) == expected


def test_sample_uses_defs_passed_in():
    defs = TREE["$defs"]
    assert sample({"$ref": "#/$defs/Node"}, defs)["name"] == "string"


# -- property: random small schemas, each satisfiable by construction ----------------------------
NAMES = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=6)
PATTERNS = ["^[a-z]{3}$", "^[A-Z][a-z]+-\\d{2}$", "^(red|green)$", "[0-9a-f]{8}", "^\\w+@\\w+\\.org$"]
FORMATS = ["date", "date-time", "email", "uuid", "ipv4", "ipv6", "uri", "hostname", "byte"]


def _multiple(step: int, k: int, below: int, above: int) -> dict:
    return {"type": "integer", "multipleOf": step, "minimum": k * step - below, "maximum": k * step + above}


LEAVES = st.one_of(
    st.builds(lambda lo, span: {"type": "integer", "minimum": lo, "maximum": lo + span},
              st.integers(-10**6, 10**6), st.integers(0, 50)),
    st.builds(lambda lo, span: {"type": "number", "exclusiveMinimum": lo, "exclusiveMaximum": lo + span},
              st.integers(-1000, 1000), st.sampled_from([0.01, 0.5, 1, 30])),
    st.builds(_multiple, st.integers(1, 9), st.integers(-50, 50), st.integers(0, 8), st.integers(0, 8)),
    st.builds(lambda lo, span: {"type": "string", "minLength": lo, "maxLength": lo + span},
              st.integers(0, 20), st.integers(0, 10)),
    st.sampled_from(FORMATS).map(lambda f: {"type": "string", "format": f}),
    st.sampled_from(PATTERNS).map(lambda p: {"type": "string", "pattern": p}),
    st.lists(st.one_of(st.integers(), st.text(max_size=4), st.none()), min_size=1, max_size=4, unique=True)
    .map(lambda values: {"enum": values}),
    st.sampled_from([{"type": "boolean"}, {"type": "null"}, {}]),
)


def _object(props: dict, required: list[str], closed: bool) -> dict:
    schema = {"type": "object", "properties": props, "required": required}
    return {**schema, "additionalProperties": False} if closed else schema


def _containers(children: st.SearchStrategy) -> st.SearchStrategy:
    objects = st.dictionaries(NAMES, children, max_size=4).flatmap(
        lambda props: st.builds(_object, st.just(props), st.lists(st.sampled_from(sorted(props)), unique=True)
                                if props else st.just([]), st.booleans()))
    arrays = st.builds(lambda items, lo, span: {"type": "array", "items": items, "minItems": lo, "maxItems": lo + span},
                       children, st.integers(0, 3), st.integers(0, 2))
    any_of = st.lists(children, min_size=1, max_size=3).map(lambda branches: {"anyOf": branches})
    nullable = children.map(lambda schema: {"anyOf": [schema, {"type": "null"}]})
    return st.one_of(objects, arrays, any_of, nullable)


SCHEMA_TREES = st.recursive(LEAVES, _containers, max_leaves=10)
PROPERTY_SETTINGS = settings(max_examples=examples(150), deadline=None, database=None,
                             suppress_health_check=[HealthCheck.too_slow])


@PROPERTY_SETTINGS
@given(SCHEMA_TREES)
def test_sample_validates_random_schema(schema):
    assert errors(schema, sample(schema)) == []


LEGACY_LEAVES = st.one_of(
    st.builds(lambda lo, flag: {"type": "integer", "minimum": lo, "exclusiveMinimum": flag, "maximum": lo + 2,
                                "exclusiveMaximum": flag}, st.integers(-100, 100), st.booleans()),
    st.builds(lambda kind, values: {"type": kind, "enum": values, "nullable": True},
              st.just("string"), st.lists(st.text(max_size=4), min_size=1, max_size=3, unique=True)),
    st.sampled_from(["int32", "int64"]).map(lambda f: {"type": "integer", "format": f, "nullable": True}),
)


@PROPERTY_SETTINGS
@given(st.recursive(LEGACY_LEAVES, lambda children: st.builds(
    lambda props, nullable: {"type": "object", "required": sorted(props), "properties": props, "nullable": nullable},
    st.dictionaries(NAMES, children, max_size=3), st.booleans()), max_leaves=6))
def test_sample_validates_random_openapi_30_schema(schema):
    bundled = openapi30(schema)
    assert errors(bundled, sample(bundled)) == []
