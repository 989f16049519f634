"""The spec loader on documents written for these tests: semantics through SchemaCheck, exact refusals."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from openapi_spec_validator import validate as validate_openapi

from plantstub._yaml import parse_bytes
from plantstub.contract import schema as schema_module
from plantstub.contract.load import bundled_spec_path, load_spec
from plantstub.contract.model import Operation, SecurityScheme, Spec
from plantstub.contract.schema import EngineMismatch, SchemaCheck
from plantstub.errors import SpecError
from tests.helpers import SPECS

GOOD = ["greenhouse-3.0.yaml", "greenhouse-3.1.json", "tree.yaml", "webhooks-only.yaml", "multi/main.yaml"]


def operation(spec: Spec, label: str) -> Operation:
    return next(op for op in spec.operations if op.label == label)


def body_errors(schema: dict | bool | None, value: object) -> list[str]:
    assert schema is not None
    return [str(v) for v in SchemaCheck(schema, "test").errors(value, "body")]


def request_schema(op: Operation) -> dict | bool | None:
    assert op.body is not None
    return op.body["application/json"].schema


def param(op: Operation, name: str):
    return next(p for p in op.parameters if p.name == name)


@pytest.fixture(scope="module")
def greenhouse30() -> Spec:
    return load_spec(SPECS / "greenhouse-3.0.yaml")


def read_spec_file(path: Path) -> Any:
    """A spec file's document, parsed as the loader parses it."""
    return parse_bytes(path.read_bytes(), str(path))


@pytest.fixture(scope="module")
def greenhouse31() -> Spec:
    return load_spec(SPECS / "greenhouse-3.1.json")


# -- the bundled Plant Store -------------------------------------------------------------------
def test_load_spec_bundled_is_valid_openapi_3_1():
    document = read_spec_file(bundled_spec_path())
    validate_openapi(document)
    assert document["openapi"] == "3.1.0"
    assert load_spec().openapi == "3.1.0"


def test_load_spec_full_store_by_name_is_valid_openapi_3_1():
    validate_openapi(read_spec_file(bundled_spec_path("plant-store-full")))
    spec = load_spec("plant-store-full")
    assert [op.label for op in spec.operations] == ["GET /plants", "POST /plants", "DELETE /plants/{id}"]
    limit = param(operation(spec, "GET /plants"), "limit")
    assert (limit.location, limit.required, limit.schema["format"]) == ("query", False, "int32")
    delete = operation(spec, "DELETE /plants/{id}")
    assert delete.security == ((SecurityScheme("bearerAuth", "http", scheme="bearer"),),)
    assert sorted(delete.responses) == ["204", "400"]


def test_load_spec_unknown_name_lists_the_bundled_documents(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError, match=re.escape("cannot use spec plant-store-ful: no such file (the bundled documents, by name: plant-store, plant-store-full)")):
        load_spec("plant-store-ful")


def test_load_spec_bundled_matches_product():
    spec = load_spec()
    assert [op.label for op in spec.operations] == ["POST /plants"]
    op = spec.operations[0]
    assert op.security == ((SecurityScheme("bearerAuth", "http", scheme="bearer"),),)
    assert list(op.responses) == ["200", "400"]
    assert op.body_required is True
    assert body_errors(request_schema(op), {}) == [
        "body: 'name' is a required property", "body: 'id' is a required property"]
    assert body_errors(request_schema(op), {"id": 2**63, "name": "Fern"}) == [
        "body.id: 9223372036854775808 is greater than the maximum of 9223372036854775807"]
    assert body_errors(request_schema(op), {"id": 1, "name": "Fern", "tag": "fern"}) == []
    plant = op.responses["200"].content["application/json"].schema
    assert body_errors(plant, {}) == ["body: 'name' is a required property"]
    assert body_errors(plant, {"name": "Fern", "tag": "fern"}) == []
    error = op.responses["400"].content["application/json"].schema
    assert body_errors(error, {}) == [
        "body: 'error' is a required property", "body: 'message' is a required property"]
    assert body_errors(error, {"error": 2**31, "message": "m"}) == [
        "body.error: 2147483648 is greater than the maximum of 2147483647"]


# -- documents we wrote, in the shapes real APIs use ---------------------------------------------
@pytest.mark.parametrize("name", GOOD, ids=GOOD)
def test_load_spec_test_documents_are_valid_openapi(name):
    path = SPECS / name
    validate_openapi(read_spec_file(path), base_uri=path.as_uri())


