"""The spec's declared answers: an example, or a generated body with request fields echoed in."""

from __future__ import annotations

from typing import Any

from plantstub._json import JSON, MISSING, NO_BODY, is_json, pick_json
from plantstub.contract.flatten import defs_of, flatten
from plantstub.contract.model import Operation
from plantstub.contract.outgoing import Outgoing, json_reply
from plantstub.contract.samples import sample
from plantstub.contract.schema import SchemaCheck


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


class Answer:
    """One declared response of one operation, precomputed: example, or a generated body plus echo."""

    def __init__(self, op: Operation, key: str) -> None:
        self.status = status_of(key)
        self.key = key
        response = op.responses[key]
        chosen = pick_json(response.content)
        self.media = response.content[chosen] if chosen is not None else None
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
            defs = defs_of(schema)
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
        if isinstance(body, str) and not is_json(content_type):
            return Outgoing(self.status, body, body.encode("utf-8"), content_type)
        return json_reply(self.status, body, content_type=content_type)
