"""A recorded call: the compact Record the journal keeps, and the Call view readers get.

The journal keeps what came over the wire, as bytes: the request's headers, query and body, the reply's payload.
The parsed view (`Call.headers`, `Call.query`, `Call.body`, `Call.response["body"]`) is built when someone reads the
call, so a journal of big bodies or many headers costs about their size in memory, not the ten or twenty times more
that parsed Python objects take; `Record.size` counts that memory. What calls alike have in common (the method, query,
verdict, status, reply headers, who answered: their `Shape`) is kept once for all of them, and a refusal's body, which
names the request's errors, is made again from them when read: a call of bench.py's load costs about 260 bytes of
memory kept, its body's included (issue 41; `tests/benchmarks/journal_bytes.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from itertools import chain
from typing import Any, NamedTuple, TypedDict

import orjson
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from plantstub._clock import iso_time
from plantstub._json import NO_BODY, body_for_record
from plantstub.recording.answered import DEFAULT, AnsweredBy, Answerer, answered_json
from plantstub.recording.verdict import Upstream, Verdict, contract_problems, verdict_of

# What Python objects cost besides the bytes they carry (CPython 64-bit, calibrated with tracemalloc: see
# tests/recording/test_journal.py): a record with its fixed fields when it shares nothing with the calls before it (the
# tuple, its Shape, numbers, path, bodies' objects and a small dict of reply headers); one more string in a tuple
# (errors); one more entry of that dict. Calls alike hold less (one Shape, headers, path and answer for all).
RECORD_OVERHEAD = 600
OBJECT_OVERHEAD = 100
ENTRY_OVERHEAD = 140
PARSED_FACTOR = 50  # a form parsed into a dict of strings and numbers: up to ~50 times its bytes (`a&b&c...`)

# A request's headers as a record keeps them: packed in one bytes object, or the pairs (see Record.of)
RawHeaders = bytes | tuple[tuple[bytes, bytes], ...]
Query = dict[str, "str | list[str]"]  # a name's value, or the list of them when it came more than once


class _Sent(TypedDict):
    status: int | None
    headers: dict[str, str]
    # Parsed JSON, else text, else None. Any: what a test reads as it knows it (`call.response["body"]["id"]`).
    body: Any


class CallResponse(_Sent, total=False):
    """A call's `response`: the status, headers and body sent; `fault` instead when the reply misbehaved on the
    socket (then no status, no headers, no body)."""

    fault: str


class CallJson(TypedDict):
    """A call as the admin API and the journal file write it (`Call.to_dict()`)."""

    seq: int
    time: str
    method: str
    path: str
    query: Query
    headers: dict[str, str]
    body: object
    valid: bool
    errors: list[str]
    scenario: str | None
    rule: str | None
    response: CallResponse | None
    stub_errors: list[str]
    pending: bool
    proxied: bool
    upstream: Upstream | None
    answered_by: AnsweredBy | None


class Call(NamedTuple):
    """A recorded request and the response it got; `started` is seconds since the epoch.

    `headers` is the request's own case-insensitive, read-only header mapping. A call whose reply is delayed is
    listed as it arrives, `pending` with `response` None, and answered in place.
    """

    seq: int
    started: float
    method: str
    path: str
    query: Query
    headers: Mapping[str, str]
    body: Any  # parsed JSON, else text, else None; Any: what a test reads as it knows it (`call.body["name"]`)
    valid: bool
    errors: tuple[str, ...]
    scenario: str | None
    rule: str | None
    response: CallResponse | None  # None while pending
    # Problems on the stub's side, never the consumer's: a scenario reply that broke the contract once
    # rendered, or a plantstub bug. `valid` and `errors` are about the request alone.
    stub_errors: tuple[str, ...] = ()
    pending: bool = False  # arrived, its reply not sent yet (a delay)
    proxied: bool = False  # --proxy: the real service answered
    upstream: Upstream | None = None  # then its verdict: `url`, `status`, `valid`, `errors`
    answered_by: AnsweredBy | None = None  # who answered (recording/answered.py); None from a stub without it

    @property
    def problems(self) -> dict[Verdict, list[str]]:
        """Who broke the contract on this call and how, in the order of blame (recording/verdict.py)."""
        return contract_problems(self.errors, self.stub_errors, self.upstream)

    @property
    def verdict(self) -> Verdict:
        """`invalid` (the request broke the contract), `stub` (the stub's reply did), `upstream` (the real service's
        answer did), else `ok`."""
        return verdict_of(self.problems)

    @property
    def status(self) -> int | None:
        """The status sent, or None when a fault sent none or the call is pending."""
        return None if self.response is None else self.response.get("status")

    @property
    def outcome(self) -> int | str:
        """What failure texts show of the answer: the status, else the fault, else `pending`."""
        if self.response is None:
            return "pending"
        status: int | str | None = self.response.get("status")
        return (self.response.get("fault") or "no status") if status is None else status

    @property
    def time(self) -> str:
        """When the request arrived, ISO 8601 UTC (as the admin API shows it)."""
        return iso_time(self.started)

    @classmethod
    def from_dict(cls, data: CallJson) -> Call:
        """A call as the admin API shows it (`to_dict()`), read back: what `Stub.connect(...).calls` gives."""
        started = datetime.fromisoformat(data["time"].replace("Z", "+00:00")).timestamp()
        return cls(data["seq"], started, data["method"], data["path"], data["query"],
                   CIMultiDictProxy(CIMultiDict(data["headers"])), data["body"], data["valid"], tuple(data["errors"]),
                   data["scenario"], data["rule"], data["response"], tuple(data.get("stub_errors", ())),
                   bool(data.get("pending", False)), bool(data.get("proxied", False)), data.get("upstream"),
                   data.get("answered_by"))

    def to_dict(self) -> CallJson:
        """The call as the admin API and the journal file show it."""
        return {
            "seq": self.seq,
            "time": self.time,
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "headers": {str(name): header_text(value) for name, value in self.headers.items()},  # str: orjson takes no istr
            "body": self.body,
            "valid": self.valid,
            "errors": list(self.errors),
            "scenario": self.scenario,
            "rule": self.rule,
            "response": self.response,
            "stub_errors": list(self.stub_errors),
            "pending": self.pending,
            "proxied": self.proxied,
            "upstream": self.upstream,
            "answered_by": self.answered_by,
        }


class Shape(NamedTuple):
    """What a call has in common with the calls like it (the same request to the same endpoint, answered alike): all
    of a record but its number, time, path, headers, bodies and errors. Records share one Shape when equal (`Record.of`),
    so a kept call costs one reference for these, not one each."""

    method: str
    raw_query: str  # the query string as sent (percent-encoded), "" for none
    parsed: object  # the request body as the check read it when that was not JSON text (a form), else NO_BODY
    valid: bool
    scenario: str | None
    rule: str | None
    status: int | None
    response_headers: dict[str, str]
    payload_json: bool  # whether the reply's body is JSON (else text)
    fault: str | None
    stub_errors: tuple[str, ...]
    upstream: Upstream | None  # --proxy: the real service's verdict: url, status, valid, errors
    answerer: Answerer  # who answered: its JSON form is the call's `answered_by`


class Record(NamedTuple):
    """What the journal keeps of one call, compact: the request's headers and query as they came over the wire,
    bodies as the bytes sent; `headers`, `query` and the bodies are parsed when read (`view()`). Build one with
    `Record.of()`, which counts `size`.

    What it has in common with calls like it is its `shape` (shared), read through the properties of the same names
    (`method`, `status`, `answerer`...). `parsed` holds the request body only when the check read it from something
    other than JSON text (a form), which the raw bytes alone would not give back; else NO_BODY.
    """

    seq: int
    started: float
    path: str
    raw_headers: RawHeaders  # the request's header names and values as received, NUL-separated
    raw: bytes
    sent: bytes  # the reply's body as sent (`payload`), or ERRORS_SENT: the Error record that named the `errors`
    errors_kept: str | tuple[str, ...]  # the request's `errors`: the text of one alone (no tuple for it), else the tuple
    size: int  # the bytes of memory the record holds, as Record.of() counted them
    shape: Shape

    @classmethod
    def of(
        cls, seq: int, started: float, method: str, path: str, raw_query: str,
        header_pairs: Sequence[tuple[bytes, bytes]], raw: bytes, parsed: object, valid: bool, errors: tuple[str, ...],
        scenario: str | None, rule: str | None, status: int | None, response_headers: dict[str, str],
        payload: bytes, payload_json: bool, fault: str | None, stub_errors: tuple[str, ...] = (),
        upstream: Upstream | None = None, answerer: Answerer = DEFAULT,
    ) -> Record:
        """A record of one call, `header_pairs` as aiohttp received them (`request.raw_headers`), its size counted
        by arithmetic on lengths (nothing is walked but the few errors and reply headers)."""
        # On every request's path: inline arithmetic, C loops only (a Python call costs as much as all of it).
        headers: RawHeaders = SEPARATOR.join(chain.from_iterable(header_pairs)) if header_pairs else b""
        if headers and headers.count(SEPARATOR) != 2 * len(header_pairs) - 1:  # a NUL got through: the pairs
            headers = tuple(header_pairs)
        size = RECORD_OVERHEAD + len(raw) + len(payload) + (len(path) if path.isascii() else 4 * len(path))
        size += _pairs_bytes(headers) if type(headers) is tuple else len(headers)
        if raw_query:
            size += _text_bytes(raw_query)
        if errors:
            size += _texts_bytes(errors)
        if stub_errors:
            size += _texts_bytes(stub_errors)
        if response_headers:
            values = "".join(response_headers.values())  # the names are the reply's own; a value may echo the client
            size += ENTRY_OVERHEAD * len(response_headers) + (len(values) if values.isascii() else 4 * len(values))
        if upstream is not None:  # a proxied call: its url and the problems of the answer
            size += RECORD_OVERHEAD + _text_bytes(upstream["url"]) + _texts_bytes(tuple(upstream["errors"]))
        if parsed is not NO_BODY:  # a form read into a dict: Python objects, counted as the worst case
            size += PARSED_FACTOR * len(raw)
        if answerer.id is not None:  # a rule from code's answerer, made per call (the others are shared)
            size += OBJECT_OVERHEAD
        # A client sends the same headers to the same path and gets the same answer, call after call: the journal's
        # calls then share one copy of each, and one Shape (equal values, so nothing shown changes). The budget still
        # counts each record's own: RECORD_OVERHEAD is what a record holds when it shares nothing.
        global _last_kept
        last = _last_kept
        if headers == last[0]:
            headers = last[0]
        if path == last[1]:
            path = last[1]
        sent = payload
        if payload == last[2]:
            sent = payload = last[2]
        elif errors and payload == _errors_body(status, errors):
            sent = ERRORS_SENT  # a refusal of ours: its body is the errors', made again when read
        if size == last[3]:
            size = last[3]
        fields = (method, raw_query, parsed, valid, scenario, rule, status, response_headers, payload_json, fault,
                  stub_errors, upstream, answerer)
        shape = last[4]  # a tuple too: compared field by field, in C
        if not (fields == shape and parsed is NO_BODY and (
                response_headers is shape[7] or list(response_headers) == list(shape[7]))):  # each in its order
            shape = _new_shape(Shape, fields)
            if parsed is NO_BODY and upstream is None:  # the rest is hashable (the reply's headers as pairs, in order)
                key = (method, raw_query, valid, scenario, rule, status, tuple(response_headers.items()),
                       payload_json, fault, stub_errors, answerer)
                shape = _shapes.setdefault(key, shape)
                if len(_shapes) > _SHAPES:
                    _shapes.clear()
        _last_kept = (headers, path, payload, size, shape)
        return _new_record(cls, (seq, started, path, headers, raw, sent, errors[0] if len(errors) == 1 else errors,
                                 size, shape))

    @property
    def errors(self) -> tuple[str, ...]:
        """The request's contract violations (empty: it kept the contract)."""
        kept = self.errors_kept
        return (kept,) if isinstance(kept, str) else kept

    @property
    def payload(self) -> bytes:
        """The reply's body as sent."""
        sent = self.sent
        if sent is ERRORS_SENT:
            return _errors_body(self.shape.status, self.errors)
        return sent

    # What the Shape holds, read as the record's own
    @property
    def method(self) -> str:
        return self.shape.method

    @property
    def raw_query(self) -> str:
        return self.shape.raw_query

    @property
    def parsed(self) -> object:
        return self.shape.parsed

    @property
    def valid(self) -> bool:
        return self.shape.valid

    @property
    def scenario(self) -> str | None:
        return self.shape.scenario

    @property
    def rule(self) -> str | None:
        return self.shape.rule

    @property
    def status(self) -> int | None:
        return self.shape.status

    @property
    def response_headers(self) -> dict[str, str]:
        return self.shape.response_headers

    @property
    def payload_json(self) -> bool:
        return self.shape.payload_json

    @property
    def fault(self) -> str | None:
        return self.shape.fault

    @property
    def stub_errors(self) -> tuple[str, ...]:
        return self.shape.stub_errors

    @property
    def proxied(self) -> bool:
        """--proxy: the real service answered (or failed to)."""
        return self.shape.upstream is not None

    @property
    def upstream(self) -> Upstream | None:
        return self.shape.upstream

    @property
    def answerer(self) -> Answerer:
        return self.shape.answerer

    @property
    def headers(self) -> CIMultiDictProxy[str]:
        """The request's headers, case-insensitive and read-only, decoded as aiohttp decodes them."""
        return _unpacked(self.raw_headers)

    @property
    def query(self) -> Query:
        """The query parameters: a name's value, or the list of them when it came more than once."""
        if not self.raw_query:
            return {}
        query = URL.build(query_string=self.raw_query, encoded=True).query
        return {name: values if len(values) > 1 else values[0]
                for name in query for values in (query.getall(name),)}

    @property
    def time(self) -> str:
        return iso_time(self.started)

    @property
    def answered_by(self) -> AnsweredBy:
        """Who answered, as the call's JSON shows it."""
        return answered_json(self.answerer, self.fault, self.upstream)

    @property
    def problems(self) -> dict[Verdict, list[str]]:
        """Who broke the contract on this call and how (recording/verdict.py), as `Call.problems`."""
        return contract_problems(self.errors, self.stub_errors, self.upstream)

    @property
    def verdict(self) -> Verdict:
        return verdict_of(self.problems)

    @property
    def pending(self) -> bool:
        """Whether the reply is still to be sent: every answer has a status, or else a fault (`Journal.pend()`)."""
        shape = self.shape
        return shape.status is None and shape.fault is None

    def request_body(self) -> object:
        """The request's body as a call shows it: the check's parse when it made one, else read from the bytes."""
        parsed = self.shape.parsed
        return parsed if parsed is not NO_BODY else body_for_record(self.raw)

    def reply_body(self) -> object:
        """The answer's body as a call shows it: JSON parsed, other text as text, None when it had none."""
        payload = self.payload
        if not payload:
            return None
        return body_for_record(payload) if self.shape.payload_json else payload.decode("utf-8", errors="replace")

    def view(self, body: object = NO_BODY, response_body: object = NO_BODY) -> Call:
        """The Call readers see; `body` and `response_body`, when the caller has them parsed already,
        save parsing the bytes again."""
        if body is NO_BODY:
            body = self.request_body()
        if response_body is NO_BODY:
            response_body = self.reply_body()
        shape = self.shape
        status, fault, upstream = shape.status, shape.fault, shape.upstream
        response: CallResponse | None = {"status": status, "headers": dict(shape.response_headers),
                                         "body": response_body}
        if fault is not None:
            response = {"status": status, "headers": {}, "body": None, "fault": fault}
        elif status is None:  # pending
            return Call(self.seq, self.started, shape.method, self.path, self.query, self.headers, body, shape.valid,
                        self.errors, shape.scenario, shape.rule, None, shape.stub_errors, True, False, None,
                        answered_json(shape.answerer, fault, upstream))
        return Call(self.seq, self.started, shape.method, self.path, self.query, self.headers, body, shape.valid,
                    self.errors, shape.scenario, shape.rule, response, shape.stub_errors, False, upstream is not None,
                    None if upstream is None else {**upstream, "errors": list(upstream["errors"])},
                    answered_json(shape.answerer, fault, upstream))


