"""The journal file's line of a call like the one before: what it shares with that call (method, path, query,
headers, verdict, the answer's status and headers, who answered) serialized once, its number, time and bodies
each time. The same bytes as `dumps_record(..., newline=True)` gives (tests/recording/test_file_line.py)."""

from __future__ import annotations

from typing import Any

import orjson

from plantstub._clock import iso_time
from plantstub._json import NO_BODY
from plantstub.recording.call import Record, Shape
from plantstub.recording.call_json import dumps_record, record_data

# Stand-ins for the two bodies in the line made once; NUL is written `\u0000`, so neither is ever a piece of a
# string JSON holds (a NUL in a value is written escaped, after a character that is not a quote).
_BODY, _REPLY = "\0plantstub-body", "\0plantstub-reply"
_BODY_JSON, _REPLY_JSON = orjson.dumps(_BODY), orjson.dumps(_REPLY)
_AFTER_TIME = b',"method":'  # the first field after the number and the time


class FileLines:
    """One journal's maker of file lines. `line()` gives dumps_record()'s bytes; for a call answered like the one
    before (no fault, not proxied), only its number, time and bodies are serialized."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        # what the last call shared, and its line's parts around the bodies (one tuple: a thread sees all or none)
        self._last: tuple[tuple[object, ...], Shape, tuple[bytes, bytes, bytes]] | None = None

    def line(self, record: Record, body: object, response_body: object, session: object, epoch: object) -> bytes:
        shape = record.shape
        if shape.status is None or shape.fault is not None or shape.upstream is not None:
            return dumps_record(record, body, response_body, True, session=session, epoch=epoch)
        # Serialized alike when equal (text, bytes, numbers, tuples of them); the shape when the same (Record.of shares
        # it between calls alike), or alike but for the form body it holds.
        key = (record.path, record.raw_headers, record.errors_kept, session, epoch)
        last = self._last
        if last is None or (last[1] is not shape and not _alike(shape, last[1])) or last[0] != key:
            parts = _parts(record, session, epoch)
            if parts is None:
                return dumps_record(record, body, response_body, True, session=session, epoch=epoch)
            last = self._last = (key, shape, parts)
        if body is NO_BODY:
            body = record.request_body()
        if response_body is NO_BODY:
            response_body = record.reply_body()
        try:  # at the depth they have in the line, so that orjson refuses (and the JSON fallback writes) the same
            body_json = orjson.dumps((body,))[1:-1]
            reply_json = orjson.dumps(((response_body,),))[2:-2]
        except (TypeError, orjson.JSONEncodeError):
            return dumps_record(record, body, response_body, True, session=session, epoch=epoch)
        head, middle, tail = last[2]
        return b"".join((b'{"seq":', str(record.seq).encode(), b',"time":"', iso_time(record.started).encode(), b'"',
                         head, body_json, middle, reply_json, tail))


def _alike(shape: Shape, other: Shape) -> bool:
    """Whether two calls' shapes give the same line but for the bodies: equal but for the form body they may hold
    (`parsed`), the reply's headers and who answered the same objects."""
    return (shape.response_headers is other.response_headers and shape.answerer is other.answerer
            and shape[:2] == other[:2] and shape[3:] == other[3:])


def _parts(record: Record, session: object, epoch: object) -> tuple[bytes, bytes, bytes] | None:
    """The line's bytes after the time, cut around the two bodies; None when orjson cannot write it alone."""
    data: dict[str, Any] = record_data(record, _BODY, _REPLY, session, epoch)
    try:
        line = orjson.dumps(data, option=orjson.OPT_APPEND_NEWLINE)
    except (TypeError, orjson.JSONEncodeError):
        return None
    start = line.find(_AFTER_TIME)
    if start < 0 or line.count(_BODY_JSON) != 1 or line.count(_REPLY_JSON) != 1:
        return None
    head, _, rest = line[start:].partition(_BODY_JSON)
    middle, _, tail = rest.partition(_REPLY_JSON)
    if _REPLY_JSON in head or not tail:
        return None
    return head, middle, tail

