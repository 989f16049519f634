"""Swagger 2.0 documents read as they mean (contract/swagger2.py): the model they load into, requests checked by
it, and every message at the 2.0 document's own place and line."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from plantstub.contract.load import _Loader, load_spec
from plantstub.contract.model import Operation, SecurityScheme, Spec
from plantstub.contract.requests import RequestCheck
from plantstub.errors import SpecError
from tests.helpers import SPECS, make_request

SWAGGER = SPECS / "swagger2"


def operation(spec: Spec, label: str) -> Operation:
    return next(op for op in spec.operations if op.label == label)


def violations(op: Operation, path: str = "", params: dict[str, str] | None = None, **request: object) -> list[str]:
    check = RequestCheck(op)
    incoming = make_request(op.method, path or op.path, **request)  # type: ignore[arg-type]
    found, _ = check.violations(incoming, params or {})
    return [str(v) for v in found]


def write(tmp_path: Path, text: str, name: str = "api.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


HEAD = 'swagger: "2.0"\ninfo: {title: t, version: "1"}\n'


# -- the four documents of the issue ------------------------------------------------------------------------
def test_swagger2_petstore_loads_as_its_operations():
    spec = load_spec(SPECS / "oas-examples-2.0" / "yaml" / "petstore.yaml", cache=False)
    assert spec.openapi == "2.0" and spec.title == "Swagger Petstore" and spec.warnings == ()
    assert len(spec.operations) == 20
    add = operation(spec, "POST /pet")
    assert add.body_required and list(add.body or {}) == ["application/json", "application/xml"]
    assert [alt[0].name for alt in add.security] == ["petstore_auth"]
    assert add.security[0][0].type == "oauth2"


def test_swagger2_form_data_upload_is_a_multipart_body():
    op = operation(load_spec(SWAGGER / "upload.yaml", cache=False), "POST /plants/{plantId}/photo")
    assert [(p.name, p.location, p.required) for p in op.parameters] == [("plantId", "path", True)]
    assert op.body_required and list(op.body or {}) == ["multipart/form-data"]
    schema = (op.body or {})["multipart/form-data"].schema
    assert isinstance(schema, dict)
    assert schema["required"] == ["photo"]
    assert schema["properties"]["photo"] == {"description": "The picture", "type": "string", "format": "binary"}
    assert schema["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    boundary = "BOUND"
    part = ('--BOUND\r\nContent-Disposition: form-data; name="{}"{}\r\n\r\n{}\r\n')
    sent = (part.format("photo", '; filename="fern.png"\r\nContent-Type: image/png', "\x89PNG")
            + part.format("tags", "", "fern") + part.format("tags", "", "green") + "--BOUND--\r\n").encode()
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    assert violations(op, "/plants/1/photo", {"plantId": "1"}, headers=headers, raw=sent) == []
    missing = (part.format("caption", "", "x" * 41) + "--BOUND--\r\n").encode()
    assert violations(op, "/plants/x/photo", {"plantId": "x"}, headers=headers, raw=missing) == [
        "path.plantId: 'x' is not of type 'integer'",
        "body: 'photo' is a required property", "body.caption: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' is too long"]


def test_swagger2_file_response_is_binary():
    op = operation(load_spec(SWAGGER / "upload.yaml", cache=False), "GET /plants/{plantId}/photo.png")
    assert op.responses["200"].content["image/png"].schema == {"type": "string", "format": "binary"}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"tag": ["fern", "palm"]}, []),
        ({"tag": ["fern"], "ids": ["1,2,3"], "words": ["a b"], "heights": ["1|2"], "codes": ["4\t5"]}, []),
        ({"tag": ["rose"]}, ["query.tag[0]: 'rose' is not one of ['fern', 'cactus', 'palm']"]),
        ({"tag": ["fern"], "ids": ["1,x"]}, ["query.ids[1]: 'x' is not of type 'integer'"]),
        ({"tag": ["fern"], "heights": ["1|x"]}, ["query.heights[1]: 'x' is not of type 'integer'"]),
        ({"tag": ["fern"], "codes": ["1\tx"]}, ["query.codes[1]: 'x' is not of type 'integer'"]),
        ({}, ["query.tag: required parameter is missing"]),
    ],
    ids=["multi", "every-format", "multi-enum", "csv", "pipes", "tsv", "required"],
)
def test_swagger2_collection_formats_are_read_as_written(query, expected):
    op = operation(load_spec(SWAGGER / "multi.yaml", cache=False), "GET /plants")
    assert violations(op, query=query) == expected


def test_swagger2_collection_formats_become_styles():
    op = operation(load_spec(SWAGGER / "multi.yaml", cache=False), "GET /plants")
    styles = {p.name: (p.style, p.explode) for p in op.parameters}
    assert styles == {"tag": ("form", True), "ids": ("form", False), "words": ("spaceDelimited", False),
                      "heights": ("pipeDelimited", False), "codes": ("tabDelimited", False), "limit": ("form", True)}
    assert op.responses["200"].headers == {"X-Total": {"type": "integer"}}


def test_swagger2_security_definitions_are_security_schemes():
    spec = load_spec(SWAGGER / "api-key.yaml", cache=False)
    listed = operation(spec, "GET /plants")
    assert listed.security == ((SecurityScheme("api_key", "apiKey", "", "header", "X-Api-Key"),),)
    read = operation(spec, "GET /plants/{id}")
    assert read.security == ((SecurityScheme("query_key", "apiKey", "", "query", "key"),),
                             (SecurityScheme("basic", "http", "basic", "", ""),))
    assert operation(spec, "DELETE /plants/{id}").security == ((SecurityScheme("oauth", "oauth2", "", "", ""),),)
    assert operation(spec, "GET /health").security == ()
    assert violations(listed) == ["headers.X-Api-Key: missing API key (api_key)"]
    assert violations(listed, headers={"X-Api-Key": "k"}) == []
    assert violations(read, "/plants/1", {"id": "1"}, query={"key": ["k"]}) == []


# -- conversion rules ---------------------------------------------------------------------------------------
DOCUMENT = HEAD + """\
host: api.example.com
basePath: /v1/
schemes: [https]
consumes: [application/json, application/xml]
x-origin: kept
parameters:
  limit: {name: limit, in: query, type: integer, minimum: 1}
  body: {name: plant, in: body, required: true, schema: {$ref: "#/definitions/Plant"}}