# -- the compact forms and their sizes -------------------------------------------------------------------------
_NO_HEADERS: CIMultiDictProxy[str] = CIMultiDictProxy(CIMultiDict())
# Headers packed `name NUL value NUL name ...` in one bytes object: a few dozen bytes of overhead in all, where a
# mapping of strings costs about 150 bytes a header. NUL is never in a header: names are tokens, and aiohttp refuses
# it in a value (should one get through, the record keeps the pairs themselves).
SEPARATOR = b"\0"
_NO_SHAPE = Shape("", "", None, False, None, None, None, {}, False, None, (), None, DEFAULT)  # equal to no call's
# the last record's headers, path, answer, size and Shape (shared with the next when equal)
_last_kept: tuple[RawHeaders, str, bytes, int, Shape] = (b"", "", b"", 0, _NO_SHAPE)
# Shapes met lately, by what they hold: calls to a few endpoints in turn share theirs too. At most _SHAPES, then
# started again.
_shapes: dict[tuple[object, ...], Shape] = {}
_SHAPES = 64
# A refusal's body is the Error record naming the request's errors (contract/outgoing.py's error_reply): a record whose
# reply was exactly that keeps this marker instead, and the errors alone (an invalid call's bytes, then, once not twice)
ERRORS_SENT = b"\0plantstub: the Error record of the errors\0"


