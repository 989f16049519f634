"""A recorded call: the compact Record the journal keeps, and the Call view readers get.

The journal keeps what came over the wire, as bytes: the request body and the reply's payload. The
parsed view (`Call.body`, `Call.response["body"]`) is built when someone reads the call, so a
journal of big bodies costs about their size in memory, not the ten or twenty times more that
parsed Python objects take.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, NamedTuple

import orjson
from multidict import CIMultiDict, CIMultiDictProxy

from plantstub._json import NO_BODY, body_for_record, deep_json_bytes

RECORD_OVERHEAD = 512  # bytes a record costs besides its bodies (fields, headers): an estimate


class Call(NamedTuple):
    """A recorded request and the response it got; `started` is seconds since the epoch.

    `headers` is the request's own case-insensitive, read-only header mapping.
    """

    seq: int
    started: float
    method: str
    path: str
    query: dict[str, Any]
    headers: Mapping[str, str]
    body: Any
    valid: bool
    errors: tuple[str, ...]
    scenario: str | None
    rule: str | None
    response: dict[str, Any]
    # Problems on the stub's side, never the consumer's: a scenario reply that broke the contract once
    # rendered, or a plantstub bug. `valid` and `errors` are about the request alone.
    stub_errors: tuple[str, ...] = ()

    @property
    def status(self) -> int | None:
        """The status sent, or None when a fault sent none."""
        return self.response.get("status")

    @property
    def time(self) -> str:
        """When the request arrived, ISO 8601 UTC (as the admin API shows it)."""
        return iso_time(self.started)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Call:
        """A call as the admin API shows it (`to_dict()`), read back: what `Stub.connect(...).calls` gives."""
        started = datetime.fromisoformat(data["time"].replace("Z", "+00:00")).timestamp()
        return cls(data["seq"], started, data["method"], data["path"], data["query"],
                   CIMultiDictProxy(CIMultiDict(data["headers"])), data["body"], data["valid"], tuple(data["errors"]),
                   data["scenario"], data["rule"], data["response"], tuple(data.get("stub_errors", ())))

    def to_dict(self) -> dict[str, Any]:
        """The call as the admin API and the journal file show it."""
        return {
            "seq": self.seq,
            "time": self.time,
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "headers": {str(name): _text(value) for name, value in self.headers.items()},  # str: orjson takes no istr
            "body": self.body,
            "valid": self.valid,
            "errors": list(self.errors),
            "scenario": self.scenario,
            "rule": self.rule,
            "response": self.response,
            "stub_errors": list(self.stub_errors),
        }


class Record(NamedTuple):
    """What the journal keeps of one call: the same facts as a Call, bodies as the bytes sent.

    `parsed` holds the request body only when the check read it from something other than JSON
    text (a form), which the raw bytes alone would not give back; else NO_BODY.
    """

    seq: int
    started: float
    method: str
    path: str
    query: dict[str, Any]
    headers: Mapping[str, str]
    raw: bytes
    parsed: Any
    valid: bool
    errors: tuple[str, ...]
    scenario: str | None
    rule: str | None
    status: int | None
    response_headers: dict[str, str]
    payload: bytes  # the reply's body as sent
    payload_json: bool  # whether it is JSON (else text)
    fault: str | None
    stub_errors: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        """About how many bytes of memory the record holds."""
        return len(self.raw) + len(self.payload) + RECORD_OVERHEAD

    @property
    def time(self) -> str:
        return iso_time(self.started)

    def view(self, body: Any = NO_BODY, response_body: Any = NO_BODY) -> Call:
        """The Call readers see; `body` and `response_body`, when the caller has them parsed already,
        save parsing the bytes again."""
        if body is NO_BODY:
            body = self.parsed if self.parsed is not NO_BODY else body_for_record(self.raw)
        if response_body is NO_BODY:
            response_body = _payload_view(self.payload, self.payload_json)
        response: dict[str, Any] = {"status": self.status, "headers": self.response_headers, "body": response_body}
        if self.fault is not None:
            response = {"status": self.status, "headers": {}, "body": None, "fault": self.fault}
        return Call(self.seq, self.started, self.method, self.path, self.query, self.headers, body, self.valid,
                    self.errors, self.scenario, self.rule, response, self.stub_errors)


def _payload_view(payload: bytes, is_json: bool) -> Any:
    if not payload:
        return None
    if is_json:
        return body_for_record(payload)
    return payload.decode("utf-8", errors="replace")


def iso_time(started: float) -> str:
    """Seconds since the epoch as ISO 8601 UTC with milliseconds: `2026-11-24T01:02:03.456Z`."""
    return datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text(value: str) -> str:
    """A header value as JSON can carry it: bytes that were not UTF-8 become U+FFFD."""
    if value.isascii():
        return value
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def dumps_call(call: Call) -> bytes:
    """One line of JSON; a body too deep or too odd for the encoders is shown as text rather than lost."""
    data = call.to_dict()
    try:
        return orjson.dumps(data)
    except (TypeError, orjson.JSONEncodeError):
        pass
    try:  # ASCII escapes carry what UTF-8 cannot (a lone surrogate from a `\ud800` escape)
        return json.dumps(data).encode("ascii")
    except RecursionError:  # nested deeper than the stack allows here: the same JSON, built by a loop
        return deep_json_bytes(data)
    except (ValueError, TypeError):
        data["body"] = repr(data["body"])[:10_000]
        data["response"] = {**data["response"], "body": repr(data["response"].get("body"))[:10_000]}
        return json.dumps(data).encode("ascii")