@pytest.mark.parametrize(
    ("name", "labels"),
    [
        ("greenhouse-3.0.yaml", ["GET /beds/{bedId}/plants", "POST /beds/{bedId}/plants", "GET /health",
                                 "GET /beds/{bedId}/plants/{plantId}"]),
        ("greenhouse-3.1.json", ["POST /sensors/{sensorId}/readings"]),
        ("tree.yaml", ["PUT /taxa", "GET /gardeners/{id}"]),
        ("webhooks-only.yaml", []),
        ("multi/main.yaml", ["GET /plants", "POST /plants", "GET /plants/{plantId}"]),
    ],
    ids=["3.0-yaml", "3.1-json", "recursive", "webhooks-only", "multi-file"],
)
def test_load_spec_reads_operations_in_document_order(name, labels):
    spec = load_spec(SPECS / name)
    assert [op.label for op in spec.operations] == labels
    for op in spec.operations:  # every schema compiles for both validators
        schemas = [p.schema for p in op.parameters] + [m.schema for m in (op.body or {}).values()]
        schemas += [m.schema for r in op.responses.values() for m in r.content.values()]
        for schema in filter(lambda s: s is not None, schemas):
            SchemaCheck(schema, op.label)


def test_load_spec_3_0_nullable_accepts_null(greenhouse30):
    schema = request_schema(operation(greenhouse30, "POST /beds/{bedId}/plants"))
    assert body_errors(schema, {"name": "Fern", "height": 1, "watered": None, "mood": None}) == []
    assert body_errors(schema, {"name": "Fern", "height": 1, "watered": "2024-05-01", "mood": "calm"}) == []
    assert body_errors(schema, {"name": "Fern", "height": 1, "mood": "angry"}) == [
        "body.mood: 'angry' is not one of ['calm', 'thirsty', None]"]


def test_load_spec_3_1_ignores_nullable_and_reads_type_lists(greenhouse31):
    schema = request_schema(greenhouse31.operations[0])
    assert body_errors(schema, {"celsius": 20, "label": "a", "humidity": None}) == []
    assert body_errors(schema, {"celsius": 20, "label": "a", "legacy": None}) == [
        "body.legacy: None is not of type 'string'"]


@pytest.mark.parametrize(
    ("field", "value", "errors"),
    [
        ("height", 0, ["body.height: 0 is less than or equal to the minimum of 0"]),
        ("height", 0.1, []),
        ("depth", 5, ["body.depth: 5 is less than or equal to the minimum of 5"]),
        ("depth", 6, []),
        ("depth", 40, []),  # exclusiveMaximum: false keeps 40 allowed
        ("depth", 41, ["body.depth: 41 is greater than the maximum of 40"]),
    ],
    ids=["height-0", "height-0.1", "depth-5", "depth-6", "depth-40", "depth-41"],
)
def test_load_spec_3_0_boolean_exclusive_bounds(greenhouse30, field, value, errors):
    schema = request_schema(operation(greenhouse30, "POST /beds/{bedId}/plants"))
    body = {"name": "Fern", "height": 1, field: value}
    assert body_errors(schema, body) == errors


def test_load_spec_3_1_numeric_exclusive_minimum(greenhouse31):
    schema = request_schema(greenhouse31.operations[0])
    assert body_errors(schema, {"celsius": -273.15, "label": "a"}) == [
        "body.celsius: -273.15 is less than or equal to the minimum of -273.15"]
    assert body_errors(schema, {"celsius": -273, "label": "a"}) == []


def test_load_spec_3_0_ignores_ref_siblings(greenhouse30):
    schema = request_schema(operation(greenhouse30, "POST /beds/{bedId}/plants"))
    assert body_errors(schema, {"name": "Monstera", "height": 1}) == []  # maxLength: 3 next to $ref: no effect
    assert body_errors(schema, {"name": "", "height": 1}) == ["body.name: '' should be non-empty"]


def test_load_spec_3_1_applies_ref_siblings(greenhouse31):
    schema = request_schema(greenhouse31.operations[0])
    assert body_errors(schema, {"celsius": 1, "label": "abcd"}) == ["body.label: 'abcd' is too long"]
    assert body_errors(schema, {"celsius": 1, "label": ""}) == ["body.label: '' should be non-empty"]


