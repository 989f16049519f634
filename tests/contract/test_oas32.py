"""OpenAPI 3.2 documents served as they mean: QUERY and `additionalOperations`, `in: querystring`, `itemSchema`
streams checked and answered, `$self`, tags, and the 3.2 fields set aside named at start."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import jsonschema
import pytest

from plantstub.contract.load import load_spec
from plantstub.contract.model import Operation, Spec
from plantstub.contract.operations import serve
from plantstub.contract.requests import RequestCheck
from plantstub.contract.router import Router
from plantstub.contract.spec_json import decode, encode
from plantstub.contract.streams import read_items
from plantstub.errors import SpecError
from plantstub.proxy.verdict import judge
from tests.helpers import SPECS, make_request, same

OAS32 = SPECS / "oas32"
HEAD = 'openapi: 3.2.0\ninfo: {title: t, version: "1"}\n'


def operation(spec: Spec, label: str) -> Operation:
    return next(op for op in spec.operations if op.label == label)


def violations(op: Operation, path: str = "", params: dict[str, str] | None = None, **request: object) -> list[str]:
    found, _ = RequestCheck(op).violations(make_request(op.method, path or op.path, **request), params or {})  # type: ignore[arg-type]
    return [str(v) for v in found]


def write(tmp_path: Path, text: str, name: str = "api.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def items_schema(op: Operation, status: str, media: str) -> dict:
    """The item schema of a response, for the jsonschema library (the reference) to check items with."""
    schema = op.responses[status].content[media].item_schema
    assert isinstance(schema, dict)
    return schema


# -- QUERY and additionalOperations -------------------------------------------------------------------------
def test_oas32_query_and_additional_operations_are_routed():
    spec = load_spec(OAS32 / "query.yaml", cache=False)
    assert [op.label for op in spec.operations] == ["QUERY /plants", "COPY /plants/{id}"]
    router = Router(spec)
    assert router.route("QUERY", "/plants").operation is operation(spec, "QUERY /plants")
    assert router.route("copy", "/plants/3").operation is operation(spec, "COPY /plants/{id}")
    refused = router.route("GET", "/plants")
    assert (refused.status, refused.allow) == (405, ("QUERY",))


def test_oas32_query_body_is_checked():
    query = operation(load_spec(OAS32 / "query.yaml", cache=False), "QUERY /plants")
    sent = {"Content-Type": "application/json"}
    assert violations(query, raw=b'{"tag": "fern"}', headers=sent) == []
    assert violations(query, raw=b'{"tag": "rose"}', headers=sent) == [
        "body.tag: 'rose' is not one of ['fern', 'cactus', 'palm']"]
    assert violations(query) == ["body: a request body is required (application/json)"]


def test_oas32_query_is_no_method_before_3_2(tmp_path):
    text = HEAD.replace("3.2.0", "3.1.0") + "paths:\n  /a:\n    query: {responses: {'200': {description: ok}}}\n" \
        "    additionalOperations: {COPY: {responses: {'200': {description: ok}}}}\n"
    spec = load_spec(write(tmp_path, text), cache=False)
    assert spec.operations == ()
    assert spec.warnings == tuple(
        f"paths./a.{field}: `{field}` is OpenAPI 3.2's, and this document is an earlier version; set aside"
        " (`openapi: 3.2.0` serves it)" for field in ("query", "additionalOperations"))


def test_oas32_additional_operations_set_aside_with_a_reason(tmp_path):
    text = HEAD + """\
paths:
  /a:
    get: {responses: {"200": {description: ok}}}
    additionalOperations:
      GET: {responses: {"200": {description: ok}}}
      "BAD NAME": {responses: {"200": {description: ok}}}
      LINK: {responses: {"200": {description: ok}}}
      link: {responses: {"200": {description: ok}}}
