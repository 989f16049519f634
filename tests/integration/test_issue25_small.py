"""`plantstub serve` on the small classes of issue 25 (tests/data/specs/issue25-small.yaml): long integers,
one-value array form fields, text/json and multipart bodies, non-JSON answers, '#' and '?' in path keys."""

from __future__ import annotations

import json

import pytest

from tests.helpers import SPECS, ServeProcess, raw_call

BIG = "123456789012345678901234567890123456789"  # 39 digits: `type: integer` has no size limit


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    stub = ServeProcess("--spec", str(SPECS / "issue25-small.yaml"), "--port", "0",
                        "--scenarios", str(tmp_path_factory.mktemp("scenarios")))
    try:
        yield stub.url
    finally:
        stub.stop()
    assert "Traceback" not in stub.stderr
    # A malformed multipart body is refused in our words, once: the multipart parser's own warnings are not logged.
    assert [line for line in stub.stderr.splitlines() if line and not line.startswith("plantstub")] == []


def answer(url: str, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None):
    """(status, JSON body or text, Content-Type) of one request."""
    status, data, head = raw_call(url, method, path, body, headers)
    kind = head.get("Content-Type")
    return status, json.loads(data) if kind and "json" in kind else data.decode(), kind


def test_integer_parameters_of_any_length_are_integers(url):
    status, body, _ = answer(url, "GET", f"/big/{BIG}?q=-{BIG}", headers={"X-Count": BIG})
    assert (status, body) == (200, {})


def test_integer_parameters_keep_their_format_bounds(url):
    status, body, _ = answer(url, "GET", f"/big/1?small={BIG}")
    assert (status, body["message"]) == (400, f"query.small: {BIG} is greater than the maximum of 9223372036854775807")


def test_a_long_integer_form_field_is_an_integer(url):
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    assert answer(url, "POST", "/forms", f"name=a&count={BIG}".encode(), form)[:2] == (200, {})


FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def multipart(*fields: tuple[str, str, str | None]) -> tuple[bytes, dict[str, str]]:
    """A multipart/form-data body of (name, value, Content-Type or None) parts, and its header."""
    parts = []
    for name, value, kind in fields:
        head = f'Content-Disposition: form-data; name="{name}"\r\n' + (f"Content-Type: {kind}\r\n" if kind else "")
        parts.append(f"--BOUND\r\n{head}\r\n{value}\r\n")
    body = "".join(parts) + "--BOUND--\r\n"
    return body.encode(), {"Content-Type": "multipart/form-data; boundary=BOUND"}


def test_an_array_form_field_sent_once_is_a_one_item_array(url):
    assert answer(url, "POST", "/forms", b"name=a&tags=x&sizes=3", FORM)[:2] == (200, {})
    assert answer(url, "POST", "/forms", b"name=a&tags=x&tags=y&sizes=3&sizes=4", FORM)[:2] == (200, {})
    status, body, _ = answer(url, "POST", "/forms", b"name=a&sizes=3&sizes=x", FORM)
    assert (status, body["message"]) == (400, "body.sizes[1]: 'x' is not of type 'integer'")


def test_multipart_bodies_are_checked_as_fields(url):
    body, head = multipart(("name", "Fern", None), ("tags", "x", None), ("count", BIG, None))
    assert answer(url, "POST", "/forms", body, head)[:2] == (200, {})
    body, head = multipart(("tags", "x", None), ("count", "many", None))
    status, refused, _ = answer(url, "POST", "/forms", body, head)
    assert (status, refused["message"]) == (
        400, "body: 'name' is a required property; body.count: 'many' is not of type 'integer'")


def test_multipart_json_parts_are_json(url):
    body, head = multipart(("name", '"Fern"', "application/json"), ("sizes", "[1, 2]", "application/json"))
    assert answer(url, "POST", "/forms", body, head)[:2] == (200, {})
    body, head = multipart(("name", "Fern", None), ("count", '"12"', "application/json"))  # a JSON string stays one
    status, refused, _ = answer(url, "POST", "/forms", body, head)
    assert (status, refused["message"]) == (400, "body.count: '12' is not of type 'integer'")