def test_load_spec_int_formats_become_bounds(greenhouse30):
    op = operation(greenhouse30, "GET /beds/{bedId}/plants/{plantId}")
    plant_id = param(op, "plantId").schema
    assert body_errors(plant_id, 2**63 - 1) == []
    assert body_errors(plant_id, 2**63) == [
        "body: 9223372036854775808 is greater than the maximum of 9223372036854775807"]
    assert body_errors(param(op, "bedId").schema, 2**31) == [
        "body: 2147483648 is greater than the maximum of 2147483647"]


def test_load_spec_all_of_requires_every_part(greenhouse30):
    created = operation(greenhouse30, "POST /beds/{bedId}/plants").responses["201"].content["application/json"]
    assert body_errors(created.schema, {"name": "Fern"}) == [
        "body: 'height' is a required property", "body: 'id' is a required property"]
    assert body_errors(created.schema, created.example) == []


def test_load_spec_operation_parameter_replaces_path_parameter(greenhouse30):
    listing = operation(greenhouse30, "GET /beds/{bedId}/plants")
    assert [(p.name, p.location, p.required) for p in listing.parameters] == [
        ("bedId", "path", True), ("limit", "query", False), ("X-Request-Id", "header", True), ("tag", "query", False)]
    assert body_errors(param(listing, "limit").schema, 11) == ["body: 11 is greater than the maximum of 10"]
    planting = operation(greenhouse30, "POST /beds/{bedId}/plants")
    assert body_errors(param(planting, "limit").schema, 11) == []


def test_load_spec_reads_security(greenhouse30):
    api_key = SecurityScheme("apiKey", "apiKey", location="header", param="X-API-Key")
    assert operation(greenhouse30, "GET /beds/{bedId}/plants").security == ((api_key,),)
    assert operation(greenhouse30, "GET /health").security == ()  # security: [] means no auth


def test_load_spec_status_keys_are_strings(greenhouse30):
    assert list(operation(greenhouse30, "GET /beds/{bedId}/plants").responses) == ["200", "default"]
    assert list(operation(greenhouse30, "POST /beds/{bedId}/plants").responses) == ["201", "422"]


def test_load_spec_follows_escaped_json_pointers(greenhouse30):
    reused = operation(greenhouse30, "GET /beds/{bedId}/plants/{plantId}").responses["200"]
    assert reused.description == "Planted."
    note = reused.content["application/json"].schema["$defs"]["Plant_Note"]
    assert note == {"type": "string", "maxLength": 140}


def test_load_spec_reads_yaml_like_json(greenhouse30):
    tag = param(operation(greenhouse30, "GET /beds/{bedId}/plants"), "tag").schema
    assert tag["items"]["enum"] == ["NO", "yes", "off"]  # not booleans, as YAML 1.1 would have it
    planting = operation(greenhouse30, "POST /beds/{bedId}/plants")
    assert request_schema(planting)["$defs"]["NewPlant"]["properties"]["waterAt"]["example"] == "18:00"
    assert planting.body["application/json"].examples == {"fern": {"name": "Fern", "height": 12.5}}


def test_load_spec_recursive_tree_validates_deep(tmp_path):
    op = load_spec(SPECS / "tree.yaml").operations[0]
    leaf = {"name": "Monstera deliciosa", "rank": "species"}
    genus = {"name": "Monstera", "rank": "genus", "children": [leaf]}
    tree = {"name": "Araceae", "rank": "family", "children": [genus]}
    assert body_errors(request_schema(op), tree) == []
    tree["children"][0]["children"].append({"name": "Thai Constellation", "rank": "cultivar"})
    assert body_errors(request_schema(op), tree) == [
        "body.children[0].children[1].rank: 'cultivar' is not one of ['family', 'genus', 'species']"]


def test_load_spec_mutually_recursive_schemas():
    op = load_spec(SPECS / "tree.yaml").operations[1]
    schema = op.responses["200"].content["application/json"].schema
    chain = {"name": "Ada", "mentor": {"since": 1990, "gardener": {"name": "Bo", "mentor": {"since": 1970}}}}
    assert body_errors(schema, chain) == []
    chain["mentor"]["gardener"]["mentor"]["since"] = 1800
    assert body_errors(schema, chain) == [
        "body.mentor.gardener.mentor.since: 1800 is less than the minimum of 1900"]


