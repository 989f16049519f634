"""The smaller classes of issue 42 through a running Stub (tests/data/specs/issue42-small.yaml): multipart parts
without a Content-Type read by OpenAPI's encoding defaults, and the 501 of `additionalProperties: false` beside an
`allOf` naming the property and the keyword. (A pattern with an unknown class: tests/contract/test_lenient_specs.py.)"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from plantstub import Stub
from tests.helpers import SPECS, raw_call


@pytest.fixture(scope="module")
def stub() -> Iterator[Stub]:
    with Stub(spec=SPECS / "issue42-small.yaml") as running:
        yield running


def multipart(*fields: tuple[str, str, str | None]) -> tuple[bytes, dict[str, str]]:
    """A multipart/form-data body of (name, value, Content-Type or None) parts, and its header."""
    parts = []
    for name, value, kind in fields:
        head = f'Content-Disposition: form-data; name="{name}"\r\n' + (f"Content-Type: {kind}\r\n" if kind else "")
        parts.append(f"--B\r\n{head}\r\n{value}\r\n")
    return ("".join(parts) + "--B--\r\n").encode(), {"Content-Type": "multipart/form-data; boundary=B"}


@pytest.mark.parametrize(("fields", "message"), [
    ([("meta", '{"name": "a"}', None)], None),
    ([("meta", '{"name": "a"}', None), ("labels", '{"k": "x"}', None), ("labels", '{"k": "y"}', None),
      ("sizes", "1", None), ("sizes", "2", None), ("note", '{"not": "json"}', None), ("file", "{[", None)], None),
    ([("meta", '{"name": "a"}', None), ("labels", '[{"k": "x"}, {"k": "y"}]', None), ("sizes", "[1, 2]", None)], None),
    ([("meta", '{"name": "a"}', None), ("labels", '{"k": "x"}', None)], None),  # one part of an array: one item
    ([("meta", '{"nom": "a"}', None)], "body.meta: 'name' is a required property"),
    ([("meta", "name=a", None)], "body: part 1 ('meta'): not valid JSON: "),  # then the decoder's words
    ([("meta", "name=a", "text/plain")], "body.meta: 'name=a' is not of type 'object'"),  # its own type is kept
], ids=["object", "arrays-by-part", "arrays-in-one-part", "one-item", "checked", "not-json", "own-content-type"])
def test_a_multipart_part_without_a_content_type_is_json_for_an_object_property(stub, fields, message):
    body, headers = multipart(*fields)
    status, answer, _ = raw_call(stub.url, "POST", "/uploads", body, headers)
    said = json.loads(answer)["message"] if answer else None
    assert (status, said[: len(message)] if said and message else said) == ((400, message) if message else (204, None))


def test_additional_properties_false_beside_an_all_of_is_named_in_the_501(stub):
    status, answer, _ = raw_call(stub.url, "GET", "/closed")
    assert (status, json.loads(answer)["message"]) == (501, (
        "plantstub cannot answer GET /closed: no value satisfies the schema of its response 200 (application/json):"
        " `additionalProperties: false` beside an `allOf` refuses body.id, a required property that only the allOf"
        " declares (additionalProperties sees the properties beside it, not those of the allOf;"
        " unevaluatedProperties: false sees both); a scenario rule with `off_contract: true` can answer it"))
