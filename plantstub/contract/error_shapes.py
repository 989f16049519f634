"""Our own 4xx answers (a refused request, a missing record...) in the error shape the operation declares.

One home for the rule: the declared response covering the status (exact code, `4XX`, `default`) gives the
body, generated as a default answer is; our text goes in its message-like string field (`message`, `detail`,
`error_description`..., else the first string field), integer status fields (`status`, `code`, `error`) get
the status, and an `application/problem+json` body gets RFC 9457's members. Our whole text is also sent in
the `X-Plantstub-Error` header. Where nothing (no JSON body) is declared, the answer stays our Error record.
"""

from __future__ import annotations

import http
import re
from typing import cast

from plantstub._json import NO_BODY, essence, is_json
from plantstub.contract.answers import Answer
from plantstub.contract.compiled import Checks
from plantstub.contract.flatten import defs_of
from plantstub.contract.outgoing import Outgoing, error_body, json_reply
from plantstub.contract.samples import sample
from plantstub.contract.schema import SchemaCheck

ERROR_HEADER = "X-Plantstub-Error"
HEADER_LIMIT = 4000  # characters of our text in the header; clients refuse header lines of 8 KiB or more
PROBLEM = "application/problem+json"
# Message-like field names, best first (compared lower-case, without `_` and `-`).
MESSAGE_NAMES = ("message", "detail", "errordescription", "errormessage", "description", "msg", "reason", "title",
                 "details", "error", "text")
STATUS_NAMES = frozenset(("status", "code", "error", "statuscode", "httpstatus", "errorcode"))
MAX_DEPTH = 4  # how deep in the body a message field is looked for (`{"error": {"message": ...}}` is 2)
TRIED = 4  # message places tried per answer, best first
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

Path = tuple[str | int, ...]


