"""contract/xml.py: values written as XML by OpenAPI's XML Object, and read back by the same mapping.

The documents are the examples of the OpenAPI 3.2.0 text (XML Object Examples) and of 3.1's (`attribute`,
`wrapped`); each is written, compared with the XML the specification shows (canonical form, so attribute order and
whitespace between elements do not count), and read back into the value it came from. Reading is safe: a document
type declaration is refused, so no entity is declared, expanded or fetched."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from xml.etree.ElementTree import canonicalize

import pytest

from plantstub._json import BodyError
from plantstub.contract.load import load_spec
from plantstub.contract.samples import generate
from plantstub.contract.schema import SchemaCheck
from plantstub.contract.xml import Mapping
from plantstub.contract.xml_shape import decode_name, encode_name
from tests.helpers import SPECS


def same_xml(written: str, expected: str) -> bool:
    return canonicalize(written, strip_text=True) == canonicalize(expected, strip_text=True)


def document(properties: dict[str, Any], name: str = "document") -> dict[str, Any]:
    return {"type": "object", "xml": {"name": name}, "properties": properties}


ANIMALS = {"animals": ["dog", "cat", "hamster"]}
UNWRAPPED = "<document><animal>dog</animal><animal>cat</animal><animal>hamster</animal></document>"

# (id, schema, value, the XML the specification shows)
EXAMPLES: list[tuple[str, Any, Any, str]] = [
    ("no-xml-object", document({"animals": {"type": "string"}}), {"animals": "dog, cat, hamster"},
     "<document><animals>dog, cat, hamster</animals></document>"),
    ("string-array", document({"animals": {"type": "array", "items": {"type": "string"}}}), ANIMALS,
     "<document><animals>dog</animals><animals>cat</animals><animals>hamster</animals></document>"),
    ("items-renamed", document({"animals": {"type": "array", "items": {"type": "string", "xml": {"name": "animal"}}}}),
     ANIMALS, UNWRAPPED),
    ("array-name-ignored-unwrapped", document({"animals": {"type": "array", "xml": {"name": "aliens"},
                                                           "items": {"type": "string", "xml": {"name": "animal"}}}}),
     ANIMALS, UNWRAPPED),
    ("wrapped-same-name", document({"animals": {"type": "array", "xml": {"nodeType": "element"},
                                                "items": {"type": "string"}}}), ANIMALS,
     "<document><animals><animals>dog</animals><animals>cat</animals><animals>hamster</animals></animals></document>"),
    ("wrapped-items-renamed", document({"animals": {"type": "array", "xml": {"nodeType": "element"},
                                                    "items": {"type": "string", "xml": {"name": "animal"}}}}), ANIMALS,
     "<document><animals><animal>dog</animal><animal>cat</animal><animal>hamster</animal></animals></document>"),
    ("wrapped-both-renamed", document({"animals": {"type": "array", "xml": {"name": "aliens", "nodeType": "element"},
                                                   "items": {"type": "string", "xml": {"name": "animal"}}}}), ANIMALS,
     "<document><aliens><animal>dog</animal><animal>cat</animal><animal>hamster</animal></aliens></document>"),
    ("wrapper-renamed-only", document({"animals": {"type": "array", "xml": {"name": "aliens", "nodeType": "element"},
                                                   "items": {"type": "string"}}}), ANIMALS,
     "<document><aliens><aliens>dog</aliens><aliens>cat</aliens><aliens>hamster</aliens></aliens></document>"),
    ("3.1-wrapped", document({"animals": {"type": "array", "xml": {"wrapped": True, "name": "aliens"},
                                          "items": {"type": "string", "xml": {"name": "animal"}}}}), ANIMALS,
     "<document><aliens><animal>dog</animal><animal>cat</animal><animal>hamster</animal></aliens></document>"),
    ("attributes-and-text", {"type": "array", "xml": {"nodeType": "element", "name": "animals"}, "items": {
        "xml": {"name": "animal"}, "properties": {"kind": {"type": "string", "xml": {"nodeType": "attribute"}},
                                                  "name": {"type": "string", "xml": {"nodeType": "text"}}}}},
     [{"kind": "Cat", "name": "Fluffy"}, {"kind": "Dog", "name": "Fido"}],
     '<animals><animal kind="Cat">Fluffy</animal><animal kind="Dog">Fido</animal></animals>'),
    ("attribute-prefix-namespace", {"$ref": "#/$defs/Person", "$defs": {"Person": {"type": "object", "properties": {
        "id": {"type": "integer", "format": "int32", "xml": {"attribute": True}},
        "name": {"type": "string", "xml": {"namespace": "https://example.com/schema/sample", "prefix": "sample"}}}}}},
     {"id": 123, "name": "example"},
     '<Person id="123"><sample:name xmlns:sample="https://example.com/schema/sample">example</sample:name></Person>'),
    ("cdata", {"$ref": "#/$defs/Documentation", "$defs": {"Documentation": {"type": "object", "properties": {
        "content": {"type": "string", "xml": {"nodeType": "cdata"}}}}}},
     {"content": "<html><head><title>Awesome Docs</title></head></html>"},
     "<Documentation><![CDATA[<html><head><title>Awesome Docs</title></head></html>]]></Documentation>"),
    ("point-of-use-name", {"$ref": "#/$defs/Documentation", "xml": {"nodeType": "element", "name": "StoredDocument"},
                           "$defs": {"Documentation": {"xml": {"nodeType": "none"}, "type": "object", "properties": {
                               "content": {"type": "string", "xml": {"nodeType": "cdata"}}}}}},
     {"content": "docs"}, "<StoredDocument>docs</StoredDocument>"),
    ("nulls", {"xml": {"name": "product"}, "type": "object", "required": ["count", "description", "related"],
               "properties": {"count": {"type": ["number", "null"], "xml": {"nodeType": "attribute"}},
                              "rating": {"type": "string", "xml": {"nodeType": "attribute"}},
                              "description": {"type": "string"}, "related": {"type": ["object", "null"]}}},
     {"count": 42, "description": "Thing", "related": None},
     '<product count="42" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><description>Thing</description>'
     '<related xsi:nil="true"/></product>'),
    ("empty-object", {"xml": {"name": "product"}, "type": "object", "properties": {"related": {"type": "object"}}},
     {"related": {}}, "<product><related></related></product>"),
    ("scalars", document({"n": {"type": "number"}, "i": {"type": "integer"}, "b": {"type": "boolean"},
                          "s": {"type": "string"}}), {"n": 1.5, "i": -3, "b": False, "s": " 12 & <x> "},
     "<document><n>1.5</n><i>-3</i><b>false</b><s> 12 &amp; &lt;x&gt; </s></document>"),
]


@pytest.mark.parametrize(("schema", "value", "expected"), [e[1:] for e in EXAMPLES], ids=[e[0] for e in EXAMPLES])
def test_the_specification_examples_are_written_as_it_shows_and_read_back(schema, value, expected):
    mapping = Mapping(schema)
    written = mapping.write(value)
    assert written.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    assert same_xml(written, expected), written
    assert mapping.read(written.encode()) == value
    assert mapping.read(expected.encode()) == value  # the specification's own text reads as its value


def test_an_attribute_left_out_reads_as_absent_and_a_null_attribute_is_not_written():
    mapping = Mapping({"xml": {"name": "product"}, "type": "object", "properties": {
        "count": {"type": ["number", "null"], "xml": {"nodeType": "attribute"}}, "description": {"type": "string"}}})
    assert same_xml(mapping.write({"count": None, "description": "x"}), "<product><description>x</description></product>")
    assert mapping.read(b"<product><description>x</description></product>") == {"description": "x"}


def test_names_xml_cannot_hold_are_escaped_and_read_back():
    mapping = Mapping({"$ref": "#/$defs/Entity", "$defs": {"Entity": {"type": "object", "additionalProperties": {
        "type": "string"}}}})
    value = {"@odata.type": "#microsoft.graph.user", "two words": "a", "1st": "b", "caf\u00e9": "c", "_x0041_": "d",
             "a:b": "e"}
    written = mapping.write(value)
    assert "<_x0040_odata.type>" in written and "<two_x0020_words>" in written and "<_x0031_st>" in written
    assert mapping.read(written.encode()) == value
    for name in value:
        assert decode_name(encode_name(name)) == name


def test_a_root_without_a_name_is_named_by_its_component_then_its_title():
    assert Mapping({"$ref": "#/$defs/Account.response", "$defs": {"Account.response": {"type": "object"}}}).root.name \
        == "Account"
    assert Mapping({"type": "object", "title": "Order"}).root.name == "Order"
    assert Mapping({"type": "object"}).root.name == "root"


def test_a_root_array_without_its_own_element_is_wrapped_all_the_same():
    mapping = Mapping({"$ref": "#/$defs/Tags", "$defs": {"Tags": {"type": "array", "items": {"type": "integer"}}}})
    written = mapping.write([1, 2])
    assert same_xml(written, "<Tags><Tags>1</Tags><Tags>2</Tags></Tags>")
    assert mapping.read(written.encode()) == [1, 2]


def test_reading_follows_the_schema_and_leaves_the_judging_to_it():
    schema = {"$ref": "#/$defs/Pet", "$defs": {"Pet": {"type": "object", "required": ["age", "tags"], "properties": {
        "age": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string", "xml": {"name": "tag"}}},
        "owner": {"type": "object", "properties": {"name": {"type": "string"}}}}}}}
    mapping = Mapping(schema)
    # a text where a number is declared stays a text; an element met twice where one stands is a list; an object's
    # place holding a text is that text; a required unwrapped array written as no element at all is an empty one
    value = mapping.read(b"<Pet><age>old</age><owner>Ann</owner><extra>1</extra><extra>2</extra></Pet>")
    assert value == {"age": "old", "owner": "Ann", "extra": ["1", "2"], "tags": []}
    assert [e.where for e in SchemaCheck(schema, "", checked=True).errors(value, "body")] == ["body.age", "body.owner"]
    # namespaces are matched by local name, whitespace between elements is not a text
    assert mapping.read(b'<p:Pet xmlns:p="urn:x">\n  <p:age> 3 </p:age>\n  <tag>a</tag>\n</p:Pet>') == \
        {"age": 3, "tags": ["a"]}


@pytest.mark.parametrize(("raw", "said"), [
    (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;">'
     + b"".join(b'<!ENTITY lol%d "%s">' % (i, b"".join(b"&lol%d;" % (i - 1) for _ in range(10))) for i in range(2, 10))
     + b"]><root>&lol9;</root>", "a document type declaration (<!DOCTYPE ...>) is not accepted"),
    (b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><root>&x;</root>',
     "a document type declaration (<!DOCTYPE ...>) is not accepted"),
    (b'<!DOCTYPE r SYSTEM "http://127.0.0.1:9/never.dtd"><root/>', "a document type declaration"),
    (b"<root>&undefined;</root>", "not well-formed XML: "),
    (b"<root>\n<a></root>", "not well-formed XML: "),
    (b"<root>\xff</root>", "not well-formed XML: "),
    (b"", "not well-formed XML: "),
    (b"<a>" * 2000 + b"</a>" * 2000, "nested more than 256 elements deep; plantstub reads no deeper"),
    (b"<a>" + b"<b/>" * 100_001 + b"</a>", "more than 100,000 elements; plantstub reads at most 100,000"),
], ids=["billion-laughs", "external-entity", "external-dtd", "undefined-entity", "mismatched", "not-utf8", "empty",
        "deep", "many"])
def test_hostile_or_broken_xml_is_refused_in_our_words(raw, said):
    mapping = Mapping({"type": "object"})
    with pytest.raises(BodyError) as refused:
        mapping.read(raw)
    assert str(refused.value).startswith(said), str(refused.value)
    assert said != "not well-formed XML: " or " at line " in str(refused.value)  # where, in our words


def places(path: Path | str) -> list[tuple[str, Any]]:
    spec = load_spec(path)
    found = []
    for op in spec.operations:
        for key, response in op.responses.items():
            for media in response.content.values():
                if isinstance(media.schema, dict):
                    found.append((f"{op.label} {key} {media.name}", media.schema))
    return found


# Every answer schema of these documents that has a value (the others answer 501 naming the contradiction).
SERVED: list[Path | str] = ["plant-store-full", *sorted(p for p in SPECS.glob("*.*") if p.suffix in (".yaml", ".json"))]
SCHEMAS = [(f"{Path(path).name}: {name}", schema, made.value) for path in SERVED
           for name, schema in places(path) if (made := generate(schema)).problem is None]


def test_the_generated_values_are_many_and_of_every_kind():
    assert len(SCHEMAS) > 80
    assert {type(value).__name__ for _, _, value in SCHEMAS} >= {"dict", "list", "int", "bool"}


@pytest.mark.parametrize(("name", "schema", "value"), SCHEMAS, ids=[name for name, *_ in SCHEMAS])
def test_every_generated_value_of_the_test_specs_reads_back_from_its_xml(name, schema, value):
    mapping = Mapping(schema)
    back = mapping.read(mapping.write(value).encode())
    assert SchemaCheck(schema, "", checked=True).errors(back, "body") == []  # jsonschema-rs, as the stub checks
    if not _holds_empty_list(value):  # an optional empty array that repeats under its parent writes nothing
        assert back == value


def _holds_empty_list(value: Any) -> bool:
    if isinstance(value, list):
        return not value or any(_holds_empty_list(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_empty_list(v) for v in value.values())
    return False
