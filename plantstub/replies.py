"""Build what the stub sends: Error records, and the spec's declared answers (examples or echo)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .generate import flatten, sample
from .incoming import NO_BODY
from .spec import MISSING, MediaType, Operation
from .schema_check import SchemaCheck

JSON = "application/json"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A response ready to send: `body` is what the journal shows, `payload` the bytes on the wire."""

    status: int
    body: Any = NO_BODY
    payload: bytes = b""
    content_type: str | None = JSON
    headers: dict[str, str] = field(default_factory=dict)


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))  # built once, not per call


def json_bytes(value: Any) -> bytes:
    return _ENCODER.encode(value).encode("utf-8")


def json_reply(status: int, body: Any, headers: dict[str, str] | None = None, content_type: str = JSON) -> Outgoing:
    return Outgoing(status, body, json_bytes(body), content_type, headers or {})


def error_reply(status: int, message: str, headers: dict[str, str] | None = None) -> Outgoing:
    """An Error record, the spec's own error shape: {"error": status, "message": ...}."""
    return json_reply(status, {"error": status, "message": message}, headers)


def status_of(key: str) -> int:
    """The HTTP status to send for a declared response key ("201", "2XX", "default")."""
    if key.isdigit():
        return int(key)
    if key[:1].isdigit():
        return int(key[0]) * 100
    return 200


def success_key(op: Operation) -> str | None:
    """The first declared 2xx response (exact codes before 2XX), else `default`."""
    keys = sorted(k for k in op.responses if k.startswith("2") and k.isdigit())
    keys += [k for k in op.responses if k.upper() == "2XX"]
    if keys:
        return keys[0]
    return "default" if "default" in op.responses else None


def pick_media(content: dict[str, MediaType]) -> MediaType | None:
    for media in content.values():
        if media.name.split(";")[0].strip().lower() == JSON:
            return media
    for media in content.values():
        if media.name.split(";")[0].strip().lower().endswith("+json"):
            return media
    return next(iter(content.values()), None)


class Answer:
    """One declared response of one operation, precomputed: example, or a generated body plus echo."""

    def __init__(self, op: Operation, key: str) -> None:
        self.status = status_of(key)
        self.key = key
        response = op.responses[key]
        self.media = pick_media(response.content)
        self.examples: dict[str, Any] = dict(self.media.examples) if self.media else {}
        if self.media and self.media.example is not MISSING:
            self.examples.setdefault("example", self.media.example)
        self.base: Any = NO_BODY
        self.echo: dict[str, SchemaCheck] = {}
        self.whole: SchemaCheck | None = None
        self.content_type = self.media.name if self.media else None
        if self.status == 204 or self.status == 304 or self.media is None:
            return
        schema = self.media.schema
        if self.examples:
            # The default answer must keep the contract: the first example that fits its schema.
            check = SchemaCheck(schema, f"{op.label} response {key}", checked=True) if schema is not None else None
            fitting = [v for v in self.examples.values() if check is None or check.is_valid(v)]
            if fitting:
                self.base = fitting[0]
        if self.base is NO_BODY and schema is not None:
            defs = schema.get("$defs", {}) if isinstance(schema, dict) else {}
            self.base = sample(schema, defs)
            flat = flatten(schema, defs)
            if isinstance(self.base, dict) and isinstance(flat, dict):
                for name, sub in (flat.get("properties") or {}).items():
                    sub_schema = {**sub, "$defs": defs} if isinstance(sub, dict) and defs else sub
                    self.echo[name] = SchemaCheck(sub_schema, f"{op.label} response {key} property {name}", checked=True)
                self._fill_status()
                self.whole = SchemaCheck(schema, f"{op.label} response {key}", checked=True)

    def _fill_status(self) -> None:
        """An error record generated for status 400 says `error: 400`, not `error: 0`, when it may."""
        if self.status < 400:
            return
        for name in ("error", "code", "status"):
            check = self.echo.get(name)
            if check is not None and isinstance(self.base.get(name), int) and check.is_valid(self.status):
                self.base[name] = self.status

    def body_for(self, request_body: Any, example: str | None = None) -> Any:
        """The body to send: a named example, or the base value with request fields echoed in."""
        if example is not None and example in self.examples:
            return self.examples[example]
        if not self.echo or not isinstance(request_body, dict):
            return self.base
        body = dict(self.base)
        for name in self.echo:
            if name in request_body:
                body[name] = request_body[name]
        # One check of the whole body (fast path); field by field only when it fails.
        if self.whole is not None and self.whole.is_valid(body):
            return body
        body = dict(self.base)
        for name, check in self.echo.items():
            if name in request_body and check.is_valid(request_body[name]):
                body[name] = request_body[name]
        return body

    def build(self, request_body: Any, example: str | None = None) -> Outgoing:
        body = self.body_for(request_body, example)
        if body is NO_BODY:
            return Outgoing(self.status, NO_BODY, b"", None)
        content_type = self.content_type or JSON
        if isinstance(body, str) and not content_type.endswith("json"):
            return Outgoing(self.status, body, body.encode("utf-8"), content_type)
        return json_reply(self.status, body, content_type=content_type)


