"""ServedOperation: one operation with everything compiled for serving it, and `Prefer` among its answers.

The one runtime object per operation: its request check (the server builds every one at start), its
default answer (built by `serve`, which warns once about operations the spec leaves without one), its other
declared answers and its response schema checks (built on first use). The other tables keyed by
operation hold what other layers own: coverage counts (recording) and rendered-reply checks (scenarios).
"""

from __future__ import annotations

import logging
import re
from functools import cached_property

from plantstub._json import NO_BODY
from plantstub.config import fresh_seed
from plantstub.contract.answers import UNANSWERABLE, Answer, answer_key
from plantstub.contract.compiled import Checks, places
from plantstub.contract.dynamic import Draws, Dynamic
from plantstub.contract.error_shapes import PROBLEM, ErrorShape, declared_shape, problem_reply
from plantstub.contract.media import TextBody
from plantstub.contract.model import MediaType, Operation, Spec
from plantstub.contract.outgoing import Outgoing, error_reply
from plantstub.contract.requests import RequestCheck
from plantstub.contract.schema import SchemaCheck
from plantstub.errors import SpecError

log = logging.getLogger("plantstub")
LISTED = 20  # operations named in the start-up warning; each answer says its own reason anyway
_UNKNOWN = object()
EAGER = 5_000  # operations whose default answers are made at start; a bigger spec makes each on its first call


class ServedOperation:
    """One operation of the spec and what serving it needs, each part compiled once."""

    varies = False  # whether the default answer is dynamic (VariedOperation)

    def __init__(self, op: Operation, samples: Checks | None = None, dynamic: Dynamic | None = None) -> None:
        self.op = op
        self.samples = samples if samples is not None else Checks()  # shared by the operations of one spec
        self.dynamic = dynamic if dynamic is not None else Dynamic(fresh_seed(), self.samples)  # shared likewise
        self._answers: dict[str, Answer] = {}
        self._response_checks: dict[tuple[str, str], SchemaCheck | str] = {}
        self._texts: dict[tuple[str, str], TextBody] = {}
        self._error_shapes: dict[str, ErrorShape | str | None] = {}
        self._own_shapes: dict[int, ErrorShape | str | None] = {}  # status -> its shape, as _shape_for() found it (own() on every refusal)

    @cached_property
    def check(self) -> RequestCheck:
        """The request check: security, parameters, body."""
        return RequestCheck(self.op, checks=self.samples)

    def answer(self, key: str) -> Answer:
        """The declared response `key` ("200", "4XX", "default") as an answer."""
        answer = self._answers.get(key)
        if answer is None:
            answer = self._answers[key] = Answer(self.op, key, lambda media: self._checked(key, media), self.samples)
        return answer

    @cached_property
    def default_answer(self) -> Answer | None:
        """The answer with no scenario (answers.answer_key: 2xx, default, 3xx, 4xx, 5xx); None if none is declared."""
        key = answer_key(self.op)
        return None if key is None else self.answer(key)

    def default(self, request_body: object, valid: bool = False, draws: Draws | None = None) -> Outgoing:
        """What a request gets when nothing else decides: the default answer (an operation that declares no
        responses has 204, contract/load.py); an empty 200 only for an Operation built by hand without any.
        `valid`: the request passed its schemas (the echo into the answer may then go unchecked, Answer.keeps);
        `draws`: the session's, which a dynamic answer is drawn from (VariedOperation)."""
        answer = self.default_answer
        return Outgoing(200, NO_BODY, b"", None) if answer is None else answer.build(request_body, None, valid)

    def varied(self, key: str, request_body: object, valid: bool = False, draws: Draws | None = None) -> Outgoing:
        """The declared response `key` as a dynamic answer drawn from `draws` (contract/dynamic.py)."""
        answer = self.answer(key)
        check = self.response_check(key, answer.media) if answer.media is not None else ""
        return self.dynamic.build(answer, check, request_body, valid, draws)

    def own(self, out: Outgoing) -> Outgoing:
        """Our own 4xx (an Error record of ours) in the error shape this operation declares for its status, if any,
        with the response headers that status requires (headed())."""
        if out.ours is None or not 400 <= out.status < 500:
            return self.headed(out) if self.heads else out
        shape = self._own_shapes.get(out.status, _UNKNOWN)
        if shape is _UNKNOWN:
            shape = self._own_shapes[out.status] = self._shape_for(out.status)
        message = out.ours
        if shape is not None and shape == PROBLEM:
            out = problem_reply(out.status, message, out.headers)
        elif isinstance(shape, ErrorShape) and not shape.is_record(out.status):
            out = shape.reply(out.status, message, out.headers)
        return self.headed(out) if self.heads else out

    @cached_property
    def heads(self) -> bool:
        """Whether some response of the operation marks headers `required` (most do not: nothing to add)."""
        return any(r.required_headers for r in self.op.responses.values())

    def headed(self, out: Outgoing) -> Outgoing:
        """`out` with the response headers its status's declared response marks `required` (a value `out` sets kept):
        for answers made apart from the declared ones (a scenario rule's, the store's, our refusals)."""
        response = self.op.response_for(out.status)
        if response is None or not response.required_headers:
            return out
        key = next(k for k, r in self.op.responses.items() if r is response)
        wanted = self.answer(key).headers  # generated once per declared response
        have = {name.lower() for name in out.headers}
        missing = {name: value for name, value in wanted.items() if name.lower() not in have}
        if not missing:
            return out
        return Outgoing(out.status, out.body, out.payload, out.content_type, {**missing, **out.headers}, out.ours)

    def _shape_for(self, status: int) -> ErrorShape | str | None:
        """The error shape the response declared for `status` gives (None: none, or our Error record as it is)."""
        response = self.op.response_for(status)
        if response is None:
            return None
        key = next(k for k, r in self.op.responses.items() if r is response)
        if key not in self._error_shapes:
            answer = self.answer(key)
            check = self.response_check(key, answer.media) if answer.media is not None else ""
            self._error_shapes[key] = declared_shape(answer, check, self.samples)
        return self._error_shapes[key]

    def _checked(self, key: str, media: MediaType) -> SchemaCheck | None:
        check = self.response_check(key, media)
        return check if isinstance(check, SchemaCheck) else None

    def text_body(self, status: str, media: MediaType) -> TextBody:
        """How a declared response body that is not JSON is read (contract/media.py), made once."""
        key = (status, media.name)
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = TextBody(media.name, media.schema)
        return text

    def response_check(self, status: str, media: MediaType) -> SchemaCheck | str:
        """The compiled schema of a declared response body, or why it cannot be checked."""
        key = (status, media.name)
        check = self._response_checks.get(key)
        if check is None:
            try:
                schema = True if media.schema is None else media.schema  # no schema: any body
                # Compiled once for the spec: the default answer's generated body was checked with it already.
                check = self.samples.check(schema) if isinstance(schema, dict) else SchemaCheck(schema, "", checked=True)
            except SpecError as exc:
                check = str(exc)
            self._response_checks[key] = check
        return check


