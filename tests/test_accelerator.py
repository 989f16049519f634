"""jsonschema-rs decides valid/invalid, jsonschema writes the messages: both must agree on every schema served."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plantstub.generate import sample
from plantstub.spec import load_spec
from plantstub.validation import SchemaCheck, jsonschema_rs

SPECS = Path(__file__).parent / "data" / "specs"
SERVED = [None, SPECS / "greenhouse-3.0.yaml", SPECS / "greenhouse-3.1.json", SPECS / "tree.yaml", SPECS / "multi" / "main.yaml"]

pytestmark = pytest.mark.skipif(jsonschema_rs is None, reason="jsonschema-rs is not installed")


def served_schemas() -> list[tuple[str, object]]:
    """Every request body, parameter and response schema of the specs the tests serve."""
    found = []
    for path in SERVED:
        spec = load_spec(path)
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


@pytest.mark.parametrize(("name", "schema"), SCHEMAS, ids=[n for n, _ in SCHEMAS])
def test_accelerator_agrees_with_jsonschema(name, schema):
    check = SchemaCheck(schema, name)
    assert check.fast is not None

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(instances(schema))
    def agree(instance):
        slow_valid = not list(check.slow.iter_errors(instance))
        assert check.fast.is_valid(instance) == slow_valid, instance

    agree()


def test_accelerator_served_schema_count():
    assert len(SCHEMAS) >= 20  # the property above really ran over the served specs