@pytest.mark.parametrize(("body", "header", "message"), [
    (b"--BOUND\r\n\r\nx\r\n--BOUND--\r\n", "multipart/form-data; boundary=BOUND",
     "body: part 1: no `Content-Disposition: form-data; name=...` header"),
    (b"name=a", "multipart/form-data; boundary=BOUND", "body: no part starts with the boundary '--BOUND'"),
    (b"--BOUND\r\nContent-Disposition: form-data; name=a\r\n\r\nx", "multipart/form-data; boundary=BOUND",
     "body: part 1 does not end with the boundary '--BOUND'"),
    (b"--BOUND\r\n", "multipart/form-data",
     "body: multipart/form-data without a boundary in its Content-Type (1 to 70 characters)"),
    (b'--B\r\nContent-Disposition: form-data; name="n"\r\n\r\nx\r\n' * 1001 + b"--B--\r\n",
     "multipart/form-data; boundary=B", "body: more than 1,000 parts; plantstub reads at most 1,000"),
    (b"--B\r\n" + b"".join(b"X-%d: x\r\n" % i for i in range(9)) + b"\r\nx\r\n--B--\r\n", "multipart/form-data; boundary=B",
     "body: part 1: its headers are not lines of `Name: value` (at most 8 lines of at most 4,096 bytes) ending with "
     "an empty line"),
    (b'--B\r\nContent-Disposition: form-data; name="n"\r\nX-Long: ' + b"x" * 5000 + b"\r\n\r\nx\r\n--B--\r\n",
     "multipart/form-data; boundary=B",
     "body: part 1: its headers are not lines of `Name: value` (at most 8 lines of at most 4,096 bytes) ending with "
     "an empty line"),
    (b"--B\r\nnot a header\r\n\r\nx\r\n--B--\r\n", "multipart/form-data; boundary=B",
     "body: part 1: its headers are not lines of `Name: value` (at most 8 lines of at most 4,096 bytes) ending with "
     "an empty line"),
    (b'--B\r\nContent-Disposition: form-data; name="n"\r\n', "multipart/form-data; boundary=B",
     "body: part 1: its headers do not end with an empty line"),
    (b'--B\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--B\r\nContent-Disposition: form-data; '
     b'name="tags"\r\n\r\ny\r\n', "multipart/form-data; boundary=B", "body: part 2 does not end with the boundary '--B'"),
], ids=["no-name", "no-boundary-in-body", "unterminated", "no-boundary-in-header", "too-many-parts", "too-many-headers",
        "header-too-long", "not-a-header", "headers-cut-short", "second-part-unterminated"])
def test_a_malformed_multipart_body_is_refused_saying_why(url, body, header, message):
    status, refused, _ = answer(url, "POST", "/forms", body, {"Content-Type": header})
    assert (status, refused) == (400, {"error": 400, "message": message})


def test_text_json_bodies_are_checked_as_json(url):
    text_json = {"Content-Type": "text/json"}
    status, body, kind = answer(url, "POST", "/dotnet", b'{"name": "Fern"}', text_json)
    assert (status, body, kind) == (200, {"name": "Fern"}, "text/json")
    status, body, _ = answer(url, "POST", "/dotnet", b'{"nam": 1}', text_json)
    assert (status, body["message"]) == (400, "body: 'name' is a required property")
    status, body, _ = answer(url, "POST", "/dotnet", b"{nope", text_json)
    assert status == 400 and body["message"].startswith("body: ")


@pytest.mark.parametrize(("path", "expected"), [
    ("/report", (200, "", "text/csv")),  # declared without a schema: empty, in its declared type
    # an XML schema: XML by the XML Object (issue 42; an inline root with no xml.name nor title is `root`)
    ("/feed", (200, '<?xml version="1.0" encoding="UTF-8"?><root/>', "application/xml")),
    ("/feed/latest", (200, "<feed><title>Fern</title></feed>", "application/xml")),  # the declared example
], ids=["csv-no-schema", "xml-schema", "xml-example"])
def test_non_json_answers_carry_their_declared_type_and_no_json(url, path, expected):
    assert answer(url, "GET", path) == expected


@pytest.mark.parametrize(("path", "expected"), [
    ("/pets%23cats", {"kind": "cats"}),
    ("/find%3Fby=name?name=Fern", {"by": "name"}),  # a literal key beats the template
    ("/find%3fby=name?name=Fern", {"by": "name"}),  # either case of the percent-encoding
    ("/find%3Fby=tag", {"by": "field"}),
], ids=["hash", "question-mark", "lower-case", "template"])
def test_path_keys_with_hash_or_question_mark_are_served_percent_encoded(url, path, expected):
    assert answer(url, "GET", path)[:2] == (200, expected)


@pytest.mark.parametrize(("path", "message"), [
    ("/pets#cats", "path: no path in the spec matches /pets; the spec's path '/pets#cats' holds a '#', which a URL"
                   " reads as the start of its fragment: send it as %23 (/pets%23cats)"),
    ("/find?by=name", "path: no path in the spec matches /find; the spec's path '/find?by=name' holds a '?', which a"
                      " URL reads as the start of its query: send it as %3F (/find%3Fby=name)"),
], ids=["hash", "question-mark"])
def test_a_404_says_a_key_holds_hash_or_question_mark(url, path, message):
    assert answer(url, "GET", path)[:2] == (404, {"error": 404, "message": message})


DIALECTS = """\
openapi: 3.1.0
info: {title: dialects, version: "1"}
jsonSchemaDialect: "http://json-schema.org/draft-04/schema#"
paths:
  /plants:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Plant"}
components:
  schemas:
    Plant:
      $schema: "http://json-schema.org/draft-07/schema#"
      type: object
      properties: {height: {type: 12}}
"""


def test_a_refused_schema_names_the_dialect_it_was_read_in(tmp_path):
    spec = tmp_path / "dialects.yaml"
    spec.write_text(DIALECTS)
    with pytest.raises(AssertionError) as refused:
        ServeProcess("--spec", str(spec), "--port", "0", "--scenarios", str(tmp_path))
    assert (f"{spec}: paths./plants.get.responses.200.content.application/json.schema: not valid JSON Schema (read as"
            " JSON Schema draft-07, rewritten to 2020-12) at $defs.Plant.properties.height.type: ") in str(refused.value)
