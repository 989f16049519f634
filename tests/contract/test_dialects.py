"""Schemas written in another JSON Schema dialect (`jsonSchemaDialect`, a schema's `$schema`) served as they mean."""

from __future__ import annotations

import json
import logging

import pytest

from plantstub import create_app
from plantstub.contract.load import load_spec
from plantstub.errors import SpecError
from tests.helpers import write

DRAFT4 = "http://json-schema.org/draft-04/schema#"
DRAFT7 = "http://json-schema.org/draft-07/schema#"
DRAFT2019 = "https://json-schema.org/draft/2019-09/schema"
OAS_BASE = "https://spec.openapis.org/oas/3.1/dialect/base"


def spec_text(schema: dict, *, dialect: str | None = None, components: dict | None = None) -> str:
    """A 3.1 document (JSON is YAML) whose POST /x takes a body of `schema`."""
    doc: dict = {
        "openapi": "3.1.0",
        "info": {"title": "Dialects", "version": "1"},
        "paths": {"/x": {"post": {
            "requestBody": {"required": True, "content": {"application/json": {"schema": schema}}},
            "responses": {"200": {"description": "ok"}},
        }}},
    }
    if dialect is not None:
        doc["jsonSchemaDialect"] = dialect
    if components is not None:
        doc["components"] = {"schemas": components}
    return json.dumps(doc)


async def statuses(aiohttp_client, tmp_path, text: str, bodies: list) -> list[int]:
    """The status POST /x gets for each body, from a stub serving the document `text`."""
    client = await aiohttp_client(create_app(spec=str(write(tmp_path, "api.yaml", text))))
    found = []
    for body in bodies:
        response = await client.post("/x", json=body)
        found.append(response.status)
    return found


DRAFT4_BODY = {
    "type": "object",
    "id": "http://example.com/thing",  # draft-04's $id: no URL is ever resolved against it
    "properties": {
        "count": {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
        "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": False},
    },
    "dependencies": {"card": ["billing"], "gift": {"required": ["message"]}},
}


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"count": 1}, 200),
        ({"count": 0}, 400),  # exclusiveMinimum: true makes the minimum exclusive
        ({"pair": ["a", 1]}, 200),
        ({"pair": ["a", 1, 2]}, 400),  # additionalItems: false beside the tuple form
        ({"pair": ["a", "b"]}, 400),
        ({"card": 1}, 400),  # dependencies with a list: dependentRequired
        ({"card": 1, "billing": 2}, 200),
        ({"gift": 1}, 400),  # dependencies with a schema: dependentSchemas
        ({"gift": 1, "message": "hi"}, 200),
    ],
)
async def test_json_schema_dialect_draft_04_is_served_as_draft_04(aiohttp_client, tmp_path, body, status):
    text = spec_text(DRAFT4_BODY, dialect=DRAFT4)
    assert await statuses(aiohttp_client, tmp_path, text, [body]) == [status]


async def test_json_schema_dialect_draft_04_refuses_with_draft_04_meaning_in_the_message(aiohttp_client, tmp_path):
    client = await aiohttp_client(create_app(spec=str(write(tmp_path, "api.yaml", spec_text(DRAFT4_BODY, dialect=DRAFT4)))))
    response = await client.post("/x", json={"count": 0})
    assert (await response.json())["message"] == "body.count: 0 is less than or equal to the minimum of 0"


async def test_schema_keyword_draft_07_ignores_ref_siblings_where_2020_12_applies_them(aiohttp_client, tmp_path):
    components = {"Name": {"type": "string"}}
    old = {"$schema": DRAFT7, "type": "object", "properties": {
        "name": {"$ref": "#/components/schemas/Name", "maxLength": 2}}}
    new = {"type": "object", "properties": {"name": {"$ref": "#/components/schemas/Name", "maxLength": 2}}}
    body = {"name": "long"}
    assert await statuses(aiohttp_client, tmp_path, spec_text(old, components=components), [body]) == [200]
    assert await statuses(aiohttp_client, tmp_path, spec_text(new, components=components), [body]) == [400]


