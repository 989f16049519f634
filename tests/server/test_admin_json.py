"""The admin body reader's big-body path: parsed in pieces off the loop, it reads exactly what decode_json() reads."""

from __future__ import annotations

import json

import pytest

from plantstub._json import BodyError, decode_json
from plantstub.server.admin_json import decode_in_pieces

SAME = [
    '{"/plants": [{"id": 1, "name": "Fern"}, {"id": 2, "tags": [1, [2, {"a": null}]]}], "/pots": []}',
    " [ ] ", "{}", '[{"x": 1} , 2 ,"s"]  ', '\ufeff{"a": 1}', '{"a": 1, "a": 2}', '"text"', "12345678901234567890123",
    '{"a": [' + "[" * 900 + "]" * 900 + "]}",
]
REFUSED = ['{"a": 1,}', '{"a": NaN}', "[1e999]", '{"a": [1, 2]', '{"a": 1} x', "[Infinity]", "{1: 2}", '{"a" 1}',
           "[1 2]", "", '{"a": [' + "[" * 1100 + "]" * 1100 + "]}"]


@pytest.mark.parametrize("text", SAME, ids=range(len(SAME)))
def test_decode_in_pieces_reads_what_decode_json_reads(text):
    raw = text.encode()
    assert decode_in_pieces(raw) == decode_json(raw) == json.loads(text.removeprefix("\ufeff"))


@pytest.mark.parametrize("text", REFUSED, ids=range(len(REFUSED)))
def test_decode_in_pieces_refuses_what_decode_json_refuses_in_its_words(text):
    raw = text.encode()
    with pytest.raises(BodyError) as whole:
        decode_json(raw)
    with pytest.raises(BodyError) as pieces:
        decode_in_pieces(raw)
    assert (type(pieces.value), str(pieces.value)) == (type(whole.value), str(whole.value))


def test_decode_in_pieces_refuses_bytes_that_are_not_utf8():
    with pytest.raises(BodyError, match=r"^not valid UTF-8"):
        decode_in_pieces(b'{"a": "\xff"}')