"""
    spec = load_spec(write(tmp_path, text), cache=False)
    assert [op.label for op in spec.operations] == ["GET /a", "LINK /a"]
    assert spec.warnings == (
        "paths./a.additionalOperations.GET: GET has its own field in a Path Item (get), which additionalOperations"
        " must not repeat; set aside",
        "paths./a.additionalOperations.BAD NAME: 'BAD NAME' is not an HTTP method name; set aside",
        "paths./a.additionalOperations.link: link is declared twice on this path; the first is served",
    )


def test_oas32_additional_operation_the_c_parser_refuses_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv("AIOHTTP_NO_EXTENSIONS", raising=False)
    text = HEAD + "paths:\n  /a:\n    additionalOperations:\n      FOOBAR: {responses: {'200': {description: ok}}}\n"
    spec = load_spec(write(tmp_path, text), cache=False)
    assert [op.label for op in spec.operations] == ["FOOBAR /a"]
    assert spec.warnings == (
        "paths./a.additionalOperations.FOOBAR: aiohttp's C HTTP parser refuses a request with the method FOOBAR"
        " before plantstub sees it (400); it is served when aiohttp runs its pure-Python parser"
        " (AIOHTTP_NO_EXTENSIONS=1)",)
    monkeypatch.setenv("AIOHTTP_NO_EXTENSIONS", "1")
    assert load_spec(write(tmp_path, text), cache=False).warnings == ()


def test_oas32_query_named_unknown_by_older_aiohttp_is_query():
    from plantstub.incoming import sent_method

    assert [sent_method(m) for m in ("<unknown>", "QUERY", "COPY", "get")] == ["QUERY", "QUERY", "COPY", "get"]


def test_oas32_additional_operations_must_be_a_mapping(tmp_path):
    with pytest.raises(SpecError, match=r"paths\./a\.additionalOperations: expected a mapping of HTTP methods to"
                                        r" Operations, found list \['COPY'\]"):
        load_spec(write(tmp_path, HEAD + "paths:\n  /a:\n    additionalOperations: [COPY]\n"), cache=False)


# -- querystring ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("name=Fern&limit=2&tag=a&tag=b", []),
        ("name=Fern%20Gully&tag=one", []),
        ("name=&limit=x", ["query.limit: 'x' is not of type 'integer'", "query.name: '' should be non-empty"]),
        ("name=a&other=1", ["query: Additional properties are not allowed ('other' was unexpected)"]),
        ("", ["query: required query string is missing"]),
    ],
    ids=["form", "encoded", "types", "closed", "missing"],
)
def test_oas32_querystring_is_one_form_value(query, expected):
    search = operation(load_spec(OAS32 / "querystring.yaml", cache=False), "GET /search")
    assert [(p.name, p.location, p.media) for p in search.parameters] == [
        ("filter", "querystring", "application/x-www-form-urlencoded")]
    assert violations(search, raw_query=query) == expected


def test_oas32_querystring_as_json():
    select = operation(load_spec(OAS32 / "querystring.yaml", cache=False), "GET /select")
    assert violations(select, raw_query="%7B%22field%22%3A%22name%22%7D") == []
    assert violations(select, raw_query="%7B%7D") == ["query: 'field' is a required property"]
    assert same(violations(select, raw_query="nope"), [
        re.compile(r"query: not valid JSON: .+ at line 1 column 1 \(application/json\)")])
    assert violations(select) == []  # not required


def test_oas32_querystring_warnings(tmp_path):
    text = HEAD + """\
paths:
  /a:
    get:
      parameters:
        - {name: q, in: querystring, schema: {type: object}}
        - {name: r, in: querystring, content: {text/plain: {schema: {type: string}}}}
        - {name: limit, in: query, schema: {type: integer}}
      responses: {"200": {description: ok}}
"""
    spec = load_spec(write(tmp_path, text), cache=False)
    assert spec.warnings == (
        "paths./a.get.parameters[0]: in: querystring takes its media type from `content`, with one entry; read as"
        " application/x-www-form-urlencoded",
        "paths./a.get: 2 `in: querystring` parameters ('q', 'r'): each reads the whole query",
        "paths./a.get: `in: query` parameters ('limit') beside the `in: querystring` parameter 'q': both are checked",
    )
    assert violations(spec.operations[0], raw_query="hello%20there") == []


def test_oas32_querystring_is_no_location_before_3_2(tmp_path):
    text = HEAD.replace("3.2.0", "3.1.0") + """\
paths:
  /a:
    get:
      parameters: [{name: q, in: querystring, content: {text/plain: {schema: {type: string}}}}]
      responses: {"200": {description: ok}}
