"""ServedOperation: one operation with everything compiled for serving it, and `Prefer` among its answers.

The one runtime object per operation: its request check (the server builds every one at start), its
declared answers and its response schema checks (built on first use). The other tables keyed by
operation hold what other layers own: coverage counts (recording) and rendered-reply checks (scenarios).
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import Any

from plantstub._json import NO_BODY
from plantstub.contract.answers import Answer, success_key
from plantstub.contract.model import MediaType, Operation, Spec
from plantstub.contract.outgoing import Outgoing, error_reply
from plantstub.contract.requests import RequestCheck
from plantstub.contract.schema import SchemaCheck
from plantstub.errors import SpecError


class ServedOperation:
    """One operation of the spec and what serving it needs, each part compiled once."""

    def __init__(self, op: Operation) -> None:
        self.op = op
        self._answers: dict[str, Answer] = {}
        self._response_checks: dict[tuple[str, str], SchemaCheck | str] = {}

    @cached_property
    def check(self) -> RequestCheck:
        """The request check: security, parameters, body."""
        return RequestCheck(self.op)

    def answer(self, key: str) -> Answer:
        """The declared response `key` ("200", "4XX", "default") as an answer."""
        answer = self._answers.get(key)
        if answer is None:
            answer = self._answers[key] = Answer(self.op, key)
        return answer

    @cached_property
    def default_answer(self) -> Answer | None:
        """The answer with no scenario: the first declared 2xx, else `default`; None when neither exists."""
        key = success_key(self.op)
        return None if key is None else self.answer(key)

    def default(self, request_body: Any) -> Outgoing:
        """What a request gets when nothing else decides: the default answer, or an empty 200."""
        answer = self.default_answer
        return Outgoing(200, NO_BODY, b"", None) if answer is None else answer.build(request_body)

    def response_check(self, status: str, media: MediaType) -> SchemaCheck | str:
        """The compiled schema of a declared response body, or why it cannot be checked."""
        key = (status, media.name)
        check = self._response_checks.get(key)
        if check is None:
            try:
                schema = True if media.schema is None else media.schema  # no schema: any body
                check = SchemaCheck(schema, f"{self.op.label} response {status} {media.name}", checked=True)
            except SpecError as exc:
                check = str(exc)
            self._response_checks[key] = check
        return check


def serve(spec: Spec) -> dict[Operation, ServedOperation]:
    """A ServedOperation for each operation of `spec` (Operation hashes by identity)."""
    return {op: ServedOperation(op) for op in spec.operations}


def _prefer_tokens(prefer: str) -> dict[str, str]:
    tokens = {}
    for part in prefer.replace(";", ",").split(","):
        name, _, value = part.strip().partition("=")
        if name:
            tokens[name.strip().lower()] = value.strip().strip('"')
    return tokens


def preferred(served: ServedOperation, prefer: str, request_body: Any) -> tuple[Outgoing | None, str | None]:
    """Answer a `Prefer: code=NNN` / `example=NAME` header (as Prism does); (None, None) if it asks nothing.

    Returns (error reply, problem) when it asks for a status or example the operation does not declare.
    """
    op = served.op
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
        covering = op.response_for(int(code))
        if key is None and covering is not None:
            key = covering.status
        if key is None:
            problem = f"headers.Prefer: code={code} is not declared for {op.label} (declared: {declared})"
            return error_reply(400, problem), problem
    else:
        key = next((k for k in op.responses if example in served.answer(k).examples), None)
        if key is None:
            problem = f"headers.Prefer: example={example!r} is not declared for {op.label}"
            return error_reply(400, problem), problem
    answer = served.answer(key)
    if example is not None and example not in answer.examples:
        problem = f"headers.Prefer: example={example!r} is not declared for {op.label} response {key}"
        return error_reply(400, problem), problem
    out = answer.build(request_body, example)
    if code is not None and out.status != int(code):
        out = Outgoing(int(code), out.body, out.payload, out.content_type, out.headers)
    return out, None
