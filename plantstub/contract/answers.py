"""The spec's declared answers: an example, or a generated body with request fields echoed in."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from plantstub._json import JSON, MISSING, NO_BODY, BodyError, concrete, is_json, pick_json
from plantstub.contract.compiled import Checks
from plantstub.contract.echo import echo_keeps
from plantstub.contract.flatten import defs_of, flatten, marked, public
from plantstub.contract.media import TextBody
from plantstub.contract.model import MediaType, Operation
from plantstub.contract.outgoing import Outgoing, error_reply, json_reply
from plantstub.contract.samples import generate
from plantstub.contract.schema import SchemaCheck
from plantstub.contract.streams import is_stream, stream_answer

UNANSWERABLE = 501  # the status of an answer the spec makes impossible (the Error record says why)
_CLASSES = "2d345"  # which declared response answers a request with no scenario: 2xx, default, 3xx, 4xx, 5xx


def status_of(key: str) -> int:
    """The HTTP status to send for a declared response key ("201", "2XX", "default")."""
    if key.isdigit():
        return int(key)
    if key[:1].isdigit():
        return int(key[0]) * 100
    return 200


def answer_key(op: Operation) -> str | None:
    """The declared response that answers a request with no scenario: the lowest 2xx, else `default`, else the
    lowest 3xx, 4xx, 5xx (an exact code before its `nXX` range), else a 1xx; None when none is declared."""
    for kind in (*_CLASSES, "1"):
        if kind == "d":
            if "default" in op.responses:
                return "default"
            continue
        keys = sorted(k for k in op.responses if k.startswith(kind) and k.isdigit())
        keys += [k for k in op.responses if k.upper() == f"{kind}XX"]
        if keys:
            return keys[0]
    return None


def sends_no_body(status: int) -> bool:
    """Statuses whose answers have no body in HTTP: 1xx, 204, 205, 304."""
    return status < 200 or status in (204, 205, 304)


class Answer:
    """One declared response of one operation, precomputed: example, or a generated body plus echo.

    `problem` says why no body keeps the contract (a schema no value satisfies, a 1xx status): the answer is
    then a 501 Error record saying so, never a body that breaks the schema.
    """

    def __init__(self, op: Operation, key: str, check: Callable[[MediaType], SchemaCheck | None],
                 samples: Checks | None = None) -> None:
        self.status = status_of(key)
        self.key = key
        response = op.responses[key]
        chosen = pick_json(response.content)
        self.media = response.content[chosen] if chosen is not None else None
        self.examples: dict[str, object] = dict(self.media.examples) if self.media else {}
        if self.media and self.media.example is not MISSING:
            self.examples.setdefault("example", self.media.example)
        # The body answered, shared (never changed in place): a JSON value, a text written, or NO_BODY; a dict
        # whenever `echo` names fields. Any: the request path copies it as that dict with no check.
        self.base: Any = NO_BODY
        self.echo: tuple[str, ...] = ()  # response properties a request's fields may fill
        self.hidden: dict[str, tuple[object, dict[str, object]]] = {}  # of those, the ones with writeOnly members
        self.whole: SchemaCheck | None = None
        self.keeps = False  # an echo of a request that passed its schema never breaks `whole` (contract/echo.py)
        self.problem: str | None = None
        self.stream = False  # OpenAPI 3.2: a sequential media type whose items `itemSchema` holds
        self.label = op.label
        self.content_type = concrete(self.media.name) if self.media else None  # never a range such as */*
        self.headers = required_headers(response.headers, response.required_headers, samples)
        self.writer: TextBody | None = None  # how a body that is not JSON is written (XML, YAML, a number as text)
        if self.status < 200:
            self.problem = f"its response {key} is informational (1xx), which cannot end an exchange"
            return
        if self.media is not None and is_stream(self.media):
            self.stream = True  # OpenAPI 3.2: a short stream of items (contract/streams.py)
            if not sends_no_body(self.status):
                self.base, self.problem = stream_answer(self.media, self.examples, samples)
            return
        if self.content_type is not None and not is_json(self.content_type) and not sends_no_body(self.status):
            assert self.media is not None
            self.writer = TextBody(self.content_type, self.media.schema)
            if not self.writer.holds_values or any(isinstance(v, str) for v in self.examples.values()):
                self.base = self._text(check, samples)  # a text example is the body as written
                return
        if sends_no_body(self.status) or self.media is None or self.media.schema is None:
            if self.media is not None and not sends_no_body(self.status):
                if self.examples:
                    self.base = self.written(next(iter(self.examples.values())))
                elif self.writer is None:
                    self.base = {}  # JSON with neither schema nor example: any value keeps it, and `{}` is one
            return
        schema = self.media.schema
        whole = check(self.media)
        defs = defs_of(schema)
        if self.examples and (samples if samples is not None else Checks()).marks_inside(schema, defs, "writeOnly"):
            # A declared example is an answer too: its `writeOnly` members (a password) are never sent.
            self.examples = {name: public(value, schema, defs) for name, value in self.examples.items()}
        if self.examples:
            # The default answer must keep the contract: the first example that fits its schema.
            fitting = [v for v in self.examples.values() if whole is None or whole.is_valid(v)]
            if fitting:
                self.base = self.written(fitting[0], whole)
                return
        made = samples.generated(schema, generate) if samples is not None else generate(schema)
        self.base = made.value  # shared by the answers of one schema: never changed in place
        if made.problem is not None:
            found = "no value satisfies" if made.certain else "plantstub finds no value that satisfies"
            self.problem = (f"the schema of its response {key} ({self.media.name}) {made.problem}" if made.large else
                            f"{found} the schema of its response {key} ({self.media.name}): {made.problem}")
            return
        if self.writer is not None:  # no request field is echoed into a body that is not JSON
            self.base = self.written(self.base, whole)
            return
        flat = samples.flatten(schema, defs)[0] if samples is not None else flatten(schema, defs)
        if isinstance(self.base, dict) and isinstance(flat, dict) and whole is not None:
            props: dict[str, object] = flat["properties"] if isinstance(flat.get("properties"), dict) else {}
            checks = samples if samples is not None else Checks()
            if not checks.marks_inside(schema, defs, "writeOnly"):  # one look (kept per schema) for most answers
                self.echo = tuple(props)
            else:
                # A `writeOnly` property (a password) goes in requests only: never echoed into an answer.
                self.echo = tuple(name for name, sub in props.items() if not marked(sub, "writeOnly", defs))
                # Echoed values whose schema has `writeOnly` members inside: those members are taken out first.
                self.hidden = {name: (props[name], defs) for name in self.echo
                               if checks.marks_inside(props[name], defs, "writeOnly")}
            self.whole = whole
            self._fill_status()
            self.keeps = not self.hidden and echo_keeps(op, schema, self.echo)

    def _text(self, check: Callable[[MediaType], SchemaCheck | None], samples: Checks | None) -> str:
        """A body in a media type that is not JSON (CSV, XML, text): its first text example, else a generated string
        when its schema is one, else empty; never JSON text under another type (an XML schema describes the
        document, which plantstub does not write)."""
        assert self.media is not None
        text = next((value for value in self.examples.values() if isinstance(value, str)), None)
        if text is not None or self.media.schema is None:
            return text or ""
        whole = check(self.media)
        made = samples.generated(self.media.schema, generate) if samples is not None else generate(self.media.schema)
        value = made.value
        if made.problem is None and isinstance(value, str) and (whole is None or whole.is_valid(value)):
            return value
        return ""

    def written(self, value: object, whole: SchemaCheck | None = None) -> object:
        """`value` as this answer's media type writes it (the value itself for JSON); the written body must read back
        as a value `whole` takes, else the answer has a `problem` (the media type cannot hold it)."""
        if self.writer is None or isinstance(value, str):
            return value
        text = self.writer.write(value)
        if text is None:
            return ""
        if whole is not None:
            try:
                found = [str(v) for v in whole.errors(self.writer.read(text.encode("utf-8")), "body")]
            except BodyError as exc:
                found = [f"body: {exc}"]
            if found:
                self.problem = (f"its response {self.key} ({self.content_type}) cannot hold the value plantstub makes"
                                f" for its schema: read back, {found[0]}")
        return text

    def reply(self, body: object, headers: dict[str, str]) -> Outgoing:
        """`body` (a value, or a text already written) sent in this answer's media type."""
        content_type = self.content_type or JSON
        if self.writer is not None and not isinstance(body, str):
            written = self.writer.write(body)
            body = "" if written is None else written
        if isinstance(body, str) and not is_json(content_type):
            return Outgoing(self.status, body, body.encode("utf-8"), content_type, headers)
        return json_reply(self.status, body, headers, content_type=content_type)

    def _fill_status(self) -> None:
        """An error record generated for status 400 says `error: 400`, not `error: 0`, when it may."""
        if self.status < 400 or self.whole is None:
            return
        for name in ("error", "code", "status"):
            if isinstance(self.base.get(name), int) and self.whole.is_valid({**self.base, name: self.status}):
                self.base = {**self.base, name: self.status}

    def body_for(self, request_body: object, example: str | None = None, valid: bool = False) -> object:
        """The body to send: a named example, or the base value with request fields echoed in.

        The echo keeps the contract: all fields at once when the whole body validates (the fast path; not even
        checked when the request is `valid` and the schemas show it `keeps`), else each field that keeps it valid
        (an `allOf` with `additionalProperties: false` may refuse them all).
        """
        if example is not None and example in self.examples:
            return self.examples[example]
        if not self.echo or not isinstance(request_body, dict) or self.whole is None:
            return self.base
        if valid and self.keeps:  # nothing to check, nothing hidden (contract/echo.py)
            body = dict(self.base)
            for name in self.echo:
                if name in request_body:
                    body[name] = request_body[name]
            return body
        return self.echoed(self.base, request_body, valid)

    def echoed(self, base: dict[str, object], request_body: dict[str, object], valid: bool = False) -> dict[str, object]:
        """`base` (a body that fits the schema: this answer's, or a dynamic one) with the request's fields echoed
        in where the schema takes them (see body_for())."""
        assert self.whole is not None  # set whenever `echo` is
        body = dict(base)
        copied = [name for name in self.echo if name in request_body]
        if valid and self.keeps:
            body.update((name, request_body[name]) for name in copied)
            return body
        if not copied:
            return body
        sent = {name: public(request_body[name], *self.hidden[name]) if name in self.hidden else request_body[name]
                for name in copied}
        body.update(sent)
        if self.whole.is_valid(body):
            return body
        body = dict(base)
        for name in copied:
            trial = {**body, name: sent[name]}
            if self.whole.is_valid(trial):
                body = trial
        return body

    def build(self, request_body: object, example: str | None = None, valid: bool = False) -> Outgoing:
        """The answer to send (`valid`: the request passed its schemas, see body_for())."""
        if self.problem is not None and (example is None or example not in self.examples):
            return error_reply(UNANSWERABLE, f"plantstub cannot answer {self.label}: {self.problem}; a scenario rule"
                                             " with `off_contract: true` can answer it")
        body = self.body_for(request_body, example, valid)
        if body is NO_BODY or sends_no_body(self.status):
            return Outgoing(self.status, NO_BODY, b"", None, dict(self.headers))
        if self.writer is not None:
            return self.reply(body, dict(self.headers))
        content_type = self.content_type or JSON  # JSON, every call of the usual answer: no call more than before
        if isinstance(body, str) and not is_json(content_type):
            return Outgoing(self.status, body, body.encode("utf-8"), content_type, dict(self.headers))
        return json_reply(self.status, body, dict(self.headers), content_type=content_type)


def required_headers(schemas: Mapping[str, object], names: tuple[str, ...], samples: Checks | None) -> dict[str, str]:
    """The response headers the spec marks `required`, each a value generated from its schema, written as the
    `simple` style writes it (`1,2`; an object `k,v`); a header no value can be made for is left out."""
    out: dict[str, str] = {}
    for name in names:
        schema = schemas.get(name)
        made = (samples.generated(schema, generate) if samples is not None else generate(schema)) if schema else None
        if made is None or made.problem is not None:
            value: object = "x" if schema in (None, True, {}) else None
        else:
            value = made.value
        text = _simple(value)
        if text is not None:
            out[name] = text
    return out


def _simple(value: object) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        text = str(value)
        return text if text.isprintable() and text.isascii() else None
    if isinstance(value, list):
        parts = [_simple(v) for v in value]
        return None if None in parts else ",".join(p for p in parts if p is not None)
    if isinstance(value, dict):
        parts = [p for k, v in value.items() for p in (str(k), _simple(v))]
        return None if None in parts else ",".join(p for p in parts if p is not None)
    return None