def _errors_body(status: int | None, errors: tuple[str, ...]) -> bytes:
    """The body of `error_reply(status, "; ".join(errors))` (contract/outgoing.py, not imported here: a sidecar's
    client reads calls without the contract's code), as orjson writes it. Record.of() keeps the marker only when this
    is exactly what was sent (tests/recording/test_journal.py makes the body with error_reply itself)."""
    return orjson.dumps({"error": status or 0, "message": "; ".join(errors)})
_new_record = tuple.__new__  # Record's fields in order, without NamedTuple's __new__ in Python: on every request
_new_shape = tuple.__new__



def _unpacked(headers: RawHeaders) -> CIMultiDictProxy[str]:
    if not headers:
        return _NO_HEADERS
    pairs: Iterable[tuple[bytes, bytes]]
    if isinstance(headers, bytes):
        parts = headers.split(SEPARATOR)
        pairs = zip(parts[::2], parts[1::2], strict=True)
    else:  # the pairs themselves (see SEPARATOR)
        pairs = headers
    return CIMultiDictProxy(CIMultiDict(
        (name.decode("utf-8", "surrogateescape"), value.decode("utf-8", "surrogateescape")) for name, value in pairs))


def _text_bytes(text: str) -> int:
    """A string's characters' bytes, at most (CPython keeps 1, 2 or 4 bytes a character; 4 when not ASCII)."""
    return len(text) if text.isascii() else 4 * len(text)


def _texts_bytes(texts: tuple[str, ...]) -> int:
    return OBJECT_OVERHEAD * len(texts) + _text_bytes("".join(texts))  # joined: one C loop, not a Python one


def _pairs_bytes(pairs: tuple[tuple[bytes, bytes], ...]) -> int:
    return sum(ENTRY_OVERHEAD + len(name) + len(value) for name, value in pairs)




def header_text(value: str) -> str:
    """A header value as JSON can carry it: bytes that were not UTF-8 become U+FFFD."""
    if value.isascii():
        return value
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