class Answers:
    """Lazily built Answer per (operation, declared response key)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[int, str], Answer] = {}
        self._defaults: dict[int, Answer] = {}

    def get(self, op: Operation, key: str) -> Answer:
        slot = (id(op), key)
        answer = self._cache.get(slot)
        if answer is None:
            answer = self._cache[slot] = Answer(op, key)
        return answer

    def default(self, op: Operation, request_body: Any) -> Outgoing:
        answer = self._defaults.get(id(op))
        if answer is None:
            key = success_key(op)
            if key is None:
                return Outgoing(200, NO_BODY, b"", None)
            answer = self._defaults[id(op)] = self.get(op, key)
        return answer.build(request_body)


def _prefer_tokens(prefer: str) -> dict[str, str]:
    tokens = {}
    for part in prefer.replace(";", ",").split(","):
        name, _, value = part.strip().partition("=")
        if name:
            tokens[name.strip().lower()] = value.strip().strip('"')
    return tokens


def preferred(answers: Answers, op: Operation, prefer: str, request_body: Any) -> tuple[Outgoing | None, str | None]:
    """Answer a `Prefer: code=NNN` / `example=NAME` header (as Prism does); (None, None) if it asks nothing.

    Returns (error reply, problem) when it asks for a status or example the operation does not declare.
    """
    tokens = _prefer_tokens(prefer)
    code, example = tokens.get("code"), tokens.get("example")
    if code is None and example is None:
        return None, None
    declared = ", ".join(op.responses) or "none"
    if code is not None and not re.fullmatch(r"[1-5][0-9][0-9]", code):
        problem = f"headers.Prefer: code={code!r} is not an HTTP status (100-599)"
        return error_reply(400, problem), problem
    if code is not None:
        key = code if code in op.responses else None
        if key is None and op.response_for(int(code)) is not None:
            key = op.response_for(int(code)).status
        if key is None:
            problem = f"headers.Prefer: code={code} is not declared for {op.label} (declared: {declared})"
            return error_reply(400, problem), problem
    else:
        key = next((k for k in op.responses if example in answers.get(op, k).examples), None)
        if key is None:
            problem = f"headers.Prefer: example={example!r} is not declared for {op.label}"
            return error_reply(400, problem), problem
    answer = answers.get(op, key)
    if example is not None and example not in answer.examples:
        problem = f"headers.Prefer: example={example!r} is not declared for {op.label} response {key}"
        return error_reply(400, problem), problem
    out = answer.build(request_body, example)
    if code is not None and out.status != int(code):
        out = Outgoing(int(code), out.body, out.payload, out.content_type, out.headers)
    return out, None


# Headers HTTP framing owns: a rule that set them would break the response on the wire.
FRAMING_HEADERS = ("content-length", "transfer-encoding", "connection")


def _compiled(reply: Any, cache: dict[int, Any]) -> tuple[Any, dict[str, Any]]:
    entry = cache.get(id(reply))
    if entry is None or entry[0] is not reply:
        from .templating import compile_template

        headers = {
            name: compile_template(value, text=True)
            for name, value in reply.headers.items()
            if name.lower() not in FRAMING_HEADERS
        }
        entry = cache[id(reply)] = (reply, compile_template(reply.body), headers)
    return entry[1], entry[2]


def rule_reply(reply: Any, request: Any, request_body: Any, cache: dict[int, Any]):
    """The Outgoing a rule's reply describes, templates filled from the request; and its Fault, if any."""
    from .faults import Fault

    if reply.fault is not None and reply.fault != "malformed_body":
        return Outgoing(reply.status, NO_BODY, b"", None), Fault(reply.fault)
    body_template, header_templates = _compiled(reply, cache)
    view = {
        "method": request.method,
        "path": request.path,
        "body": request_body,
        "headers": request.headers,
        "query": request.query_first(),
    }
    # A request value rendered into a header must not smuggle a line break into the response.
    headers = {name: _CONTROL.sub(" ", str(t.render(view))) for name, t in header_templates.items()}
    body = body_template.render(view) if reply.body is not NO_BODY else NO_BODY
    content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
    headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
    fault = Fault(reply.fault) if reply.fault == "malformed_body" else None
    if body is NO_BODY:
        return Outgoing(reply.status, NO_BODY, b"", None, headers), fault
    if isinstance(body, str) and not (content_type or "").endswith("json"):
        # A string body is sent as that text: how a rule serves something that is not JSON.
        return Outgoing(reply.status, body, body.encode("utf-8"), content_type or "text/plain", headers), fault
    return json_reply(reply.status, body, headers, content_type or JSON), fault