responses:
  Missing: {description: no such plant, schema: {$ref: "#/definitions/Error"}}
paths:
  /plants:
    parameters:
      - {name: X-Trace, in: header, type: string}
      - $ref: "#/parameters/body"
    get:
      produces: [application/json]
      parameters: [{$ref: "#/parameters/limit"}]
      responses:
        "200":
          description: ok
          schema: {type: array, items: {$ref: "#/definitions/Plant"}}
          examples: {application/json: [{name: Fern, kind: fern}], text/plain: "Fern"}
        default: {$ref: "#/responses/Missing"}
    post:
      responses:
        "201": {description: made, schema: {$ref: "#/definitions/Plant"}}
  /forms:
    post:
      consumes: [application/x-www-form-urlencoded, multipart/form-data]
      parameters:
        - {name: count, in: formData, type: integer, required: true}
        - {name: ids, in: formData, type: array, items: {type: integer}}
      responses:
        "204": {description: taken}
definitions:
  Plant:
    type: object
    required: [name]
    discriminator: kind
    properties:
      name: {type: string}
      kind: {type: string}
      note: {type: string, x-nullable: true}
  Error: {type: object, properties: {message: {type: string}}}
"""


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Spec:
    return load_spec(write(tmp_path_factory.mktemp("swagger"), DOCUMENT), cache=False)


def test_swagger2_body_parameter_is_a_body_in_each_media_type_consumed(converted):
    post = operation(converted, "POST /plants")
    assert post.body_required and list(post.body or {}) == ["application/json", "application/xml"]
    assert [p.name for p in post.parameters] == ["X-Trace"]  # the path's own, kept
    assert violations(post, raw=b'{"name": 3}', headers={"Content-Type": "application/json"}) == [
        "body.name: 3 is not of type 'string'"]


def test_swagger2_path_level_body_applies_to_every_operation(converted):
    get = operation(converted, "GET /plants")
    assert list(get.body or {}) == ["application/json", "application/xml"]
    assert [p.name for p in get.parameters] == ["X-Trace", "limit"]


def test_swagger2_response_schema_examples_and_references(converted):
    get = operation(converted, "GET /plants")
    ok = get.responses["200"]
    assert list(ok.content) == ["application/json", "text/plain"]
    assert ok.content["application/json"].examples == {"response": [{"name": "Fern", "kind": "fern"}]}
    assert ok.content["text/plain"].schema is None and ok.content["text/plain"].examples == {"response": "Fern"}
    missing = get.responses["default"]
    assert missing.description == "no such plant" and list(missing.content) == ["application/json"]


def test_swagger2_produces_nothing_is_any_media_type(converted):
    assert list(operation(converted, "POST /plants").responses["201"].content) == ["*/*"]


def test_swagger2_schema_keywords_of_2_0(converted):
    plant = operation(converted, "POST /plants").responses["201"].content["*/*"].schema
    assert isinstance(plant, dict)
    defs = plant["$defs"]["Plant"]
    assert defs["discriminator"] == {"propertyName": "kind"}
    assert defs["properties"]["note"] == {"type": ["string", "null"]}  # x-nullable is 3.0's nullable


def test_swagger2_form_in_both_media_types_consumed(converted):
    forms = operation(converted, "POST /forms")
    assert list(forms.body or {}) == ["application/x-www-form-urlencoded", "multipart/form-data"]
    urlencoded = {"Content-Type": "application/x-www-form-urlencoded"}
    assert violations(forms, raw=b"count=2&ids=1&ids=2", headers=urlencoded) == []
    assert violations(forms, raw=b"ids=1", headers=urlencoded) == ["body: 'count' is a required property"]


def converted_document(path: Path) -> dict:
    """The OpenAPI 3.0 document the loader serves for the 2.0 document at `path`."""
    loader = _Loader(path)
    return loader.swagger(loader.read(loader.uri, str(path)))


def test_swagger2_servers_and_extensions_are_kept(tmp_path):
    out = converted_document(write(tmp_path, DOCUMENT))
    assert out["openapi"] == "3.0.3" and out["servers"] == [{"url": "https://api.example.com/v1"}]
    assert out["x-origin"] == "kept" and "swagger" not in out and "consumes" not in out


@pytest.mark.parametrize(
    ("fields", "servers"),
    [("host: h.example\n", [{"url": "//h.example"}]), ("basePath: /api\n", [{"url": "/api"}]),
     ("host: h\nschemes: [http, https]\nbasePath: /\n", [{"url": "http://h"}, {"url": "https://h"}]), ("", None)],
    ids=["host", "base-path", "schemes", "none"],
)
def test_swagger2_servers_from_host_base_path_schemes(tmp_path, fields, servers):
    assert converted_document(write(tmp_path, HEAD + fields + "paths: {}\n")).get("servers") == servers


def test_swagger2_security_schemes_each_type(tmp_path):
    text = HEAD + """\