"""
    with pytest.raises(SpecError, match=r"in: 'querystring' is not one of path, query, header, cookie \(querystring"
                                        r" is OpenAPI 3.2's\)$"):
        load_spec(write(tmp_path, text), cache=False)


# -- streams --------------------------------------------------------------------------------------------------
def test_oas32_sse_answer_is_a_stream_of_valid_events():
    spec = load_spec(OAS32 / "sse.yaml", cache=False)
    events = operation(spec, "GET /events")
    out = serve(spec)[events].default(None)
    assert (out.status, out.content_type) == (200, "text/event-stream")
    assert out.payload == b"event: grew\ndata: string\n\n" * 3
    items = read_items(out.payload, "text/event-stream")
    assert len(items) == 3
    for item in items:
        jsonschema.validate(item, items_schema(events, "200", "text/event-stream"))


def test_oas32_sse_request_events_are_checked():
    post = operation(load_spec(OAS32 / "sse.yaml", cache=False), "POST /events")
    sent = {"Content-Type": "text/event-stream"}
    assert violations(post, raw=b"event: grew\ndata: a\n\n: comment\nevent: wilted\ndata: b\nretry: 10\n\n",
                      headers=sent) == []
    assert violations(post, raw=b"event: bloomed\ndata: a\n\ndata: b\n\n", headers=sent) == [
        "body[0].event: 'bloomed' is not one of ['grew', 'wilted']", "body[1]: 'event' is a required property"]
    assert violations(post, headers=sent) == ["body: a request body is required (text/event-stream)"]


@pytest.mark.parametrize(("path", "media"), [("/log", "application/jsonl"), ("/log.seq", "application/json-seq")])
def test_oas32_json_stream_answers_are_valid_items(path, media):
    spec = load_spec(OAS32 / "jsonl.yaml", cache=False)
    op = operation(spec, f"GET {path}")
    out = serve(spec)[op].default(None)
    assert out.content_type == media
    items = read_items(out.payload, media)
    assert len(items) == 3
    for item in items:
        jsonschema.validate(item, items_schema(op, "200", media))


def test_oas32_jsonl_request_lines_are_checked_one_by_one():
    post = operation(load_spec(OAS32 / "jsonl.yaml", cache=False), "POST /log")
    sent = {"Content-Type": "application/jsonl"}
    assert violations(post, raw=b'{"level": 1, "message": "up"}\n{"level": 7, "message": "down"}\n', headers=sent) == []
    assert violations(post, raw=b'{"level": 1, "message": "up"}\n{"level": 9, "message": ""}\n', headers=sent) == [
        "body[1].level: 9 is greater than the maximum of 7", "body[1].message: '' should be non-empty"]
    assert same(violations(post, raw=b'{"level": 1, "message": "up"}\n{"level":\n', headers=sent), [
        re.compile(r"body\[1\]: line 2: not valid JSON: .+ at column 10")])


def test_oas32_dynamic_stream_items_vary_and_keep_the_item_schema():
    spec = load_spec(OAS32 / "sse.yaml", cache=False)
    events = operation(spec, "GET /events")
    served = serve(spec, dynamic=True, seed=7)[events]
    answers = [served.default(None) for _ in range(3)]
    assert len({out.payload for out in answers}) == 3
    for out in answers:
        assert out.content_type == "text/event-stream"
        for item in read_items(out.payload, "text/event-stream"):
            jsonschema.validate(item, items_schema(events, "200", "text/event-stream"))
    again = serve(load_spec(OAS32 / "sse.yaml", cache=False), dynamic=True, seed=7)
    assert [again[op].default(None).payload for op in again if op.label == "GET /events"] == [answers[0].payload]


def test_oas32_stream_answer_from_a_declared_example(tmp_path):
    text = HEAD + """\
paths:
  /log:
    get:
      responses:
        "200":
          description: log
          content:
            application/x-ndjson:
              itemSchema: {type: object, required: [level], properties: {level: {type: integer}}}
              examples:
                broken: {serializedValue: "{\\"level\\": \\"x\\"}\\n"}
                fine: {serializedValue: "{\\"level\\": 1}\\n{\\"level\\": 2}\\n"}
"""
    spec = load_spec(write(tmp_path, text), cache=False)
    assert serve(spec)[spec.operations[0]].default(None).payload == b'{"level": 1}\n{"level": 2}\n'


def test_oas32_stream_no_item_can_keep_answers_501(tmp_path):
    text = HEAD + """\
paths:
  /events:
    get:
      responses:
        "200":
          description: events
          content:
            text/event-stream:
              itemSchema: {type: object, required: [data], properties: {data: {type: integer}}}
