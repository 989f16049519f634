"""jsonschema-rs decides and explains, python jsonschema is the reference: both must agree on every schema served."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from referencing import Registry

from plantstub.contract.compiled import Checks, places
from plantstub.contract.load import load_spec
from plantstub.contract.samples import sample
from plantstub.contract.schema import SchemaCheck, location_path
from tests.helpers import REPO, SPECS, examples

SERVED = [None, SPECS / "greenhouse-3.0.yaml", SPECS / "greenhouse-3.1.json", SPECS / "tree.yaml", SPECS / "multi" / "main.yaml",
          SPECS / "real-world.yaml"]


SHARED: dict[int, Checks] = {}  # id(schema) -> the checks of its spec, compiled together (contract/shared.py)


def served_schemas() -> list[tuple[str, object]]:
    """Every request body, parameter and response schema of the specs the tests serve."""
    found = []
    for path in SERVED:
        spec = load_spec(path)
        checks = Checks(places(spec))
        SHARED.update((id(schema), checks) for schema in places(spec))
        name = path.name if path else "plant-store"
        for op in spec.operations:
            for media in (op.body or {}).values():
                if media.schema is not None:
                    found.append((f"{name} {op.label} body {media.name}", media.schema))
            for param in op.parameters:
                if param.schema is not None:
                    found.append((f"{name} {op.label} {param.location}.{param.name}", param.schema))
            for key, response in op.responses.items():
                for media in response.content.values():
                    if media.schema is not None:
                        found.append((f"{name} {op.label} {key} {media.name}", media.schema))
    return found


SCHEMAS = served_schemas()
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, -1, 2**31 - 1, 2**31, -(2**31) - 1, 2**63 - 1, 2**63, -(2**63) - 1, 1.0, 1.5, -0.0]),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
    st.sampled_from(["", "Fern", "2024-01-01", "2024-01-01T00:00:00Z", "user@example.com",
                     "00000000-0000-4000-8000-000000000000", "not-a-date", "x" * 300]),
)
JSON = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)), max_leaves=12)


def keys_of(schema: object) -> list[str]:
    names: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "properties" and isinstance(value, dict):
                    names.update(value)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(schema)
    return sorted(names) or ["x"]


@st.composite
def instances(draw, schema):
    """Random JSON, and near-valid objects: a valid sample with fields replaced, dropped or added."""
    if draw(st.booleans()):
        return draw(JSON)
    value = sample(schema)
    if isinstance(value, dict):
        value = dict(value)
        for key in draw(st.lists(st.sampled_from(keys_of(schema)), max_size=3)):
            choice = draw(st.integers(0, 2))
            if choice == 0:
                value.pop(key, None)
            else:
                value[key] = draw(JSON)
    return value


@pytest.mark.slow
@pytest.mark.parametrize(("name", "schema"), SCHEMAS, ids=[n for n, _ in SCHEMAS])
def test_jsonschema_rs_agrees_with_jsonschema(name, schema):
    check = SchemaCheck(schema, name)
    plain = SchemaCheck(schema, name, formats=False)  # formats: each library asserts its own reading of them
    reference = Draft202012Validator(schema, registry=Registry())
    shared = SHARED[id(schema)].check(schema)  # the spec's one validator, where served schemas are checked

    @settings(max_examples=examples(150), deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(instances(schema))
    def agree(instance):
        # Checked through the spec's shared validator, every verdict and message is the same.
        assert shared.is_valid(instance) == check.is_valid(instance), instance
        assert shared.errors(instance, "body") == check.errors(instance, "body"), instance
        try:
            expected = list(reference.iter_errors(instance))
        except (RecursionError, re.error):  # an allOf loop it runs for ever; `\\p{L}`, which Python's `re` lacks
            return
        assert plain.is_valid(instance) == (not expected), instance
        # The 400 messages come from jsonschema-rs: they must name the places jsonschema names.
        assert {v.where for v in plain.errors(instance, "body")} == {
            location_path("body", e.absolute_path) for e in expected}, instance

    agree()


def test_accelerator_served_schema_count():
    assert len(SCHEMAS) >= 20  # the property above really ran over the served specs


# -- the metaschema check: jsonschema-rs plus Python's regex compiler must say what jsonschema says --
# Mostly plausible values per keyword, with a wrong one in each list, so both verdicts are common.
LEAF_WORDS = {
    "type": st.sampled_from(["string", "integer", "object", "array", "null", ["string", "null"], "nul", []]),
    "minimum": st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.just("1")),
    "exclusiveMinimum": st.sampled_from([0, 2.5, True]),
    "minLength": st.sampled_from([0, 3, -1, 1.5]),
    "pattern": st.sampled_from(["^[a-z]+$", "x*", "[a-", "(?P<n>x)", "\\p{L}", "a{2,1}", "(?<n>x)"]),
    "required": st.sampled_from([[], ["a"], ["a", "b"], ["a", "a"], "a"]),
    "enum": st.lists(SCALARS, max_size=3),
    "format": st.sampled_from(["date", "uuid", "regex", 5]),
    "uniqueItems": st.sampled_from([True, False, "yes"]),
    "dependentRequired": st.sampled_from([{"a": ["b"]}, {"a": "b"}]),
}
LEAF_SCHEMAS = st.one_of(st.booleans(), st.fixed_dictionaries({}, optional=LEAF_WORDS))
KEYS = st.one_of(st.sampled_from(["a", "b", "^x$", "[x-", "(?P<k>y)"]), st.text(max_size=3))


def _nest(inner):
    return st.one_of(inner, st.fixed_dictionaries({}, optional={
        **LEAF_WORDS,
        "properties": st.dictionaries(KEYS, inner, max_size=3),
        "patternProperties": st.dictionaries(KEYS, inner, max_size=2),
        "$defs": st.dictionaries(KEYS, inner, max_size=2),
        "items": inner, "not": inner, "additionalProperties": inner, "if": inner, "then": inner,
        "allOf": st.lists(inner, max_size=3), "anyOf": st.lists(inner, max_size=3), "prefixItems": st.lists(inner, max_size=2),
    }))


META_SCHEMAS = st.recursive(LEAF_SCHEMAS, _nest, max_leaves=10)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(META_SCHEMAS)
def test_fast_metaschema_check_agrees_with_jsonschema(schema):
    from plantstub.contract.schema import meta_valid, metaschema_validator

    slow_valid = not list(metaschema_validator().iter_errors(schema))
    assert meta_valid(schema) == slow_valid, schema


def test_serving_requests_never_imports_jsonschema(tmp_path):
    """jsonschema-rs decides and explains: start-up, valid calls and invalid ones never load jsonschema (50 ms)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import sys
        from plantstub import Stub
        import urllib.request, urllib.error, json
        with Stub(scenarios=sys.argv[1]) as stub:
            req = urllib.request.Request(stub.url + "/plants", data=b'{"id": 1, "name": "Fern"}', method="POST",
                                         headers={"Authorization": "Bearer t", "Content-Type": "application/json"})
            print(urllib.request.urlopen(req).status, "jsonschema" in sys.modules)
            bad = urllib.request.Request(stub.url + "/plants", data=b'{"id": "x", "name": "Fern"}', method="POST",
                                         headers={"Authorization": "Bearer t", "Content-Type": "application/json"})
            try:
                urllib.request.urlopen(bad)
            except urllib.error.HTTPError as exc:
                print(exc.code, json.loads(exc.read())["message"], "jsonschema" in sys.modules)
    """)
    scenarios = REPO / "scenarios"
    done = subprocess.run([sys.executable, "-c", script, str(scenarios)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    valid, invalid = done.stdout.splitlines()
    assert valid == "200 False"
    assert invalid == "400 body.id: 'x' is not of type 'integer' False"


def _walk(subresources, schema):
    """Every subschema `subresources` finds below `schema` and under them, by identity (their order aside), or the
    type of what it raises."""
    try:
        found, todo = [], [schema]
        while todo:
            below = list(subresources(todo.pop()))
            found += below
            todo += below
        return sorted(map(id, found))
    except Exception as exc:
        return type(exc)


EVERY_KEYWORD = {
    **{k: {"type": "string", "pattern": "^a"} for k in (
        "additionalProperties", "contains", "contentSchema", "else", "if", "items", "not", "propertyNames", "then",
        "unevaluatedItems", "unevaluatedProperties", "additionalItems")},
    **{k: [{"minimum": 1}, True] for k in ("allOf", "anyOf", "oneOf", "prefixItems")},
    **{k: {"a": {"$ref": "#/$defs/b"}, "b": False} for k in (
        "$defs", "definitions", "dependentSchemas", "patternProperties", "properties")},
    "dependencies": {"a": {"type": "string"}}, "enum": [{"type": "string"}], "examples": [{"items": {}}],
}


@settings(max_examples=examples(300), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.one_of(META_SCHEMAS, st.just(EVERY_KEYWORD), st.sampled_from([
    True, False, {"properties": []}, {"allOf": 3}, {"items": None}, {"$defs": {"a": 1}}, {"anyOf": "ab"}])))
def test_own_subschema_walk_is_referencing_s(schema):
    # contract/schema.py walks 2020-12 subschemas itself, to spare every start importing referencing (and attrs).
    from referencing.jsonschema import DRAFT202012

    from plantstub.contract.schema import _subresources

    assert _walk(_subresources, schema) == _walk(DRAFT202012.subresources_of, schema)