def test_load_spec_resolves_sibling_files():
    spec = load_spec(SPECS / "multi" / "main.yaml")
    listing, adding, getting = spec.operations
    plant = {"name": "Fern", "height": {"value": 30, "unit": "cm"}}
    assert body_errors(listing.responses["200"].content["application/json"].schema, [plant]) == []
    # units.yaml refers back to main.yaml for the unit enum
    assert body_errors(getting.responses["200"].content["application/json"].schema, {**plant, "height": {
        "value": 30, "unit": "ft"}}) == ["body.height.unit: 'ft' is not one of ['mm', 'cm', 'm']"]
    assert adding.body_required is True
    assert body_errors(request_schema(adding), {"name": ""}) == [
        "body: 'height' is a required property", "body.name: '' should be non-empty"]
    assert body_errors(param(getting, "plantId").schema, 0) == ["body: 0 is less than the minimum of 1"]


def test_load_spec_webhooks_only_has_no_operations():
    spec = load_spec(SPECS / "webhooks-only.yaml")
    assert (spec.openapi, spec.title, spec.operations) == ("3.1.0", "Garden events", ())


def test_load_spec_reads_a_yaml_null_in_a_type_list(tmp_path):
    path = tmp_path / "api.yaml"
    path.write_text(
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    post:\n      requestBody:\n"
        "        content:\n          application/json:\n            schema: {type: [string, null]}\n"
        "      responses: {'200': {description: ok}}\n")
    schema = request_schema(load_spec(path).operations[0])
    assert body_errors(schema, None) == [] and body_errors(schema, "x") == []


# -- refusals: one defect per document, one paragraph each --------------------------------------
BROKEN = {
    "swagger-1.yaml": "{path}:1: swagger: '1.2' is not supported (plantstub reads Swagger 2.0 and OpenAPI 3.0, 3.1 "
                      "and 3.2)",
    "openapi-4.yaml": "{path}: openapi: '4.0.0' is not supported (expected 3.0.x, 3.1.x or 3.2.x)",
    "no-openapi-field.yaml": "{path}: no 'openapi' field: this is not an OpenAPI 3.x document (nor Swagger 2.0: no "
                             "'swagger' field)",
    "not-a-mapping.yaml": "{path}: the document is not a mapping of OpenAPI fields",
    "bad-yaml.yaml": re.compile(r":6: not valid YAML: \S.*"),  # the reason after ours is libyaml's
    # After the path, plantstub's framing only: the line and the reason are CPython's json module's, and 3.13 says
    # "Illegal trailing comma before end of object" on line 4 where 3.10-3.12 say "Expecting property name ..." on 5.
    "bad-json.json": re.compile(r":[45]: not valid JSON: \S.*"),
    "duplicate-key.yaml": "{path}:8: not valid YAML: duplicate key 'get' (first at line 5)",
    "unresolvable-ref.yaml": "{path}: paths./plants.get.responses.200.content.application/json.schema: "
                             "$ref '#/components/schemas/Plnt': {path} has nothing at '/components/schemas/Plnt' "
                             "(did you mean 'Plant'?)",
    "missing-file-ref.yaml": "{path}: paths./plants: $ref 'paths/plants.yaml': paths/plants.yaml: no such file",
    "http-ref.yaml": "{path}: paths./plants.post.requestBody.content.application/json.schema: "
                     "$ref 'https://schemas.example.com/plant.json': only local files can be referenced (no network)",
    "bad-schema-type.yaml": "{path}: paths./plants.post.requestBody.content.application/json.schema: "
                            "not valid JSON Schema (read as OpenAPI 3.0's schema dialect, rewritten to 2020-12) at "
                            "$defs.Plant.properties.height.type: "
                            "12 is not valid under any of the given schemas",
    "bad-pattern.yaml": "{path}: paths./plants/{{name}}.get.parameters[0].schema: not valid JSON Schema (read as JSON Schema 2020-12) at "
                        "pattern: "
                        "'^(\\\\d+$' is not a regular expression jsonschema-rs can run "
                        "(ECMA-262, as JSON Schema writes them)",
    "ref-loop-parameters.yaml": "{path}: paths./plants.get.parameters[0]: $ref loop: #/components/parameters/Limit"
                                " -> #/components/parameters/PageSize -> #/components/parameters/Limit",
    "ref-loop-schemas.yaml": "{path}: paths./plants.get.responses.200.content.application/json.schema: "
                             "$ref loop with no schema in it: #/components/schemas/Plant -> "
                             "#/components/schemas/Flora -> #/components/schemas/Plant",
    "security-as-mapping.yaml": "{path}: paths./plants.get.security: expected a list of security requirements, "
                                "found dict {{'bearer': []}}",
    "examples-as-list.yaml": "{path}: paths./plants.get.responses.200.content.application/json.examples: "
                             "expected a mapping of Example objects, found list [[{{'name': 'Fern'}}]]",
    "path-without-slash.yaml": "{path}: paths: 'plants' must start with '/'",
}