"""
    spec = load_spec(write(tmp_path, text), cache=False)
    out = serve(spec)[spec.operations[0]].default(None)
    assert out.status == 501
    assert out.body["message"] == (
        "plantstub cannot answer GET /events: an item written as text/event-stream and read back breaks its"
        " itemSchema: item.data: '0' is not of type 'integer'; a scenario rule with `off_contract: true` can answer it")


def test_oas32_proxied_stream_is_judged_item_by_item():
    spec = load_spec(OAS32 / "jsonl.yaml", cache=False)
    served = serve(spec)[operation(spec, "GET /log")]
    problems, body = judge(served, 200, "application/jsonl", b'{"level": 1, "message": "a"}\n{"level": -1}\n')
    assert problems == ["response.body[1]: 'message' is a required property",
                        "response.body[1].level: -1 is less than the minimum of 0"]
    assert body == '{"level": 1, "message": "a"}\n{"level": -1}\n'
    assert judge(served, 200, "application/jsonl", b'{"level": 1, "message": "a"}\n')[0] == []


def test_oas32_item_schema_survives_the_spec_cache():
    spec = load_spec(OAS32 / "sse.yaml", cache=False)
    again = decode(encode(spec))
    assert encode(again) == encode(spec)
    assert operation(again, "GET /events").responses["200"].content["text/event-stream"].item_schema == \
        operation(spec, "GET /events").responses["200"].content["text/event-stream"].item_schema


# -- the rest of 3.2 ------------------------------------------------------------------------------------------
def test_oas32_self_names_the_document(tmp_path):
    write(tmp_path, """\
Plant: {type: object, required: [name], properties: {name: {type: string}}}
""", "plant.yaml")
    text = HEAD + """\
$self: https://plants.example.com/api/openapi
paths:
  /a:
    post:
      requestBody:
        content:
          application/json:
            schema: {$ref: "https://plants.example.com/api/openapi#/components/schemas/Wrapper"}
      responses: {"200": {description: ok}}
components:
  schemas:
    Wrapper:
      type: object
      properties:
        plant: {$ref: "https://plants.example.com/api/plant.yaml#/Plant"}
"""
    op = load_spec(write(tmp_path, text), cache=False).operations[0]
    sent = {"Content-Type": "application/json"}
    assert violations(op, raw=b'{"plant": {"name": "Fern"}}', headers=sent) == []
    assert violations(op, raw=b'{"plant": {}}', headers=sent) == ["body.plant: 'name' is a required property"]


def test_oas32_self_does_not_open_the_network(tmp_path):
    text = HEAD + """\
$self: https://plants.example.com/api/openapi
paths:
  /a:
    get:
      responses:
        "200":
          description: ok
          content: {application/json: {schema: {$ref: "https://elsewhere.example.com/x#/Y"}}}
"""
    with pytest.raises(SpecError, match=r"only local files can be referenced \(no network\)"):
        load_spec(write(tmp_path, text), cache=False)


def test_oas32_tags_parent_checked_and_fields_set_aside_named_once(tmp_path, caplog):
    text = HEAD + """\
tags:
  - {name: plants, summary: Plants, kind: nav}
  - {name: ferns, parent: plants, kind: nav}
  - {name: lost, parent: nowhere}
  - {name: a, parent: b}
  - {name: b, parent: a}
$self: 12
paths:
  /upload:
    post:
      requestBody:
        content:
          multipart/mixed:
            itemSchema: {type: string}
            prefixEncoding: [{contentType: text/plain}]
            itemEncoding: {contentType: text/plain}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object, required: [n], properties: {n: {type: integer}}}
              examples:
                one: {dataValue: {n: 1}, serializedValue: '{"n": 1}'}
"""
    with caplog.at_level(logging.WARNING, logger="plantstub"):
        spec = load_spec(write(tmp_path, text), cache=False)
    where = "paths./upload.post.requestBody.content.multipart/mixed"
    assert spec.warnings == (
        "$self: 12 is not a URI without a fragment; set aside",
        "tags[2]: parent 'nowhere' of tag 'lost' is not a declared tag",
        "tags[3]: tag 'a' is its own ancestor (a -> b -> a)",
        "tags[4]: tag 'b' is its own ancestor (b -> a -> b)",
        f"OpenAPI 3.2 fields plantstub does not serve, set aside: itemEncoding ({where}); prefixEncoding ({where});"
        f" itemSchema of multipart/mixed ({where}): plantstub streams JSON Lines, NDJSON, JSON text sequences and"
        " Server-Sent Events",
    )
    assert len([r for r in caplog.records if "set aside:" in r.getMessage()]) == 1
    answer = serve(spec)[spec.operations[0]].default(None)
    assert answer.payload == b'{"n":1}'  # the example's dataValue


# -- scenario rules against a 3.2 document ------------------------------------------------------------------
def test_oas32_scenario_stream_reply_is_checked_item_by_item(tmp_path):
    from plantstub.scenarios.load import ScenarioLoadError, load_scenario_file

    spec = load_spec(OAS32 / "sse.yaml", cache=False)
    path = write(tmp_path, """\
