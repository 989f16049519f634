"""The shared helpers every layer asks: media types, the markers of absence, path templates, partial equality."""

from __future__ import annotations

import re

import pytest

from plantstub._json import (
    MISSING,
    NO_BODY,
    BodyError,
    decode_json,
    essence,
    is_json,
    json_bytes,
    match_media,
    pick_json,
)
from plantstub.matching import Mismatch, body_mismatches, path_pattern, template_names, template_regex
from tests.helpers import same


@pytest.mark.parametrize(("media_type", "expected"), [
    ("application/json", True),
    ("Application/JSON; charset=utf-8", True),
    ("application/problem+json", True),
    ("application/vnd.api+json;version=2", True),
    ("text/json", True),  # what .NET writes (issue 25)
    ("Text/JSON; charset=utf-8", True),
    ("application/x-ndjson", False),
    ("application/jsonl", False),
    ("text/plain", False),
    ("", False),
    (None, False),
])
def test_is_json_has_one_answer(media_type, expected):
    assert is_json(media_type) is expected


def test_essence_drops_parameters_and_case():
    assert essence(" Application/JSON ; charset=UTF-8") == "application/json"


def test_match_media_prefers_the_exact_type_then_the_most_specific_wildcard():
    declared = ["*/*", "application/*+json", "application/json; charset=utf-8", "text/*"]
    assert match_media("application/json", declared) == "application/json; charset=utf-8"
    assert match_media("application/merge-patch+json", declared) == "application/*+json"
    assert match_media("text/csv; header=present", declared) == "text/*"
    assert match_media("image/png", declared) == "*/*"
    assert match_media("image/png", ["text/*"]) is None
    # parameters do not make a wildcard more specific
    assert match_media("text/plain", ["text/*", "*/*; charset=utf-8"]) == "text/*"


def test_pick_json_prefers_application_json_then_any_json_then_the_first():
    assert pick_json(["text/plain", "application/problem+json", "application/json"]) == "application/json"
    assert pick_json(["text/plain", "application/problem+json"]) == "application/problem+json"
    assert pick_json(["text/plain"]) == "text/plain"
    assert pick_json([]) is None


def test_the_markers_are_not_json_values():
    assert not NO_BODY and NO_BODY is not None  # `if body:` reads "is there one"
    assert MISSING and repr(MISSING) == "MISSING" and repr(NO_BODY) == "NO_BODY"


def test_one_template_builder_serves_routing_and_matching():
    regex = template_regex("/plants/{id}/parts/{part}", capture=True)
    assert regex.match("/plants/7/parts/leaf").groups() == ("7", "leaf")
    assert template_names("/plants/{id}/parts/{part}") == ["id", "part"]
    assert path_pattern("/plants/{id}").match("/plants/7")
    assert not path_pattern("/plants/{id}").match("/plants/7/parts")
    assert not path_pattern("/plants.json").match("/plantsXjson")  # literal parts are escaped


def test_partial_equality_is_json_equality():
    assert body_mismatches({"id": 1}, {"id": 1.0, "name": "Fern"}) == []
    assert body_mismatches({"ok": True}, {"ok": 1}) == [Mismatch("body.ok", True, 1)]
    [absent] = body_mismatches({"tag": "a"}, {})
    assert str(absent) == "body.tag: expected 'a', got <absent>"
    assert body_mismatches([1, 2], [1]) == [Mismatch("body", [1, 2], [1])]


@pytest.mark.parametrize(("raw", "message"), [
    (b"NaN", "not valid JSON: NaN is not valid JSON"),
    (b'{"a": Infinity}', "not valid JSON: Infinity is not valid JSON"),
    (b'{"a": 1e400}', "not valid JSON: 1e400 is too large for a JSON number"),
    # Python's codec and json module word the reason; plantstub says what and where
    (b'{"a": "\xff"}', re.compile(r"not valid UTF-8 \(.+ at byte 7\)")),
    (b'{"a": 1', re.compile(r"not valid JSON: .+ at line 1 column 8")),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply to parse"),
])
def test_decoding_refuses_what_json_does_not_allow_in_plantstub_words(raw, message):
    with pytest.raises(BodyError) as refused:
        decode_json(raw)
    assert same([str(refused.value)], [message])


def test_decoding_keeps_integers_exact_and_accepts_a_byte_order_mark():
    assert decode_json(b'{"id": 18446744073709551616, "n": -9223372036854775809}') == {
        "id": 2**64, "n": -(2**63) - 1}
    assert type(decode_json(b'{"id": 123456789012345678901234567890}')["id"]) is int
    assert decode_json(b'\xef\xbb\xbf{"a": [1, 2.5, null, true]}') == {"a": [1, 2.5, None, True]}
    assert decode_json(b'{"phone": "12345678901234567890"}') == {"phone": "12345678901234567890"}


def test_writing_is_compact_utf8_and_exact_for_any_integer():
    assert json_bytes({"name": "Fougère", "n": [1, 2.5, None]}) == '{"name":"Fougère","n":[1,2.5,null]}'.encode()
    assert json_bytes({"id": 2**70}) == b'{"id":1180591620717411303424}'


def test_a_control_character_is_placed_once():
    with pytest.raises(BodyError) as refused:
        decode_json(b'{"name": "a\x01b"}')
    message = str(refused.value)
    assert message.startswith("not valid JSON: ") and message.endswith(" at line 1 column 12")
    assert " at at " not in message