securityDefinitions:
  basic: {type: basic, description: who}
  key: {type: apiKey, name: k, in: query, x-kept: 1}
  implicit: {type: oauth2, flow: implicit, authorizationUrl: "https://a/auth", scopes: {r: read}}
  password: {type: oauth2, flow: password, tokenUrl: "https://a/token", scopes: {}}
  application: {type: oauth2, flow: application, tokenUrl: "https://a/token", scopes: {}}
  accessCode: {type: oauth2, flow: accessCode, authorizationUrl: "https://a/auth", tokenUrl: "https://a/token",
               scopes: {}}
paths: {}
"""
    schemes = converted_document(write(tmp_path, text))["components"]["securitySchemes"]
    assert schemes == {
        "basic": {"description": "who", "type": "http", "scheme": "basic"},
        "key": {"x-kept": 1, "type": "apiKey", "name": "k", "in": "query"},
        "implicit": {"type": "oauth2", "flows": {"implicit": {"scopes": {"r": "read"}, "authorizationUrl": "https://a/auth"}}},
        "password": {"type": "oauth2", "flows": {"password": {"scopes": {}, "tokenUrl": "https://a/token"}}},
        "application": {"type": "oauth2", "flows": {"clientCredentials": {"scopes": {}, "tokenUrl": "https://a/token"}}},
        "accessCode": {"type": "oauth2", "flows": {"authorizationCode": {
            "scopes": {}, "authorizationUrl": "https://a/auth", "tokenUrl": "https://a/token"}}},
    }


def test_swagger2_references_into_sibling_files(tmp_path):
    write(tmp_path, HEAD + """\
paths:
  /a: {$ref: "items.yaml#/a"}
  /b:
    post:
      parameters: [{$ref: "common.yaml#/parameters/body"}]
      responses:
        "200": {$ref: "common.yaml#/responses/ok"}
definitions:
  Local: {type: object, properties: {x: {type: integer}}}
""")
    write(tmp_path, """\
a:
  get:
    responses:
      "200": {description: ok, schema: {$ref: "#/definitions/Thing"}}
definitions:
  Thing: {type: object, properties: {f: {type: file}, n: {type: integer, x-nullable: true}}}
""", "items.yaml")
    write(tmp_path, """\
parameters:
  body: {name: body, in: body, required: true, schema: {$ref: "#/definitions/In"}}
responses:
  ok: {description: ok, schema: {$ref: "api.yaml#/definitions/Local"}}
definitions:
  In: {type: object, required: [name], properties: {name: {type: string}}}