rules:
  - match: {method: GET, path: /events}
    reply:
      status: 200
      headers: {Content-Type: text/event-stream}
      body: "event: grew\\ndata: a leaf\\n\\nevent: bloomed\\ndata: x\\n\\n"
""", "events.yaml")
    with pytest.raises(ScenarioLoadError) as refused:
        load_scenario_file(path, spec)
    assert [str(e) for e in refused.value.errors] == [
        f"{path}:6: rules[0].reply.body[1].event: 'bloomed' is not one of ['grew', 'wilted'] (GET /events response 200)"]
    path.write_text(path.read_text().replace("bloomed", "wilted"))
    assert load_scenario_file(path, spec).rules[0].replies[0].status == 200


def test_oas32_scenario_rule_on_query_and_additional_operations(tmp_path):
    from plantstub.scenarios.load import load_scenario_file

    spec = load_spec(OAS32 / "query.yaml", cache=False)
    path = write(tmp_path, """\
rules:
  - match: {method: QUERY, path: /plants, body: {tag: fern}}
    reply: {status: 200, body: [{id: 1, name: Fern}]}
  - match: {method: COPY, path: /plants/1}
    reply: {status: 201, body: {id: 2, name: Fern}}
""", "query.yaml")
    assert [r.replies[0].status for r in load_scenario_file(path, spec).rules] == [200, 201]


STREAM_OF_SCHEMA = """\
paths:
  /log:
    post:
      requestBody:
        content:
          application/x-ndjson:
            schema: {SCHEMA}
      responses:
        "200":
          description: the log
          content:
            application/x-ndjson:
              schema: {SCHEMA}
"""
LOG = "{type: array, maxItems: 2, items: {type: object, required: [level], properties: {level: {type: integer}}}}"


def test_oas32_stream_with_a_schema_of_the_whole_array(tmp_path):
    spec = load_spec(write(tmp_path, HEAD + STREAM_OF_SCHEMA.replace("{SCHEMA}", LOG)), cache=False)
    op = spec.operations[0]
    sent = {"Content-Type": "application/x-ndjson"}
    assert violations(op, raw=b'{"level": 1}\n{"level": 2}\n', headers=sent) == []
    assert violations(op, raw=b'{"level": 1}\n{"level": "x"}\n{}\n', headers=sent) == [
        "body: [{'level': 1}, {'level': 'x'}, {}] is too long", "body[1].level: 'x' is not of type 'integer'",
        "body[2]: 'level' is a required property"]
    out = serve(spec)[op].default(None)
    items = read_items(out.payload, "application/x-ndjson")
    schema = op.responses["200"].content["application/x-ndjson"].schema
    assert out.content_type == "application/x-ndjson" and items
    jsonschema.validate(items, schema)


def test_oas30_ndjson_with_an_object_schema_is_left_as_it_was(tmp_path):
    text = HEAD.replace("3.2.0", "3.0.3") + STREAM_OF_SCHEMA.replace("{SCHEMA}", "{type: object}")
    op = load_spec(write(tmp_path, text), cache=False).operations[0]
    assert violations(op, raw=b'{"level": 1}\n{"level": 2}\n', headers={"Content-Type": "application/x-ndjson"}) == []


@pytest.mark.parametrize("document", sorted(OAS32.glob("*.yaml")), ids=lambda d: d.name)
@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
def test_oas32_every_answer_keeps_its_schema(document, dynamic):
    """Each declared response of each operation, as plantstub answers it (fixed, and drawn with --dynamic): a JSON
    body checked by the jsonschema library against its schema, a stream read back and each item against its
    itemSchema."""
    import json

    from plantstub._json import essence, is_json

    spec = load_spec(document, cache=False)
    served = serve(spec, dynamic=dynamic, seed=5)
    for op in spec.operations:
        for key, response in op.responses.items():
            out = served[op].varied(key, None) if dynamic else served[op].answer(key).build(None)
            assert out.status < 500, (op.label, key, out.body)
            if not out.payload:
                continue
            media = next(m for name, m in response.content.items() if essence(name) == essence(out.content_type))
            if media.item_schema is not None:
                items = read_items(out.payload, media.name)
                assert items
                for item in items:
                    jsonschema.validate(item, media.item_schema)
            elif is_json(media.name) and media.schema is not None:
                jsonschema.validate(json.loads(out.payload), media.schema)
