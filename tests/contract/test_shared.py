"""One validator per spec (contract/shared.py): every place and subschema with a `$ref` checked through it, with
the same verdicts, the same 400 messages and the same default answers as each schema compiled alone."""

from __future__ import annotations

import gc
import logging

import pytest

from plantstub._json import inside
from plantstub.config import Settings
from plantstub.contract import schema as schema_module
from plantstub.contract import shared as shared_module
from plantstub.contract.answers import answer_key
from plantstub.contract.compiled import Checks, places
from plantstub.contract.load import load_spec
from plantstub.contract.operations import ServedOperation, serve
from plantstub.contract.requests import RequestCheck
from plantstub.contract.schema import SchemaCheck
from plantstub.server.runtime import load
from plantstub.server.table import Sessions
from tests.helpers import SPECS, jsonschema_rs_compiles, make_request, write

SERVED = [None, SPECS / "greenhouse-3.0.yaml", SPECS / "greenhouse-3.1.json", SPECS / "tree.yaml",
          SPECS / "multi" / "main.yaml", SPECS / "real-world.yaml"]
IDS = ["plant-store", "greenhouse-3.0", "greenhouse-3.1", "tree", "multi", "real-world"]

REFUSED = """\
openapi: 3.1.0
info: {title: Patterns, version: "1"}
paths:
  /codes:
    post:
      requestBody:
        required: true
        content: {application/json: {schema: {$ref: "#/components/schemas/Code"}}}
      responses: {"204": {description: stored}}
  /plants:
    post:
      requestBody:
        required: true
        content: {application/json: {schema: {$ref: "#/components/schemas/Plant"}}}
      responses: {"204": {description: stored}}
components:
  schemas:
    Code:  # `\\Z` is Python's: jsonschema-rs cannot compile it, so load_spec sets the pattern aside
      type: object
      required: [code]
      properties: {code: {type: string, pattern: "^[a-z]+\\\\Z"}, plant: {$ref: "#/components/schemas/Plant"}}
    Plant:
      type: object
      required: [name]
      properties: {name: {type: string}, height: {type: integer, minimum: 0}}
"""


def _outcome(served: ServedOperation, key: str) -> tuple[int, bytes, str | None]:
    out = served.answer(key).build(None)
    return out.status, out.payload, served.answer(key).problem


@pytest.mark.parametrize("path", SERVED, ids=IDS)
def test_bundles_of_one_document_share_one_defs_mapping(path):
    held = {id(s["$defs"]) for s in places(load_spec(path)) if isinstance(s, dict) and "$defs" in s}
    assert len(held) <= 1


@pytest.mark.parametrize("path", SERVED, ids=IDS)
def test_every_place_with_a_ref_is_a_property_of_one_validator(path):
    spec = load_spec(path)
    checks = Checks(places(spec))
    shared = [checks.check(s) for s in places(spec) if isinstance(s, dict) and "$defs" in s]
    assert shared, "the spec has places with a $ref"
    assert all(check.skip == 1 for check in shared)
    assert len({id(check.fast.validator) for check in shared}) == 1


@pytest.mark.parametrize("path", SERVED, ids=IDS)
def test_default_answers_are_those_of_schemas_compiled_alone(path, caplog):
    """Generated bodies are checked at every step: through the shared validator they come out the same."""
    caplog.set_level(logging.ERROR)
    spec = load_spec(path)
    together = serve(spec)
    for op in spec.operations:
        alone = ServedOperation(op, Checks())  # nothing shared: each schema compiled on its own
        for key in op.responses:
            assert _outcome(together[op], key) == _outcome(alone, key), f"{op.label} {key}"
    keyed = [op for op in spec.operations if answer_key(op) is not None]
    assert keyed


BODIES = [b'{"name": 5, "height": -1}', b'{"height": "x"}', b"[]", b'{"name": "Fern", "extra": {"deep": [1, 2]}}',
          b'{"name": "Fern", "height": 3}']


@pytest.mark.parametrize("raw", BODIES)
@pytest.mark.parametrize("path", SERVED, ids=IDS)
def test_request_checks_word_violations_as_compiled_alone(path, raw):
    """Same 400 messages, at the same places (the property the value is checked as is not part of them)."""
    spec = load_spec(path)
    checks = Checks(places(spec))
    for op in spec.operations:
        request = make_request(op.method, op.path, headers={"Content-Type": "application/json"}, raw=raw,
                               query={p.name: ["x"] for p in op.parameters if p.location == "query"})
        path_params = {p.name: "x" for p in op.parameters if p.location == "path"}
        shared, alone = RequestCheck(op, checks=checks), RequestCheck(op)
        assert shared.violations(request, path_params) == alone.violations(request, path_params), op.label