""", "common.yaml")
    spec = load_spec(tmp_path / "api.yaml", cache=False)
    thing = operation(spec, "GET /a").responses["200"].content["*/*"].schema
    assert isinstance(thing, dict)
    assert thing["$defs"]["Thing"]["properties"] == {"f": {"type": "string", "format": "binary"},
                                                     "n": {"type": ["integer", "null"]}}
    post = operation(spec, "POST /b")
    assert violations(post, raw=b"{}", headers={"Content-Type": "application/json"}) == [
        "body: 'name' is a required property"]


# -- messages name the 2.0 document's places and lines --------------------------------------------------------
BROKEN = HEAD + """\
paths:
  /plants:
    post:
      security: [{nokey: []}]
      parameters:
        - name: q
          in: query
          type: array
          items: {type: array, items: {type: string}, collectionFormat: pipes}
        - name: body
          in: body
          schema:
            type: object
            properties:
              name: {type: {}}
      responses:
        "200": {description: ok}
"""


def test_swagger2_refusal_names_the_2_0_place_and_line(tmp_path):
    path = write(tmp_path, BROKEN)
    with pytest.raises(SpecError) as refused:
        load_spec(path, cache=False)
    assert str(refused.value) == (
        f"cannot use spec {path}:17: paths./plants.post.parameters[1].schema: not valid JSON Schema (read as OpenAPI"
        " 3.0's schema dialect, rewritten to 2020-12) at properties.name.type: {} is not valid under any of the given"
        " schemas")


def test_swagger2_refusal_in_json_names_the_line(tmp_path):
    doc = {"swagger": "2.0", "info": {"title": "t", "version": "1"}, "paths": {"/a": {"get": {
        "parameters": [{"name": "x", "in": "somewhere", "type": "string"}], "responses": {"200": {"description": "ok"}}}}}}
    path = write(tmp_path, json.dumps(doc, indent=2), "api.json")
    with pytest.raises(SpecError) as refused:
        load_spec(path, cache=False)
    assert str(refused.value) == (f"cannot use spec {path}:11: paths./a.get.parameters[0]: in: 'somewhere' is not one"
                                  " of query, header, path, formData, body")


def test_swagger2_warnings_name_the_2_0_place_and_line(tmp_path, caplog):
    path = write(tmp_path, BROKEN.replace("{type: {}}", "{type: string}"))
    with caplog.at_level(logging.WARNING, logger="plantstub"):
        spec = load_spec(path, cache=False)
    assert spec.warnings == (
        f"{path}:8: paths./plants.post.parameters[0]: parameter 'q' (in: query): an array inside an array"
        " (collectionFormat 'pipes' inside 'csv'): its inner items are read as text",
        f"{path}:6: paths./plants.post.security[0]: security scheme 'nokey' is not declared in securityDefinitions"
        " (none are declared); not enforced",
    )
    assert [r.getMessage() for r in caplog.records] == [f"plantstub: spec {w}" for w in spec.warnings]


def test_swagger2_loader_message_in_converted_places_is_rewritten(tmp_path):
    text = HEAD + """\
paths:
  /a:
    get:
      parameters:
        - {name: body, in: body, schema: {$ref: "#/definitions/Nope"}}
      responses: {"200": {description: ok}}
definitions:
  Plant: {type: object}
"""
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as refused:
        load_spec(path, cache=False)
    assert str(refused.value) == (
        f"cannot use spec {path}:7: paths./a.get.parameters[0].schema: $ref '#/definitions/Nope': {path} has nothing"
        " at '/definitions/Nope'")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("swagger: '3.0'\ninfo: {title: t, version: '1'}\npaths: {}\n",
         ":1: swagger: '3.0' is not supported (plantstub reads Swagger 2.0 and OpenAPI 3.0, 3.1 and 3.2)"),
        (HEAD + "paths:\n  /a:\n    get:\n      parameters:\n        - {in: query}\n      responses: {}\n",
         ":7: paths./a.get.parameters[0]: a parameter needs 'name' and 'in'"),
        (HEAD + "consumes: application/json\nproduces: {a: 1}\npaths: {}\n",
         ":4: produces: expected a list of media types, found {'a': 1}"),
    ],
    ids=["version", "parameter", "produces"],
)
def test_swagger2_refusals_of_the_conversion(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as refused:
        load_spec(path, cache=False)
    assert str(refused.value) == f"cannot use spec {path}{message}"


def test_swagger2_conversion_warnings(tmp_path):
    text = HEAD + """\
