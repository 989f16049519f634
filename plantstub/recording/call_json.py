"""A call as JSON bytes: `GET calls`, the live page and the journal file's line. `dumps_call` writes a Call view;
`dumps_record` writes the same bytes straight from a Record, with no Call and no header mapping between (the journal
file's line, written for every call)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

import orjson

from plantstub._clock import iso_time
from plantstub._json import MISSING, NO_BODY, deep_json_bytes
from plantstub.recording.answered import PLAIN_JSON, answered_json
from plantstub.recording.call import SEPARATOR, Call, CallResponse, RawHeaders, Record, header_text


def dumps_call(call: Call, **more: object) -> bytes:
    """One line of JSON, with `more` fields (the journal file's `session`); a body too deep or too odd for the
    encoders is shown as text rather than lost."""
    data: dict[str, object] = dict(call.to_dict())
    if more:
        data.update(more)
    return _dumps(data)


def dumps_record(record: Record, body: object = NO_BODY, response_body: object = NO_BODY, newline: bool = False,
                 session: object = MISSING, epoch: object = MISSING, **more: object) -> bytes:
    """`dumps_call(record.view(body, response_body), **more)`, made straight from the record, with no Call and no
    header mapping between: the journal file's line, written for every call (ending in a newline when `newline`)."""
    return _dumps(record_data(record, body, response_body, session, epoch, more), newline)


def record_data(record: Record, body: object = NO_BODY, response_body: object = NO_BODY, session: object = MISSING,
                epoch: object = MISSING, more: Mapping[str, object] | None = None) -> dict[str, object]:
    """What dumps_record() serializes: the call's fields in the order Call.to_dict() gives them."""
    if body is NO_BODY:
        body = record.request_body()
    shape = record.shape
    status, fault, upstream = shape.status, shape.fault, shape.upstream
    response: CallResponse | None
    if fault is not None:
        response = {"status": status, "headers": {}, "body": None, "fault": fault}
    elif status is None:
        response = None
    else:
        if response_body is NO_BODY:
            response_body = record.reply_body()
        # Serialized at once and never changed: the record's own mapping, and tuples written as JSON arrays.
        response = {"status": status, "headers": shape.response_headers, "body": response_body}
    data = {
        "seq": record.seq, "time": iso_time(record.started), "method": shape.method, "path": record.path,
        "query": record.query if shape.raw_query else {}, "headers": _header_dict(record.raw_headers), "body": body,
        "valid": shape.valid, "errors": record.errors, "scenario": shape.scenario, "rule": shape.rule,
        "response": response, "stub_errors": shape.stub_errors, "pending": response is None,
        "proxied": upstream is not None, "upstream": upstream,
        "answered_by": PLAIN_JSON.get(id(shape.answerer)) or answered_json(shape.answerer, fault, upstream),
    }
    if session is not MISSING:  # the journal file's (named: no mapping of keywords made for every line)
        data["session"] = session
    if epoch is not MISSING:
        data["epoch"] = epoch
    if more:
        data.update(more)
    return data


# The last headers _header_dict() read, and its answer: the same dict again for the same bytes (it is only serialized,
# never changed; a tuple replaced whole, so a thread reading it sees one pair)
_last_headers: tuple[bytes, dict[str, str]] = (b"", {})


def _header_dict(headers: RawHeaders) -> dict[str, str]:
    """The request's headers as Call.to_dict() writes them (the last of a name written alike wins); the result is
    shared: serialize it, never change it."""
    global _last_headers
    if not headers:
        return {}
    if isinstance(headers, bytes):
        last = _last_headers
        if last[0] == headers:  # a client sends the same headers call after call (a --journal line each call)
            return last[1]
        if headers.isascii():  # the usual headers: decoded and split whole, in C
            texts = iter(headers.decode("ascii").split("\0"))
            found = dict(zip(texts, texts, strict=False))  # pairs: Record.of() keeps bytes only when each has its NUL
            _last_headers = (headers, found)
            return found
        parts = headers.split(SEPARATOR)
        pairs: Iterable[tuple[bytes, bytes]] = zip(parts[::2], parts[1::2], strict=True)
    else:
        pairs = headers
    return {name.decode("utf-8", "surrogateescape"): header_text(value.decode("utf-8", "surrogateescape"))
            for name, value in pairs}


def _dumps(data: dict[str, object], newline: bool = False) -> bytes:
    try:
        return orjson.dumps(data, option=orjson.OPT_APPEND_NEWLINE) if newline else orjson.dumps(data)
    except (TypeError, orjson.JSONEncodeError):
        pass
    if newline:
        return _dumps(data) + b"\n"
    try:  # ASCII escapes carry what UTF-8 cannot (a lone surrogate from a `\ud800` escape)
        return json.dumps(data).encode("ascii")
    except RecursionError:  # nested deeper than the stack allows here: the same JSON, built by a loop
        return deep_json_bytes(data)
    except (ValueError, TypeError):
        data["body"] = repr(data["body"])[:10_000]
        response = data["response"]
        if isinstance(response, dict):  # (else None: pending)
            data["response"] = {**response, "body": repr(response.get("body"))[:10_000]}
        return json.dumps(data).encode("ascii")
