"""Dynamic answers validate against their schemas, checked with the jsonschema library (not jsonschema-rs, which the
stub uses): every declared JSON response of every spec the suite serves, and a spec of one schema per keyword."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from plantstub.contract.dynamic import Dynamic, varies
from plantstub.contract.load import load_spec
from plantstub.contract.model import Spec
from plantstub.contract.operations import ServedOperation, serve
from tests.contract.test_samples import OPENAPI_30, SCHEMAS
from tests.helpers import SPECS, examples, no_hang

BROKEN = SPECS / "broken"
SERVED: list[Path | str] = ["plant-store", "plant-store-full",
                            *sorted(p for p in SPECS.glob("*.*") if p.suffix in (".yaml", ".json")),
                            SPECS / "multi" / "main.yaml"]
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
UNCHECKED: list[str] = []  # answers jsonschema cannot judge at all (the stub's own check still does)
FAST = settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def keyword_spec(folder: Path, version: str, schemas: dict[str, Any]) -> Path:
    """A spec answering GET /NAME with each schema of `schemas` (OpenAPI `version`)."""
    components: dict[str, Any] = {}
    paths = {}
    for name, schema in schemas.items():
        if isinstance(schema, dict) and "$defs" in schema:  # a document's own `$defs` become its components
            components.update(schema["$defs"])
            schema = {k: v for k, v in schema.items() if k != "$defs"}
        paths[f"/{name}"] = {"get": {"responses": {"200": {"description": name, "content": {
            "application/json": {"schema": schema}}}}}}
    text = json.dumps({"openapi": version, "info": {"title": "keywords", "version": "1"}, "paths": paths,
                       "components": {"schemas": components}}).replace("#/$defs/", "#/components/schemas/")
    path = folder / f"keywords-{version}.json"
    path.write_text(text)
    return path


def responses(served: dict[Any, ServedOperation]) -> list[tuple[str, ServedOperation, str, Callable[[Any], None]]]:
    """(name, operation, response key, jsonschema's check) of every declared JSON answer a dynamic answer varies
    (those in XML and YAML: tests/integration/test_text_answers.py)."""
    found = []
    for op in served.values():
        for key in op.op.responses:
            answer = op.answer(key)
            if varies(answer) and answer.writer is None:
                assert answer.media is not None
                validator = Draft202012Validator(answer.media.schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
                try:
                    validator.is_valid(answer.base)
                except (RecursionError, re.error):  # an allOf loop jsonschema runs for ever; `\\p{L}`, which `re` lacks
                    UNCHECKED.append(f"{op.op.label} {key}")
                    continue
                found.append((f"{op.op.label} {key}", op, key, validator.validate))
    return found


def served_specs(tmp: Path) -> list[tuple[str, Spec]]:
    specs = [(str(p), load_spec(p)) for p in SERVED]
    specs.append(("keywords 3.1", load_spec(keyword_spec(tmp, "3.1.0", SCHEMAS))))
    specs.append(("keywords 3.0", load_spec(keyword_spec(tmp, "3.0.3", OPENAPI_30))))
    return specs


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, ServedOperation, str, Callable[[Any], None]]]:
    found = []
    for name, spec in served_specs(tmp_path_factory.mktemp("specs")):
        found += [(f"{name}: {label}", *rest) for label, *rest in responses(serve(spec, dynamic=True, seed=0))]
    return found


def test_every_served_spec_has_answers_that_vary(answers):
    assert len(answers) > 60
    assert len(UNCHECKED) <= 4, UNCHECKED
    assert {name.split(":")[0] for name, *_ in answers} >= {"plant-store", "keywords 3.1", "keywords 3.0"}


@FAST
@given(seed=SEEDS)
def test_dynamic_answers_validate_against_their_schemas_with_jsonschema(answers, seed):
    dynamics: dict[int, Dynamic] = {}
    for name, op, key, validate in answers:
        # every operation of a spec shares one Dynamic, as a running stub's do
        op.dynamic = dynamics.setdefault(id(op.samples), Dynamic(seed, op.samples))
        for call in range(3):
            out = op.varied(key, None)
            try:
                validate(out.body)
            except Exception as exc:
                raise AssertionError(f"{name}, seed {seed}, call {call}: {out.body!r}: {exc}") from exc


def test_the_same_seed_gives_the_same_answers_and_another_seed_others(answers):
    def run(seed: int) -> list[Any]:
        bodies = []
        for _, op, key, _ in answers:
            op.dynamic = Dynamic(seed, op.samples)
            bodies += [op.varied(key, None).body for _ in range(2)]
        return bodies

    first = run(7)
    assert run(7) == first
    other = run(8)
    assert sum(a != b for a, b in zip(first, other, strict=True)) > len(first) // 2


@pytest.mark.parametrize(("name", "check"), [
    ("email", lambda v: v.count("@") == 1 and "." in v.split("@")[1]),
    ("uuid", lambda v: len(v) == 36 and v[14] == "4"),
    ("date-time", lambda v: len(v) == 20 and v[10] == "T" and v.endswith("Z")),
    ("date", lambda v: len(v) == 10 and v[4] == v[7] == "-"),
    ("uri", lambda v: v.startswith("https://")),
    ("hostname", lambda v: "." in v and " " not in v),
    ("ipv4", lambda v: len(v.split(".")) == 4),
    ("ipv6", lambda v: len(v.split(":")) == 8),
], ids=lambda x: x if isinstance(x, str) else "")
def test_formats_look_real_and_vary(tmp_path, name, check):
    served = serve(load_spec(keyword_spec(tmp_path, "3.1.0", {name: SCHEMAS[name]})), dynamic=True, seed=3)
    op = next(iter(served.values()))
    values = {op.default(None).body for _ in range(20)}
    assert len(values) > 10, values
    assert all(check(v) for v in values), values


@pytest.mark.parametrize("name", ["pattern-id", "pattern-alternation", "int-multiple-of", "number-multiple-of-fraction",
                                  "array-unique-integers", "one-of-objects", "type-list", "min-length", "max-length"])
def test_keywords_kept_and_values_vary(tmp_path, name):
    served = serve(load_spec(keyword_spec(tmp_path, "3.1.0", {name: SCHEMAS[name]})), dynamic=True, seed=11)
    op = next(iter(served.values()))
    validate = Draft202012Validator(SCHEMAS[name]).validate
    values = [op.default(None).body for _ in range(30)]
    for value in values:
        validate(value)
    assert len({json.dumps(v) for v in values}) > 3, values
    assert op.dynamic.fixed == 0  # each came from the random walk, none is the fixed answer


HOSTILE = {
    "long-string": {"type": "string", "minLength": 100_000},
    "many-items": {"type": "array", "minItems": 5_000, "items": {"type": "integer"}},
    "huge-bounds": {"type": "number", "minimum": -1e308, "maximum": 1e308},
    "tiny-step": {"type": "number", "minimum": 0, "maximum": 1, "multipleOf": 1e-300},
    "big-repeat": {"type": "string", "pattern": "^a{0,100000}b+$"},
    "deep": {"$ref": "#/$defs/Deep", "$defs": {"Deep": {"type": "object", "properties": {
        "next": {"$ref": "#/$defs/Deep"}, "name": {"type": "string"}}}}},
}


def test_hostile_schemas_get_valid_answers(tmp_path):
    served = serve(load_spec(keyword_spec(tmp_path, "3.1.0", HOSTILE)), dynamic=True, seed=2)
    with no_hang("120 answers"):
        for op in served.values():
            schema = op.default_answer.media.schema
            validate = Draft202012Validator(schema).validate
            for _ in range(20):
                validate(op.default(None).body)
