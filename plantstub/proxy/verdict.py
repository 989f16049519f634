"""The real service's answer against the operation's declared responses: the contract problems, in the one
notation (`response.status`, `response.headers.Content-Type`, `response.body.name`)."""

from __future__ import annotations

from typing import Any

from plantstub._json import BodyError, decode_json, essence, is_json, match_media
from plantstub.contract.model import Operation
from plantstub.contract.operations import ServedOperation
from plantstub.contract.schema import SchemaCheck


def _declared(op: Operation) -> str:
    return ", ".join(op.responses) or "none"


def judge(served: ServedOperation, status: int, content_type: str | None, payload: bytes) -> tuple[list[str], Any]:
    """The problems of an answer `status` with `payload` sent as `content_type` to a request of `served`'s
    operation, and its body as a call shows it (parsed JSON, else text, None when empty)."""
    op = served.op
    body: Any = None
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
