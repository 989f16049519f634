"""Sequential media types (contract/streams.py): items read from a stream, written into one, and read back."""

from __future__ import annotations

import re

import pytest

from plantstub._json import BodyError
from plantstub.contract.schema import SchemaCheck
from plantstub.contract.streams import (
    MAX_ITEMS,
    ItemError,
    StreamCheck,
    is_sequential,
    read_items,
    stream_problem,
    write_items,
)
from tests.helpers import same

ENTRY = {"type": "object", "required": ["level"], "properties": {"level": {"type": "integer"}}}


@pytest.mark.parametrize(
    ("media", "expected"),
    [("application/jsonl", True), ("application/x-ndjson; charset=utf-8", True), ("application/json-seq", True),
     ("application/geo+json-seq", True), ("text/event-stream", True), ("application/json", False),
     ("multipart/mixed", False)],
)
def test_is_sequential(media, expected):
    assert is_sequential(media) is expected


@pytest.mark.parametrize(
    ("media", "raw", "items"),
    [
        ("application/jsonl", b'{"a": 1}\n[2]\n"three"\n', [{"a": 1}, [2], "three"]),
        ("application/x-ndjson", b'1\r\n\r\n2', [1, 2]),  # blank lines are no items; the last needs no newline
        ("application/json-seq", b'\x1e{"a": 1}\n\x1e[\n 2\n]\n', [{"a": 1}, [2]]),
        ("application/jsonl", b"", []),
    ],
    ids=["jsonl", "ndjson", "json-seq", "empty"],
)
def test_read_items_json(media, raw, items):
    assert read_items(raw, media) == items


def test_read_items_sse_as_the_specification_maps_it():
    # The example of OpenAPI 3.2's "Server-Sent Event Streams" section.
    raw = (b"event: addString\ndata: This data is formatted\ndata: across two lines\nretry: 5\n\n"
           b"event: addInt64\ndata: 1234.5678\nunknownField: this is ignored\n\n"
           b": This is a comment\nevent: addJSON\ndata: {\"foo\": 42}\n\n")
    assert read_items(raw, "text/event-stream") == [
        {"event": "addString", "data": "This data is formatted\nacross two lines", "retry": 5},
        {"event": "addInt64", "data": "1234.5678"},
        {"event": "addJSON", "data": '{"foo": 42}'},
    ]


@pytest.mark.parametrize(
    ("raw", "items"),
    [
        (b"data:no space\r\n\r\ndata:  two spaces", [{"data": "no space"}, {"data": " two spaces"}]),
        (b"id: 7\nretry: soon\n\nretry: 10\n\n", []),  # no data: no event, as a browser dispatches none
        (b"\xef\xbb\xbfdata: x\rid: 1\r\r", [{"data": "x", "id": "1"}]),
        (b"data\n\n", [{"data": ""}]),
    ],
    ids=["spaces", "no-data", "bom-and-cr", "field-only"],
)
def test_read_items_sse_fields(raw, items):
    assert read_items(raw, "text/event-stream") == items


@pytest.mark.parametrize(
    ("media", "raw", "error"),
    [
        ("application/jsonl", b'{"a": 1}\n{"a": \n', re.compile(r"line 2: not valid JSON: .+ at column 6")),
        ("application/json-seq", b'{"a": 1}', None),
        ("text/event-stream", b"data: \xff\n\n", None),
    ],
    ids=["bad-line", "seq-without-separator", "not-utf8"],
)
def test_read_items_refusals(media, raw, error):
    with pytest.raises(BodyError) as refused:
        read_items(raw, media)
    if error is not None:
        assert isinstance(refused.value, ItemError) and refused.value.index == 1 and same([str(refused.value)], [error])


def test_read_items_bounded():
    with pytest.raises(BodyError, match="plantstub reads at most 10,000"):
        read_items(b"1\n" * (MAX_ITEMS + 1), "application/jsonl")
    with pytest.raises(BodyError, match="plantstub reads at most 10,000"):
        read_items(b"data: x\n\n" * (MAX_ITEMS + 1), "text/event-stream")
    with pytest.raises(BodyError, match=r"^more than 100,000 lines; plantstub reads at most 100,000$"):
        read_items(b": keep-alive\r\n" * 60_000, "text/event-stream")
    with pytest.raises(BodyError, match=r"^more than 100,000 lines"):
        read_items(b"\x1e" * 100_001, "application/json-seq")
    assert read_items(b"\n" * 100_000, "application/jsonl") == []


@pytest.mark.parametrize(
    ("media", "items", "written"),
    [
        ("application/jsonl", [{"a": 1}, 2], b'{"a":1}\n2\n'),
        ("application/json-seq", [{"a": 1}], b'\x1e{"a":1}\n'),
        ("text/event-stream", [{"data": "two\nlines", "event": "e", "id": "1", "retry": 3}],
         b"event: e\nid: 1\nretry: 3\ndata: two\ndata: lines\n\n"),
    ],
)
def test_write_items_and_read_back(media, items, written):
    assert write_items(items, media) == written
    assert read_items(written, media) == items


def test_stream_problem_reads_the_answer_back():
    check = SchemaCheck({"type": "object", "required": ["data"], "properties": {"data": {"type": "object"}}}, "t")
    _, problem = stream_problem([{"data": {"a": 1}}], "text/event-stream", check)
    assert problem == ("an item written as text/event-stream and read back breaks its itemSchema: item.data:"
                       " '{\"a\":1}' is not of type 'object'")
    _, problem = stream_problem([{"event": "x"}], "text/event-stream", check)
    assert problem == "its items cannot be written as text/event-stream (an event needs `data`)"


def test_stream_check_each_item_where_it_stands():
    check = StreamCheck("application/jsonl", SchemaCheck(ENTRY, "t"), SchemaCheck({"maxItems": 2}, "t"))
    found, items = check.violations(b'{"level": 1}\n{"level": "x"}\n{}\n')
    assert [str(v) for v in found] == ["body[1].level: 'x' is not of type 'integer'",
                                       "body[2]: 'level' is a required property",
                                       "body: [{'level': 1}, {'level': 'x'}, {}] is too long"]
    assert items == [{"level": 1}, {"level": "x"}, {}]
    found, items = check.violations(b'{"level": 1}\nnope\n')
    assert same([str(v) for v in found], [re.compile(r"body\[1\]: line 2: not valid JSON: .+ at column 1")])
    assert items is None


def test_stream_check_lists_at_most_fifty():
    check = StreamCheck("application/jsonl", SchemaCheck(ENTRY, "t"), None)
    found, _ = check.violations(b"{}\n" * 200)
    assert len(found) == 50 and str(found[-1]) == "body[49]: 'level' is a required property"