def _norm(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


def header_text(message: str) -> str:
    """Our text as a header value: ASCII, control characters escaped, at most HEADER_LIMIT characters."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", message.encode("ascii", "backslashreplace").decode())
    if len(text) > HEADER_LIMIT:
        text = f"{text[:HEADER_LIMIT]}... ({len(text) - HEADER_LIMIT} more characters)"
    return text


def _put(value: object, path: Path, leaf: object) -> object:
    """A copy of `value` with `leaf` at `path` (only the containers along the path are copied)."""
    if not path:
        return leaf
    head, rest = path[0], path[1:]
    if isinstance(value, list):
        copy = list(value)
        copy[int(head)] = _put(copy[int(head)], rest, leaf)
        return copy
    mapping = cast("dict[str | int, object]", value)  # a path is one the walk found: an object's key here
    return {**mapping, head: _put(mapping.get(head), rest, leaf)}


class ErrorShape:
    """One declared error response, ready to carry our text: a template body and the places to put things."""

    def __init__(self, answer: Answer, whole: SchemaCheck, schema: object, checks: Checks) -> None:
        self.content_type = answer.content_type or "application/json"
        self.problem = essence(self.content_type) == PROBLEM
        self.whole = whole
        self.checks = checks
        self.defs = defs_of(schema)
        self.base: object = answer.base
        self.texts: list[tuple[tuple[int, int, int], Path, int | None]] = []  # (rank, path, maxLength)
        self.statuses: list[Path] = []
        self.fixed: dict[Path, str] = {}  # problem+json's `type`
        self.titles: list[Path] = []  # problem+json's `title`: the status's reason phrase
        self._walk(self.base, schema, (), 0)
        self.texts.sort(key=lambda t: t[0])
        del self.texts[TRIED:]
        self.records: dict[int, bool] = {}  # per status: whether the declared shape is our Error record itself

    def is_record(self, status: int) -> bool:
        """Whether this shape answers `status` with our Error record as it is (the Plant Store's 400), or has no
        place for our text and takes the record: then the record is sent unchanged, with no header, and the
        shaping is not paid for on each request."""
        record = self.records.get(status)
        if record is None:
            sample_text = "body.x: plantstub's own error"
            ours = error_body(status, sample_text)
            # Also where the shape has no place for text but takes our record (`schema: {}`: any JSON); never
            # for problem+json, whose media type the record (application/json) would not keep.
            record = self.body(status, sample_text) == ours or (
                not self.texts and not self.problem and self.whole.is_valid(ours))
            self.records[status] = record
        return record

    def _flat(self, schema: object) -> object:
        return self.checks.flatten(schema, self.defs)[0]

    def _rank(self, name: str | int, order: int, depth: int) -> tuple[int, int, int]:
        names = ("detail", *MESSAGE_NAMES) if self.problem else MESSAGE_NAMES
        key = _norm(name) if isinstance(name, str) else ""
        return (names.index(key) if key in names else len(names), depth, order)

    def _walk(self, value: object, schema: object, path: Path, depth: int) -> None:
        flat = self._flat(schema)
        if not isinstance(flat, dict):
            flat = {}
        if isinstance(value, str) or (value is None and _typed(flat, "string")):
            name = path[-1] if path else ""
            limit = flat.get("maxLength")
            self.texts.append((self._rank(name, len(self.texts), depth), path,
                               limit if isinstance(limit, int) and not isinstance(limit, bool) else None))
            return
        if depth >= MAX_DEPTH:
            return
        if isinstance(value, list):
            items = flat.get("items")
            if not value and isinstance(items, dict):  # an empty list: one item to carry the text, if it may
                grown = _put(self.base, path, [sample(items, self.defs, checks=self.checks)])
                if self.whole.is_valid(grown):
                    self.base = grown
                    value = [cast("list[object]", _get(grown, path))[0]]  # the list just put there
            if value:
                self._walk(value[0], items if items is not None else {}, (*path, 0), depth + 1)
            return
        if not isinstance(value, dict):
            return
        props: dict[str, object] = flat["properties"] if isinstance(flat.get("properties"), dict) else {}
        for name in {**props, **value}:
            sub = props.get(name, {})
            here = (*path, name)
            present = value.get(name, NO_BODY)
            sub_flat = self._flat(sub)
            if self.problem and depth == 0 and name in ("type", "title"):
                if name == "title":
                    self.titles.append(here)
                else:
                    self.fixed[here] = "about:blank"
                continue
            if _norm(name) in STATUS_NAMES and ((isinstance(present, int) and not isinstance(present, bool))
                                                or (present is NO_BODY and _typed(sub_flat, "integer"))):
                self.statuses.append(here)
                continue
            if present is NO_BODY:
                if _typed(sub_flat, "string"):
                    self._walk(None, sub, here, depth + 1)
                continue
            self._walk(present, sub, here, depth + 1)

    def body(self, status: int, message: str) -> object:
        """The declared body carrying `message` where the schema takes it (else the generated body as it is)."""
        try:
            phrase = http.HTTPStatus(status).phrase
        except ValueError:
            phrase = "Error"
        base = self.base
        extras = [*((p, v) for p, v in self.fixed.items()), *((p, phrase) for p in self.titles),
                  *((p, status) for p in self.statuses)]
        if extras:
            filled = base
            for path, leaf in extras:
                trial = _put(filled, path, leaf)
                if self.whole.is_valid(trial):
                    filled = trial
            base = filled
        for _, path, limit in self.texts:
            for text in (message, message[:limit] if limit is not None and len(message) > limit else None):
                if text is not None:
                    body = _put(base, path, text)
                    if self.whole.is_valid(body):
                        return body
        return base

    def reply(self, status: int, message: str, headers: dict[str, str]) -> Outgoing:
        out = json_reply(status, self.body(status, message), {**headers, ERROR_HEADER: header_text(message)},
                         self.content_type)
        return Outgoing(out.status, out.body, out.payload, out.content_type, out.headers, message)


def _get(value: object, path: Path) -> object:
    """What `value` holds at `path`, a path the walk found (each step an index of a list or a key of an object)."""
    for key in path:
        value = cast("list[object]", value)[key] if isinstance(key, int) else cast("dict[str, object]", value)[key]
    return value


def _typed(flat: object, kind: str) -> bool:
    if not isinstance(flat, dict):
        return False
    declared = flat.get("type")
    return declared == kind or (isinstance(declared, list) and kind in declared)


def problem_reply(status: int, message: str, headers: dict[str, str]) -> Outgoing:
    """RFC 9457 problem details, for an `application/problem+json` response declared without a schema."""
    try:
        phrase = http.HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    body = {"type": "about:blank", "title": phrase, "status": status, "detail": message}
    out = json_reply(status, body, {**headers, ERROR_HEADER: header_text(message)}, PROBLEM)
    return Outgoing(out.status, out.body, out.payload, out.content_type, out.headers, message)


def declared_shape(answer: Answer, check: SchemaCheck | str, checks: Checks) -> ErrorShape | str | None:
    """How a declared response carries our text: an ErrorShape; PROBLEM for problem+json without a schema;
    None where it declares no JSON body (or none can be made), so our Error record answers."""
    media = answer.media
    if media is None or not is_json(media.name) or answer.problem is not None:
        return None
    if media.schema is None:
        return PROBLEM if essence(media.name) == PROBLEM else None
    if not isinstance(check, SchemaCheck) or answer.base is NO_BODY or not check.is_valid(answer.base):
        return None
    return ErrorShape(answer, check, media.schema, checks)