class VariedOperation(ServedOperation):
    """--dynamic: the default answer made anew for each call, with random values that keep its schema. Chosen at
    start (serve()), so a stub without --dynamic never asks per call whether it is on."""

    varies = True

    def default(self, request_body: object, valid: bool = False, draws: Draws | None = None) -> Outgoing:
        answer = self.default_answer
        return (super().default(request_body, valid) if answer is None
                else self.varied(answer.key, request_body, valid, draws))


def serve(spec: Spec, dynamic: bool = False, seed: int | None = None) -> dict[Operation, ServedOperation]:
    """A ServedOperation for each operation of `spec` (Operation hashes by identity), default answers built
    (for a spec of more than EAGER operations, on first use); with `dynamic`, VariedOperations. `seed`: that of
    dynamic answers (--dynamic or `Prefer: dynamic=true`), a fresh one when None.

    Operations whose default answer cannot keep the contract are logged once, with the reason each gets.
    """
    samples = Checks(places(spec), annotated=spec.annotated, prebuilt=spec.property_map)
    samples.shared.build()  # now, not in the first request that needs it (a second for a 20 MB spec)
    varied = Dynamic(fresh_seed() if seed is None else seed, samples)
    kind = VariedOperation if dynamic else ServedOperation
    served = {op: kind(op, samples, varied) for op in spec.operations}
    if len(served) > EAGER:  # a second or more of a big spec's start: each answer (~60 µs) comes on first use
        log.warning("plantstub: %s has %d operations: their default answers are made on first use, so one that cannot"
                    " keep the contract is not listed here; it answers %d with the reason", spec.source, len(served),
                    UNANSWERABLE)
        return served
    answers = [s.default_answer for s in served.values()]
    problems = [f"{a.label}: {a.problem}" for a in answers if a is not None and a.problem is not None]
    if problems:
        listed = [f"  {p}" for p in problems[:LISTED]]
        if len(problems) > LISTED:
            listed.append(f"  ... and {len(problems) - LISTED} more")
        log.warning("plantstub: %d operation(s) of %s have no answer that keeps the contract; with no scenario rule"
                    " they answer %d with the reason:\n%s", len(problems), spec.source, UNANSWERABLE, "\n".join(listed))
    return served


def _prefer_tokens(prefer: str) -> dict[str, str]:
    tokens = {}
    for part in prefer.replace(";", ",").split(","):
        name, _, value = part.strip().partition("=")
        if name:
            tokens[name.strip().lower()] = value.strip().strip('"')
    return tokens


def preferred(served: ServedOperation, prefer: str, request_body: object,
              draws: Draws | None = None) -> tuple[Outgoing | None, str | None]:
    """Answer a `Prefer: code=NNN` / `example=NAME` / `dynamic=true|false` header (as Prism does); (None, None) if
    it asks nothing. A dynamic answer is drawn from `draws` (the session's).

    Returns (error reply, problem) when it asks for a status or example the operation does not declare.
    """
    op = served.op
    tokens = _prefer_tokens(prefer)
    code, example, dynamic = tokens.get("code"), tokens.get("example"), tokens.get("dynamic")
    if code is None and example is None and dynamic is None:
        return None, None
    if dynamic is not None and dynamic.lower() not in ("true", "false"):
        problem = f"headers.Prefer: dynamic={dynamic!r} is neither true nor false"
        return error_reply(400, problem), problem
    varies = served.varies if dynamic is None else dynamic.lower() == "true"
    if code is None and example is None:  # dynamic=... alone: the default answer, dynamic or not
        key = answer_key(op)
        if key is None:
            return ServedOperation.default(served, request_body), None
        return (served.varied(key, request_body, draws=draws) if varies else served.answer(key).build(request_body)), None
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
    out = (served.varied(key, request_body, draws=draws) if varies and example is None
           else answer.build(request_body, example))
    if code is not None and out.status != int(code) and answer.problem is None:  # a 501 says why, as it is
        out = Outgoing(int(code), out.body, out.payload, out.content_type, out.headers)
    return out, None
