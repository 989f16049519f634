"""A recorded call: the compact Record the journal keeps, and the Call view readers get.

The journal keeps what came over the wire, as bytes: the request's headers, query and body, the reply's payload.
The parsed view (`Call.headers`, `Call.query`, `Call.body`, `Call.response["body"]`) is built when someone reads the
call, so a journal of big bodies or many headers costs about their size in memory, not the ten or twenty times more
that parsed Python objects take; `Record.size` counts that memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from itertools import chain
from typing import Any, NamedTuple, TypedDict

from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from plantstub._clock import iso_time
from plantstub._json import NO_BODY, body_for_record
from plantstub.recording.answered import DEFAULT, AnsweredBy, Answerer, answered_json
from plantstub.recording.verdict import Upstream, Verdict, contract_problems, verdict_of

# What Python objects cost besides the bytes they carry (CPython 64-bit, calibrated with tracemalloc: see
# tests/recording/test_journal.py): a record with its fixed fields (the tuple, numbers, path, bodies' objects and a
# small dict of reply headers); one more string in a tuple (errors); one more entry of that dict.
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


class Record(NamedTuple):
    """What the journal keeps of one call, compact: the request's headers and query as they came over the wire,
    bodies as the bytes sent; `headers`, `query` and the bodies are parsed when read (`view()`). Build one with
    `Record.of()`, which counts `size`.

    `parsed` holds the request body only when the check read it from something other than JSON
    text (a form), which the raw bytes alone would not give back; else NO_BODY.
    """

    seq: int
    started: float
    method: str
    path: str
    raw_query: str  # the query string as sent (percent-encoded), "" for none
    raw_headers: RawHeaders  # the request's header names and values as received, NUL-separated
    raw: bytes
    parsed: object
    valid: bool
    errors: tuple[str, ...]
    scenario: str | None
    rule: str | None
    status: int | None
    response_headers: dict[str, str]
    payload: bytes  # the reply's body as sent
    payload_json: bool  # whether it is JSON (else text)
    fault: str | None
    stub_errors: tuple[str, ...]
    size: int  # the bytes of memory the record holds, as Record.of() counted them
    proxied: bool = False  # --proxy: the real service answered (or failed to)
    upstream: Upstream | None = None  # then its verdict: url, status, valid, errors
    answerer: Answerer = DEFAULT  # who answered: its JSON form is the call's `answered_by`

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
        # calls then share one copy of each (equal bytes, so nothing shown changes; the budget still counts each).
        global _last_kept
        last = _last_kept
        if headers == last[0]:
            headers = last[0]
        if path == last[1]:
            path = last[1]
        if payload == last[2]:
            payload = last[2]
        _last_kept = (headers, path, payload)
        return _new_record(cls, (seq, started, method, path, raw_query, headers, raw, parsed, valid, errors, scenario,
                                 rule, status, response_headers, payload, payload_json, fault, stub_errors, size,
                                 upstream is not None, upstream, answerer))

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
        return self.status is None and self.fault is None

    def request_body(self) -> object:
        """The request's body as a call shows it: the check's parse when it made one, else read from the bytes."""
        return self.parsed if self.parsed is not NO_BODY else body_for_record(self.raw)

    def reply_body(self) -> object:
        """The answer's body as a call shows it: JSON parsed, other text as text, None when it had none."""
        if not self.payload:
            return None
        return body_for_record(self.payload) if self.payload_json else self.payload.decode("utf-8", errors="replace")

    def view(self, body: object = NO_BODY, response_body: object = NO_BODY) -> Call:
        """The Call readers see; `body` and `response_body`, when the caller has them parsed already,
        save parsing the bytes again."""
        if body is NO_BODY:
            body = self.request_body()
        if response_body is NO_BODY:
            response_body = self.reply_body()
        response: CallResponse | None = {"status": self.status, "headers": dict(self.response_headers),
                                         "body": response_body}
        if self.fault is not None:
            response = {"status": self.status, "headers": {}, "body": None, "fault": self.fault}
        elif self.status is None:
            return Call(self.seq, self.started, self.method, self.path, self.query, self.headers, body, self.valid,
                        self.errors, self.scenario, self.rule, None, self.stub_errors, True, False, None,
                        self.answered_by)
        if self.upstream is not None:
            return Call(self.seq, self.started, self.method, self.path, self.query, self.headers, body, self.valid,
                        self.errors, self.scenario, self.rule, response, self.stub_errors, False, True,
                        {**self.upstream, "errors": list(self.upstream["errors"])}, self.answered_by)
        return Call(self.seq, self.started, self.method, self.path, self.query, self.headers, body, self.valid,
                    self.errors, self.scenario, self.rule, response, self.stub_errors, False, False, None,
                    self.answered_by)


# -- the compact forms and their sizes -------------------------------------------------------------------------
_NO_HEADERS: CIMultiDictProxy[str] = CIMultiDictProxy(CIMultiDict())
# Headers packed `name NUL value NUL name ...` in one bytes object: a few dozen bytes of overhead in all, where a
# mapping of strings costs about 150 bytes a header. NUL is never in a header: names are tokens, and aiohttp refuses
# it in a value (should one get through, the record keeps the pairs themselves).
SEPARATOR = b"\0"
_last_kept: tuple[RawHeaders, str, bytes] = (b"", "", b"")  # the last record's headers, path and answer (shared)
_new_record = tuple.__new__  # Record's fields in order, without NamedTuple's __new__ in Python: on every request


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
