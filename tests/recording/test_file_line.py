"""The journal file's line is made straight from the record (issue 26): the same JSON the Call view writes."""

from __future__ import annotations

import pytest

from plantstub._json import NO_BODY
from plantstub.recording.call import Record
from plantstub.recording.call_json import dumps_call, dumps_record

PAIRS = ((b"Host", b"x"), (b"X-Tag", b"a"), (b"x-tag", b"b"), (b"X-Tag", b"c"), (b"X-Bytes", b"caf\xe9"))


def _record(status: int | None = 200, fault: str | None = None, raw: bytes = b'{"id": 1}', query: str = "",
            pairs: tuple[tuple[bytes, bytes], ...] = PAIRS, payload: bytes = b'{"name": "Fern"}') -> Record:
    return Record.of(3, 1_700_000_000.25, "POST", "/plants", query, pairs, raw, NO_BODY, False, ("body.id: no",),
                     "s", "rules[0]", status, {"X-Reply": "1", "Content-Type": "application/json"}, payload, True,
                     fault, ("stub said",))


@pytest.mark.parametrize("record", [
    _record(),
    _record(query="a=1&a=2&b=%20x"),
    _record(status=None),  # pending
    _record(status=None, fault="connection_reset"),
    _record(raw=b"not json", payload=b""),
    _record(pairs=((b"A", b"with\0nul"),)),  # kept as the pairs themselves
    _record(pairs=()),
])
def test_the_file_line_is_the_call_views(record):
    more = {"session": "ci-1", "epoch": 2}
    assert dumps_record(record, **more) == dumps_call(record.view(), **more)
    assert dumps_record(record, {"id": 1}, {"name": "Fern"}) == dumps_call(record.view({"id": 1}, {"name": "Fern"}))


@pytest.mark.parametrize("started", [1_700_000_000.0, 1_700_000_000.9994, 1_700_000_000.9995, 1_700_000_000.9999996,
                                     1_700_000_000.123456789, 0.0, -1.25, 4_102_444_800.999])
def test_a_calls_time_is_written_as_datetime_writes_it(started):
    from datetime import datetime, timezone

    from plantstub._clock import iso_time

    expected = datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert iso_time(started) == iso_time(started) == expected  # made, then from the second kept


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def test_the_lines_of_calls_alike_are_made_from_the_parts_they_share_and_read_as_the_records():
    # The journal file serializes once what a call shares with the one before (issue 41): every line is still
    # dumps_record()'s, whatever changes from one call to the next and whatever the bodies hold.
    from plantstub.recording.file_line import FileLines

    lines = FileLines()
    headers = {"X-Reply": "1", "Content-Type": "application/json"}

    def made(seq: int, raw: bytes = b'{"id": 1}', **changed: object) -> Record:
        fields: dict[str, object] = {"method": "POST", "path": "/plants", "query": "", "pairs": PAIRS, "valid": True,
                                     "errors": (), "rule": None, "status": 201, "headers": headers,
                                     "payload": b'{"name": "Fern"}', "fault": None, **changed}
        return Record.of(seq, 1_700_000_000.25 + seq / 7, fields["method"], fields["path"], fields["query"],
                         fields["pairs"], raw, NO_BODY, fields["valid"], fields["errors"], None, fields["rule"],
                         fields["status"], fields["headers"], fields["payload"], True, fields["fault"])

    records = [made(1), made(2, b'{"id": 2}'), made(3, b'{"id": "caf\xc3\xa9 \\u0000plantstub-body"}'),
               made(4, query="a=1&a=2"), made(5, pairs=PAIRS[:2]), made(6, valid=False, errors=("body.id: no",)),
               made(7, rule="rules[0]"), made(8, status=200), made(9, headers={"Content-Type": "application/json"}),
               made(10, headers={"Content-Type": "application/json", "X-Reply": "1"}), made(11, fault="empty_reply"),
               made(12, payload=b'"\\u0000plantstub-reply"'), made(13, payload=b"not json"), made(14, raw=b"not json"),
               made(15, raw=b'{"a": "\\ud800"}'), made(16, raw=b'{"big": 123456789012345678901234567890}'),
               made(17), made(18, method="PUT"), made(19, path="/plants/1")]
    bodies = [NO_BODY, {"id": 1}, _nested(252), _nested(253), _nested(254), _nested(255), "\ud800", 2**70]
    for record in records:
        for session, epoch in (("ci-1", 2), (None, 0), (None, 0)):
            for body in bodies:
                for reply in bodies:
                    assert (lines.line(record, body, reply, session, epoch)
                            == dumps_record(record, body, reply, True, session=session, epoch=epoch)), (record, body)