async def test_schema_keyword_2019_09_tuple_items_and_additional_items(aiohttp_client, tmp_path):
    schema = {"$schema": DRAFT2019, "type": "array", "items": [{"type": "integer"}], "additionalItems": {"type": "string"}}
    found = await statuses(aiohttp_client, tmp_path, spec_text(schema), [[1, "a", "b"], [1, 2], ["a"]])
    assert found == [200, 400, 400]


async def test_ref_into_a_draft_04_schema_reads_the_target_as_draft_04(aiohttp_client, tmp_path):
    # The document is 2020-12; the component says draft-04, and so does everything inside it.
    components = {"Legacy": {"$schema": DRAFT4, "definitions": {
        "Positive": {"type": "number", "minimum": 0, "exclusiveMinimum": True}}}}
    schema = {"type": "object", "properties": {"n": {"$ref": "#/components/schemas/Legacy/definitions/Positive"}}}
    found = await statuses(aiohttp_client, tmp_path, spec_text(schema, components=components), [{"n": 0}, {"n": 0.5}])
    assert found == [400, 200]


async def test_openapi_base_dialect_is_2020_12(aiohttp_client, tmp_path):
    schema = {"type": "array", "prefixItems": [{"type": "integer"}], "items": False,
              "discriminator": {"propertyName": "kind"}}  # an OpenAPI vocabulary keyword: an annotation
    found = await statuses(aiohttp_client, tmp_path, spec_text(schema, dialect=OAS_BASE), [[1], [1, 2], ["a"]])
    assert found == [200, 400, 400]


async def test_openapi_3_0_tuple_items_take_additional_items(aiohttp_client, tmp_path):
    text = spec_text({"type": "array", "items": [{"type": "integer"}], "additionalItems": False}).replace(
        '"3.1.0"', '"3.0.3"')
    assert await statuses(aiohttp_client, tmp_path, text, [[1], [1, 2]]) == [200, 400]


async def test_unknown_dialect_is_read_as_2020_12_with_a_warning_in_health(aiohttp_client, tmp_path, caplog):
    text = spec_text({"type": "integer", "exclusiveMinimum": 0}, dialect="https://example.com/our-dialect")
    with caplog.at_level(logging.WARNING, logger="plantstub"):
        client = await aiohttp_client(create_app(spec=str(write(tmp_path, "api.yaml", text))))
    warning = ("jsonSchemaDialect 'https://example.com/our-dialect' is not a JSON Schema dialect plantstub knows"
               " (draft-04, draft-06, draft-07, 2019-09, 2020-12 and the OpenAPI 3.1 and 3.2 dialects):"
               " its schemas are read as 2020-12")
    health = await (await client.get("/__plantstub/health")).json()
    assert health["spec"]["warnings"] == [warning]
    assert [r.getMessage() for r in caplog.records] == [f"plantstub: spec {tmp_path / 'api.yaml'}: {warning}"]
    assert [(await client.post("/x", json=v)).status for v in (0, 1)] == [400, 200]


def test_draft_03_is_refused_at_start_naming_the_dialect(tmp_path):
    schema = {"$schema": "http://json-schema.org/draft-03/schema#", "type": "object"}
    path = write(tmp_path, "api.yaml", spec_text(schema))
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert str(caught.value) == (
        f"cannot use spec {path}: paths./x.post.requestBody.content.application/json.schema: $schema"
        " 'http://json-schema.org/draft-03/schema#': JSON Schema draft-03 is not supported"
        " (plantstub reads draft-04, draft-06, draft-07, 2019-09, 2020-12 and the OpenAPI 3.1 and 3.2 dialects)")


def test_json_schema_dialect_that_is_not_a_string_is_refused(tmp_path):
    path = write(tmp_path, "api.yaml", spec_text({"type": "object"}, dialect=None).replace(
        '"openapi"', '"jsonSchemaDialect": 4, "openapi"'))
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert str(caught.value) == f"cannot use spec {path}: jsonSchemaDialect: expected a URI, found int 4"
