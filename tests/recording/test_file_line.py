"""The journal file's line is made straight from the record (issue 26): the same JSON the Call view writes."""

from __future__ import annotations

import pytest

from plantstub._json import NO_BODY
from plantstub.recording.call import Record, dumps_call, dumps_record

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

    from plantstub.recording.call import iso_time

    expected = datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert iso_time(started) == iso_time(started) == expected  # made, then from the second kept