paths:
  /a:
    post:
      parameters:
        - {name: n, in: query}
        - {name: h, in: header, type: array, items: {type: string}, collectionFormat: multi}
        - {name: one, in: body, schema: {type: object}}
        - {name: two, in: body, schema: {type: object}}
        - {name: f, in: formData, type: string}
  /b:
    get: {}
"""
    path = write(tmp_path, text)
    assert load_spec(path, cache=False).warnings == (
        f"{path}:7: paths./a.post.parameters[0]: parameter 'n' (in: query) has no `type`; read as a string",
        f"{path}:8: paths./a.post.parameters[1]: parameter 'h' (in: header): collectionFormat 'multi' is not one of"
        " csv, ssv, tsv and pipes for a header parameter; read as csv",
        f"{path}:10: paths./a.post.parameters[3]: a second body parameter ('two'): an operation has one body; set aside",
        f"{path}:11: paths./a.post.parameters[4]: formData parameter 'f' beside a body parameter: set aside",
        f"{path}:5: paths./a.post: no responses declared; read as one `default` response with no body",
        f"{path}:13: paths./b.get: no responses declared; read as one `default` response with no body",
    )


# -- hostile documents: a clear refusal or a load, never another exception ----------------------------------
HOSTILE = {
    "parameters-not-a-list": HEAD + "paths:\n  /a:\n    get:\n      parameters: {a: 1}\n      responses: {}\n",
    "parameter-not-a-mapping": HEAD + "paths:\n  /a:\n    get:\n      parameters: [3]\n      responses: {}\n",
    "parameter-ref-loop": HEAD + "parameters:\n  a: {$ref: '#/parameters/b'}\n  b: {$ref: '#/parameters/a'}\n"
                                 "paths:\n  /a:\n    get:\n      parameters: [{$ref: '#/parameters/a'}]\n",
    "response-not-a-mapping": HEAD + "paths:\n  /a:\n    get:\n      responses: {'200': [1]}\n",
    "responses-a-list": HEAD + "paths:\n  /a:\n    get:\n      responses: [1]\n",
    "path-item-a-list": HEAD + "paths:\n  /a: [get]\n",
    "operation-a-string": HEAD + "paths:\n  /a:\n    get: nothing\n",
    "definitions-a-list": HEAD + "definitions: [1]\npaths: {}\n",
    "security-definitions-odd": HEAD + "securityDefinitions: {a: 3, b: {type: oauth2, flow: sideways}}\n"
                                       "security: [{a: []}, {b: []}]\npaths: {}\n",
    "schema-a-list": HEAD + "paths:\n  /a:\n    post:\n      parameters: [{name: b, in: body, schema: [1]}]\n"
                            "      responses: {'200': {description: ok}}\n",
    "items-a-list": HEAD + "paths:\n  /a:\n    get:\n      parameters: [{name: q, in: query, type: array,"
                           " items: [1]}]\n      responses: {'200': {description: ok}}\n",
    "consumes-odd": HEAD + "paths:\n  /a:\n    post:\n      consumes: [3]\n      responses: {}\n",
    "long-key": json.dumps({"swagger": "2.0", "info": {"title": "t", "version": "1"}, "paths": {
        "/" + "a." * 5000: {"get": {"parameters": [{"in": "x", "name": "y"}]}}}}),
    "discriminator-and-nullable-odd": HEAD + "definitions:\n  A: {discriminator: 3, x-nullable: maybe, x-oneOf: 4,"
                                             " properties: {b: {required: 3}}}\npaths: {}\n",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_swagger2_hostile_document_is_refused_clearly_or_loaded(tmp_path, name):
    path = write(tmp_path, HOSTILE[name], "api.json" if name == "long-key" else "api.yaml")
    try:
        spec = load_spec(path, cache=False)
    except SpecError as exc:
        text = str(exc)
        assert text.startswith(f"cannot use spec {path}:") and "Traceback" not in text, text
    else:
        assert spec.openapi == "2.0"


def test_swagger2_spec_cache_gives_the_spec_and_its_placed_warnings(tmp_path, monkeypatch):
    from plantstub.contract import spec_cache
    from plantstub.contract.spec_json import encode

    monkeypatch.setattr(spec_cache, "MIN_CACHED", 0)
    path = write(tmp_path, BROKEN.replace("{type: {}}", "{type: string}"))
    loaded = load_spec(path, cache=tmp_path / "cache")

    def refuse(self):
        raise AssertionError("the document was read: not a cache hit")

    monkeypatch.setattr(_Loader, "read_spec", refuse)
    cached = load_spec(path, cache=tmp_path / "cache")
    assert encode(cached) == encode(loaded) and cached.openapi == "2.0"
    assert cached.warnings[0].startswith(f"{path}:8: paths./plants.post.parameters[0]: ")