def test_load_spec_blames_itself_not_the_document_when_its_call_to_jsonschema_rs_fails(monkeypatch):
    real = schema_module.jsonschema_rs.Draft202012Validator

    def older_release(schema, **options):  # jsonschema-rs before 0.52 took no `offline`
        if "offline" in options:
            raise TypeError("got an unexpected keyword argument 'offline'")
        return real(schema, **options)

    monkeypatch.setattr(schema_module.jsonschema_rs, "Draft202012Validator", older_release)
    schema_module._fast_metaschema.cache_clear()  # built again, with the older release
    with pytest.raises(EngineMismatch) as caught:
        load_spec("plant-store-full")
    schema_module._fast_metaschema.cache_clear()
    assert not isinstance(caught.value, SpecError)
    assert re.fullmatch(r"plantstub internal error \(a bug in plantstub, not in the spec\): jsonschema-rs \S+ does not"
                        r" take plantstub's call \(TypeError: got an unexpected keyword argument 'offline'\)",
                        str(caught.value)), str(caught.value)


@pytest.mark.parametrize(("name", "message"), list(BROKEN.items()), ids=list(BROKEN))
def test_load_spec_refuses_broken_document(name, message):
    path = SPECS / "broken" / name
    with pytest.raises(SpecError) as refused:
        load_spec(path)
    if isinstance(message, re.Pattern):
        assert re.fullmatch(re.escape(f"cannot use spec {path}") + message.pattern, str(refused.value)), str(refused.value)
    else:
        assert str(refused.value) == "cannot use spec " + message.format(path=path)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("paths", "message"),
    [
        ("{/a: {get: nope}}", "paths./a.get: expected an Operation mapping, found str 'nope'"),
        ("{/a: {get: {responses: [200]}}}",
         "paths./a.get.responses: expected a mapping of status codes, found list [200]"),
        ("{/a: {parameters: {limit: 1}}}", "paths./a.parameters: expected a list, found dict {'limit': 1}"),
        ("{/a: {get: {parameters: [{name: q}]}}}", "paths./a.get.parameters[0]: a parameter needs 'name' and 'in'"),
        ("{/a: {get: {parameters: [{name: q, in: body}]}}}",
         "paths./a.get.parameters[0]: in: 'body' is not one of path, query, header, cookie"),
        ("{/a: {get: {requestBody: [], responses: {}}}}",
         "paths./a.get.requestBody: expected a Request Body mapping, found list []"),
        ("{/a: {get: {responses: {'200': {description: d, content: {application/json: 3}}}}}}",
         "paths./a.get.responses.200.content.application/json: expected a Media Type mapping, found int 3"),
        ("[]", "paths: expected a mapping of path templates, found list []"),
    ],
    ids=["operation", "responses", "path-parameters", "parameter-fields", "parameter-in", "request-body",
         "media-type", "paths"],
)
def test_load_spec_refuses_odd_shapes_in_one_paragraph(tmp_path, paths, message):
    path = tmp_path / "api.yaml"
    path.write_text(f"openapi: 3.0.3\ninfo: {{title: t, version: '1'}}\npaths: {paths}\n")
    with pytest.raises(SpecError) as refused:
        load_spec(path)
    assert str(refused.value) == f"cannot use spec {path}: {message}"


def test_load_spec_missing_file(tmp_path):
    path = tmp_path / "nowhere.yaml"
    with pytest.raises(SpecError) as refused:
        load_spec(path)
    assert str(refused.value) == f"cannot use spec {path}: no such file"
