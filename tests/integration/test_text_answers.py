"""Answers and requests whose media type is not JSON keep their contract, through a running Stub: XML by OpenAPI's XML
Object (an AWS query API's text/xml too), Microsoft Graph's `$count` as text/plain, YAML, and JSON declared with
neither schema nor example. Every answer is read back by the same mapping the stub writes with (XML) or by a
YAML reader, and checked against its schema; under --proxy the real service's answers are checked the same way."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from xml.etree import ElementTree

import pytest
import yaml

from plantstub import Stub
from plantstub.contract.load import load_spec
from plantstub.contract.schema import SchemaCheck
from plantstub.contract.xml import Mapping
from tests.helpers import SPECS, raw_call

XML_SPEC = SPECS / "xml-answers.yaml"
SPECS_BY_NAME = {name: load_spec(SPECS / f"{name}.yaml") for name in (
    "xml-answers", "aws-query", "graph-count", "yaml-answers", "json-no-schema")}


def schema_of(spec: str, label: str, status: str = "200") -> Any:
    op = next(op for op in SPECS_BY_NAME[spec].operations if op.label == label)
    (media,) = op.responses[status].content.values()
    return media.schema


def valid(schema: Any, value: Any) -> list[str]:
    return [str(v) for v in SchemaCheck(schema, "", checked=True).errors(value, "body")]


@pytest.fixture(scope="module")
def xml_stub() -> Iterator[Stub]:
    with Stub(spec=XML_SPEC) as running:
        yield running


def test_an_xml_answer_is_written_by_the_xml_object_and_reads_back_valid(xml_stub):
    status, body, headers = raw_call(xml_stub.url, "GET", "/people/7")
    assert (status, headers["Content-Type"]) == (200, "application/xml")
    root = ElementTree.fromstring(body)  # well-formed, as any XML reader takes it
    assert root.tag == "Person" and root.get("id") == "1"  # named by its component; `id` an attribute
    assert root.find("{https://example.com/schema/sample}name") is not None  # its namespace
    assert [pet.tag for pet in root.find("pets")] == ["pet"]  # wrapped, items named by their own xml.name
    schema = schema_of("xml-answers", "GET /people/{id}")
    value = Mapping(schema).read(body)
    assert valid(schema, value) == [] and value["pets"][0]["age"] == 0
    assert body.decode() == xml_stub.calls[0].response["body"]  # the journal shows what was sent


def test_a_root_array_of_elements_with_an_attribute_and_a_text(xml_stub):
    status, body, headers = raw_call(xml_stub.url, "GET", "/animals")
    assert (status, headers["Content-Type"]) == (200, "text/xml")
    schema = schema_of("xml-answers", "GET /animals")
    assert ElementTree.fromstring(body).tag == "animals"
    value = Mapping(schema).read(body)
    assert valid(schema, value) == [] and value == [{"kind": "Cat", "name": "string"}]


def test_a_declared_text_example_is_sent_as_written(xml_stub):
    assert raw_call(xml_stub.url, "GET", "/example")[1].startswith(b'<Person id="7">')


@pytest.mark.parametrize(("sent", "status", "message"), [
    (b'<Person id="3"><name>Ada</name><pets><pet><name>Rex</name><age>2</age></pet></pets></Person>', 204, None),
    (b'<?xml version="1.0" encoding="ISO-8859-1"?><Person id="3"><name>Jos\xe9</name><tag>a</tag><tag>b</tag>'
     b"<pets><pet><name>Rex</name><age>2</age></pet></pets></Person>", 204, None),
    (b'<Person id="0"><name></name><pets><pet><name>Rex</name><age>young</age></pet></pets></Person>', 400,
     "body.id: 0 is less than the minimum of 1; body.name: '' should be non-empty; "
     "body.pets[0].age: 'young' is not of type 'integer'"),
    (b'<Person id="3"><name>Ada</name><tags><tag>a</tag></tags><pets/></Person>', 400,
     "body.pets: [] should be non-empty; body.tags[0]: {'tag': 'a'} is not of type 'string'"),
    (b'<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
     b"<Person>&b;</Person>", 400,
     "body: a document type declaration (<!DOCTYPE ...>) is not accepted: plantstub reads no DTD, so no entity can be"
     " declared or expanded"),
    (b"<Person><name>Ada</Person>", 400, None),
], ids=["valid", "latin-1", "invalid", "arrays-wrapped-or-not", "entities", "malformed"])
def test_an_xml_request_is_read_by_the_same_mapping_and_checked(xml_stub, sent, status, message):
    got, body, _ = raw_call(xml_stub.url, "PUT", "/people/3", sent, {"Content-Type": "application/xml; charset=utf-8"})
    assert got == status
    if status == 400:
        said = json.loads(body)["message"]
        assert said == message if message else said.startswith("body: not well-formed XML: ")


def test_dynamic_xml_answers_vary_and_each_reads_back_valid():
    schema = schema_of("xml-answers", "GET /people/{id}")
    mapping = Mapping(schema)
    with Stub(spec=XML_SPEC, dynamic=True, seed=5) as stub:
        bodies = [raw_call(stub.url, "GET", "/people/1")[1] for _ in range(6)]
    values = [mapping.read(body) for body in bodies]
    assert all(valid(schema, value) == [] for value in values), values
    assert len({json.dumps(value, sort_keys=True) for value in values}) > 3


def test_an_aws_query_api_answers_its_text_xml_objects():
    with Stub(spec=SPECS / "aws-query.yaml") as stub:
        path = "/%23Action=GetCallerIdentity?Action=GetCallerIdentity&Version=2011-06-15"
        status, body, headers = raw_call(stub.url, "POST", path)
        refused, error, _ = raw_call(stub.url, "POST", path, headers={"Prefer": "code=480"})
    assert (status, headers["Content-Type"]) == (200, "text/xml")
    schema = schema_of("aws-query", "POST /#Action=GetCallerIdentity")
    value = Mapping(schema).read(body)
    assert ElementTree.fromstring(body).tag == "GetCallerIdentityResponse"
    assert valid(schema, value) == [] and set(value["Credentials"]) == {"AccessKeyId", "Expiration"}
    assert (refused, ElementTree.fromstring(error).tag) == (480, "ExpiredTokenException")


def test_graph_count_is_a_number_as_text_and_a_number_sent_as_text_is_checked():
    with Stub(spec=SPECS / "graph-count.yaml") as stub:
        count = raw_call(stub.url, "GET", "/users/$count")
        active = raw_call(stub.url, "GET", "/users/a/active")
        sent = [raw_call(stub.url, "PUT", "/users/a/active", text, {"Content-Type": "text/plain"})[:2]
                for text in (b"0.25", b" 1\n", b"2", b"lots")]
    assert (count[0], count[2]["Content-Type"], int(count[1])) == (200, "text/plain", 0)
    assert (active[0], active[1]) == (200, b"true")
    assert [status for status, _ in sent] == [204, 204, 400, 400]
    assert [json.loads(body)["message"] for _, body in sent[2:]] == [
        "body: 2 is greater than the maximum of 1", "body: 'lots' is not of type 'number'"]


def test_a_yaml_answer_is_yaml_and_a_yaml_request_is_read_safely_and_checked():
    schema = schema_of("yaml-answers", "GET /config")
    with Stub(spec=SPECS / "yaml-answers.yaml") as stub:
        status, body, headers = raw_call(stub.url, "GET", "/config")
        put = [raw_call(stub.url, "PUT", "/config", text, {"Content-Type": "application/x-yaml"})[:2] for text in (
            b"name: a\nreplicas: 2\nenabled: true\ncountry: 'NO'\nsince: '2001-01-01'\nlabels: {a: b}\n",
            b"name: a\nreplicas: 0\nenabled: yes\ncountry: NO\nsince: '2001-01-01'\n",
            b"a: &a [1, 2]\nb: [*a, *a, *a]\nc: !!python/object/apply:os.system ['true']\n",
            b"a: [1\n")]
    assert (status, headers["Content-Type"]) == (200, "application/yaml")
    value = yaml.safe_load(body)
    assert valid(schema, value) == [] and value["country"] in ("NO", "yes", "1.0")
    assert [status for status, _ in put] == [204, 400, 400, 400]
    said = [json.loads(body)["message"] for _, body in put[1:]]
    assert said[0] == "body.enabled: 'yes' is not of type 'boolean'; body.replicas: 0 is less than the minimum of 1"
    assert said[1].startswith("body: ") and "python/object" in said[1]  # never constructed: refused by its tag
    assert said[2].startswith("body: not valid YAML") and said[2].endswith("(line 2)")


def test_json_declared_with_neither_schema_nor_example_answers_an_empty_object():
    with Stub(spec=SPECS / "json-no-schema.yaml") as stub:
        assert raw_call(stub.url, "GET", "/things")[::2][0] == 200
        status, body, headers = raw_call(stub.url, "GET", "/things")
        created = raw_call(stub.url, "POST", "/things")[:2]
    assert (status, body, headers["Content-Type"]) == (200, b"{}", "application/json")
    assert created == (201, b'{"id":1}')


@pytest.fixture(scope="module")
def real() -> Iterator[Stub]:
    """The real service: a stub of the same documents, answering some calls off the contract."""
    with Stub(spec=XML_SPEC) as running:
        yield running


def test_proxied_xml_answers_are_read_by_the_mapping_and_checked(real):
    real.reset()
    real.when(method="GET", path="/people/2", off_contract=True).reply(
        200, body='<Person id="x"><name>Ada</name><pets><pet><name>Rex</name></pet></pets></Person>',
        headers={"Content-Type": "application/xml"})
    real.when(method="GET", path="/people/3", off_contract=True).reply(
        200, body="<Person><name>Ada</Person>", headers={"Content-Type": "application/xml"})
    with Stub(spec=XML_SPEC, proxy=real.url) as stub:
        for path in ("/people/1", "/people/2", "/people/3", "/animals"):
            raw_call(stub.url, "GET", path)
        verdicts = [(call.upstream or {}).get("errors") for call in stub.calls]
    assert verdicts[0] == [] and verdicts[3] == []  # the generated answers keep the contract, read back
    assert verdicts[1] == ["response.body.id: 'x' is not of type 'integer'",
                           "response.body.pets[0]: 'age' is a required property"]
    assert len(verdicts[2]) == 1 and verdicts[2][0].startswith("response.body: not well-formed XML: ")


def test_proxied_yaml_and_count_answers_are_read_as_their_types_and_checked():
    with Stub(spec=SPECS / "graph-count.yaml") as counts, Stub(spec=SPECS / "yaml-answers.yaml") as configs:
        counts.when(method="GET", path="/users/$count", off_contract=True).reply(
            200, body="many", headers={"Content-Type": "text/plain"})
        configs.when(method="GET", path="/config", off_contract=True).reply(
            200, body="name: a\nreplicas: 0\nenabled: true\ncountry: NO\nsince: '2001-01-01'\n",
            headers={"Content-Type": "application/yaml"})
        verdicts = []
        for real, spec, path in ((counts, "graph-count.yaml", "/users/$count"), (counts, "graph-count.yaml", "/users/a/active"),
                                 (configs, "yaml-answers.yaml", "/config")):
            with Stub(spec=SPECS / spec, proxy=real.url) as stub:
                raw_call(stub.url, "GET", path)
                verdicts.append(stub.calls[0].upstream["errors"])  # type: ignore[index]
    assert verdicts == [["response.body: 'many' is not of type 'integer'"], [],
                        ["response.body.replicas: 0 is less than the minimum of 1"]]