def test_a_pattern_jsonschema_rs_cannot_compile_is_set_aside_and_the_rest_shared(tmp_path, monkeypatch):
    """`^[a-z]+\\Z` is Python's; `^.{0,262144}$` (Adyen's TerminalAPI) is over jsonschema-rs's size limit, and took
    it 0.1 s to refuse at every schema reaching it. Both are set aside at load, with a warning each; every schema
    is then in the shared validator, and nothing is compiled on a request."""
    text = REFUSED.replace("plant: {$ref", 'note: {type: string, pattern: "^.{0,262144}$"}, plant: {$ref')
    spec = load_spec(write(tmp_path, "api.yaml", text))
    where = "paths./codes.post.requestBody.content.application/json.schema"
    big = () if jsonschema_rs_compiles("^.{0,262144}$") else (  # compiled by jsonschema-rs 0.61.2, not before
        f"{where}: pattern '^.{{0,262144}}$' is not checked: jsonschema-rs cannot compile it",)
    assert spec.warnings == (f"{where}: pattern '^[a-z]+\\\\Z' is not checked: jsonschema-rs cannot compile it", *big)
    served = serve(spec)
    compiled: list[object] = []
    monkeypatch.setattr(schema_module, "compile_fast", lambda schema, formats=True: compiled.append(schema))
    code, plant = (served[op].check for op in spec.operations)
    assert compiled == []
    assert code.bodies["application/json"].skip == 1 and plant.bodies["application/json"].skip == 1
    bad = make_request("POST", "/codes", headers={"Content-Type": "application/json"},
                       raw=b'{"code": "ab1", "note": 2, "plant": {"name": 1}}')
    assert [str(v) for v in code.violations(bad, {})[0]] == [
        "body.note: 2 is not of type 'string'", "body.plant.name: 1 is not of type 'string'"]


def test_when_jsonschema_rs_refuses_the_shared_validator_each_schema_is_compiled_alone(monkeypatch):
    spec = load_spec(SPECS / "greenhouse-3.1.json")
    refuse = shared_module.compile_fast

    def failing(schema, formats=True):
        if isinstance(schema, dict) and "properties" in schema and "$defs" in schema:
            raise ValueError("refused")
        return refuse(schema, formats)

    monkeypatch.setattr(shared_module, "compile_fast", failing)
    checks = Checks(places(spec))
    schema = next(s for s in places(spec) if isinstance(s, dict) and "$defs" in s)
    check = checks.check(schema)
    assert check.skip == 0 and check.fast is not None  # compiled alone, as before
    assert check.errors([], "body") == SchemaCheck(schema, "test").errors([], "body")


def test_a_subschema_is_checked_through_the_shared_validator_by_its_place(tmp_path):
    """A subschema inside a component (`Code.properties.plant`) is a property too: no compile of its own."""
    spec = load_spec(write(tmp_path, "api.yaml", REFUSED.replace('pattern: "^[a-z]+\\\\Z"', "minLength: 2")))
    checks = Checks(places(spec))
    root = spec.operations[0].body["application/json"].schema
    code = root["$defs"]["Code"]
    for sub in (code, code["properties"]["plant"], root["$defs"]["Plant"]):
        assert checks.check(sub, root["$defs"]).skip == 1
        assert checks.valid({"name": "Fern"}, sub, root["$defs"]) is (sub is not code)
    leaf = code["properties"]["code"]  # no $ref: compiled alone, in microseconds
    assert checks.check(leaf, root["$defs"]).skip == 0


def test_serve_compiles_the_shared_validator_before_any_request(tmp_path):
    """Even when no default answer checks anything (every answer a 204), the first request compiles nothing."""
    spec = load_spec(write(tmp_path, "api.yaml", REFUSED.replace('pattern: "^[a-z]+\\\\Z"', "minLength: 2")))
    served = serve(spec)
    shared = next(iter(served.values())).samples.shared
    assert shared.built and shared.validator is not None


@pytest.mark.parametrize(("name", "answers_need_them"), [("tree.yaml", False), ("overlapping-oneof.yaml", True)])
def test_subschemas_holding_a_ref_are_compiled_when_one_is_first_checked(name, answers_need_them, caplog):
    """The places and `$defs` entries are compiled at start; the pointers (every other subschema with a `$ref` in
    it) by the first check of one, once, with the verdicts of each compiled alone. (A default answer made for a
    `oneOf` checks its branches: those of overlapping-oneof.yaml do.)"""
    caplog.set_level(logging.ERROR)
    spec = load_spec(SPECS / name)
    served = serve(spec)
    for op in spec.operations:  # requests checked and default answers made: the places are enough
        assert served[op].check is not None
        for key in op.responses:
            served[op].answer(key).build(None)
    checks = next(iter(served.values())).samples
    shared = checks.shared
    assert shared.validator is not None and shared.pointed_tried is answers_need_them
    defs = next(s["$defs"] for s in places(spec) if isinstance(s, dict) and "$defs" in s)
    pointed = [s for s in _mappings(defs) if (n := shared.name(s)) is not None and shared.found.is_pointer(n)]
    assert pointed
    for sub in pointed:
        check = checks.check(sub, defs)
        assert check.skip == 1 and check.fast.validator is shared.pointed is not None
        alone = SchemaCheck({**sub, "$defs": defs}, "test")
        for value in (None, {}, [], [{}], "x", 5, [{"name": "Fern", "children": []}], {"next": {"next": None}}):
            assert check.errors(value, "body") == alone.errors(value, "body"), (sub, value)
    assert shared.pointed is checks.check(pointed[0], defs).fast.validator  # compiled once


def _mappings(node: object) -> list[dict]:
    return [item for item in inside(node) if isinstance(item, dict)]


def test_control_leaves_the_garbage_collector_as_it_found_it():
    """Off while the spec loads (server/runtime.py), then as it was."""
    assert gc.isenabled()
    Sessions(load(Settings())).default.close()
    assert gc.isenabled()
    gc.disable()
    try:
        Sessions(load(Settings())).default.close()
        assert not gc.isenabled()
    finally:
        gc.enable()
