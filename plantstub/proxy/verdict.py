"""The real service's answer against the operation's declared responses: the contract problems, in the one
notation (`response.status`, `response.headers.Content-Type`, `response.body.name`)."""

from __future__ import annotations

from collections.abc import Mapping

from plantstub._json import BodyError, decode_json, essence, is_json, match_media
from plantstub.contract.model import Operation
from plantstub.contract.operations import ServedOperation
from plantstub.contract.params import read_scalar, schema_types
from plantstub.contract.schema import SchemaCheck
from plantstub.contract.streams import StreamCheck, is_stream


def _declared(op: Operation) -> str:
    return ", ".join(op.responses) or "none"


def judge(served: ServedOperation, status: int, content_type: str | None, payload: bytes) -> tuple[list[str], object]:
    """The problems of an answer `status` with `payload` sent as `content_type` to a request of `served`'s
    operation, and its body as a call shows it (parsed JSON, else text, None when empty)."""
    op = served.op
    body: object = None
    problems: list[str] = []
    if payload:
        body = payload.decode("utf-8", "replace")
        if is_json(content_type):
            try:
                body = decode_json(payload)
            except BodyError as exc:  # TooDeep is a BodyError too
                problems.append(f"response.body: {exc}")
    response = op.response_for(status)
    if response is None:
        problems.append(f"response.status: {status} is not declared for {op.label} (declared: {_declared(op)})")
        return problems, body
    named = f"{op.label} response {response.status}"
    if not response.content:
        if payload:
            problems.append(f"response.body: {named} declares no body, got {len(payload)} bytes")
        return problems, body
    if not payload:
        if status not in (204, 304):
            problems.append(f"response.body: empty; {named} declares {', '.join(response.content)}")
        return problems, body
    media = match_media(content_type or "", response.content)
    if media is None:
        shown = essence(content_type) or "none"
        problems.append(f"response.headers.Content-Type: {shown} is not declared for {named} "
                        f"(declared: {', '.join(response.content)})")
        return problems, body
    if problems:  # not JSON where JSON was said: no schema to hold it to
        return problems, body
    declared = response.content[media]
    if is_stream(declared):  # OpenAPI 3.2: each item of the stream
        checks = served.samples
        found, _ = StreamCheck(media, None if declared.item_schema is None else checks.check(declared.item_schema),
                               None if declared.schema is None else checks.check(declared.schema)
                               ).violations(payload, "response.body")
        return [*problems, *map(str, found)], body
    value = body
    text = served.text_body(response.status, declared) if not is_json(content_type) else None
    if text is not None and text.holds_values:  # XML, YAML, a number as text: the value it holds is checked
        try:
            value = text.read(payload)
        except BodyError as exc:
            return [f"response.body: {exc}"], body
    check = served.response_check(response.status, declared)
    if isinstance(check, SchemaCheck):
        problems.extend(map(str, check.errors(value, "response.body")))
    return problems, body


def header_problems(served: ServedOperation, status: int, headers: Mapping[str, str]) -> list[str]:
    """The problems of an answer's headers (`headers`: case-insensitive) against its declared response: a header it
    marks `required` missing, a declared header whose value (read by its schema's types) breaks its schema."""
    response = served.op.response_for(status)
    if response is None:
        return []
    named = f"{served.op.label} response {response.status}"
    problems = [f"response.headers.{name}: missing; {named} marks it required"
                for name in response.required_headers if headers.get(name) is None]
    for name, schema in response.headers.items():
        text = headers.get(name)
        if text is None or not isinstance(schema, dict) or name.lower() == "content-type":
            continue
        try:
            check = served.samples.check(schema)
        except Exception:  # noqa: BLE001 - a header schema jsonschema-rs cannot compile says nothing of the answer
            continue
        value = read_scalar(text, schema_types(schema))
        if not check.is_valid(value):
            problems.extend(f"{v} ({named})" for v in check.errors(value, f"response.headers.{name}"))
    return problems
