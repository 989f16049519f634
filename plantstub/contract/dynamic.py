"""Dynamic answers (--dynamic, `Prefer: dynamic=true`): a declared JSON answer made anew for each call with
random values that keep its schema, the request's echo kept, from a seed so that a run can be repeated.

Each declared response draws from a random stream of its own, seeded by (seed, operation, response): the n-th
dynamic answer of one response depends on the seed and n only, not on the calls to other operations between.
Every value is checked against the response schema; one that breaks it is drawn again (TRIES), then the fixed
answer is sent, which keeps the contract.
"""

from __future__ import annotations

import random
from typing import Any

from plantstub._json import JSON, NO_BODY, is_json
from plantstub._memo import IdentityMemo
from plantstub.contract.answers import Answer, sends_no_body
from plantstub.contract.compiled import Checks
from plantstub.contract.flatten import defs_of
from plantstub.contract.outgoing import Outgoing
from plantstub.contract.random_values import NONE, Planned, RandomValues
from plantstub.contract.schema import SchemaCheck

TRIES = 3  # random values drawn for one answer before the fixed one is sent
MISSES = 3  # calls of one answer in a row whose every draw broke the schema: it is sent fixed from then on


class Dynamic:
    """The dynamic answers of one stub: its seed and a random stream per declared response."""

    def __init__(self, seed: int, checks: Checks) -> None:
        self.seed = seed
        self.checks = checks
        self._streams: dict[int, random.Random] = {}  # by id(answer): an Answer lives as long as its operation
        self._misses: dict[int, int] = {}  # by id(answer): calls in a row sent fixed
        self._plans: IdentityMemo[Planned] = IdentityMemo()  # what each schema asks, read once
        self._fixes: IdentityMemo[Any] = IdentityMemo()  # the fixed value of a place, made once
        self.fixed = 0  # answers sent fixed because no random value fitted (for tests and figures)

    def stream(self, answer: Answer) -> random.Random:
        rng = self._streams.get(id(answer))
        if rng is None:
            rng = self._streams[id(answer)] = random.Random(f"{self.seed} {answer.label} {answer.key}")
        return rng

    def body(self, answer: Answer, check: SchemaCheck) -> Any:
        """A random value of the answer's schema that passes `check`; else the answer's fixed body."""
        assert answer.media is not None and answer.media.schema is not None
        schema = answer.media.schema
        misses = self._misses.get(id(answer), 0)
        if misses < MISSES:  # a schema the walker reads wrong (an allOf beside `additionalProperties: false`)
            values = RandomValues(self.stream(answer), self.checks, defs_of(schema), self._plans, self._fixes)
            for _ in range(TRIES):
                value = values.value(schema)
                if value is not NONE and check.is_valid(value):
                    self._misses[id(answer)] = 0
                    return value
            self._misses[id(answer)] = misses + 1
        self.fixed += 1
        return answer.base

    def build(self, answer: Answer, check: SchemaCheck | str, request_body: Any, valid: bool = False) -> Outgoing:
        """`answer` with a random body (the request's fields echoed in, as the fixed answer does); an answer
        with no JSON schema, or none that keeps the contract, is the fixed one."""
        if not isinstance(check, SchemaCheck) or not varies(answer):
            return answer.build(request_body, None, valid)
        body = self.body(answer, check)
        if answer.echo and isinstance(body, dict) and isinstance(request_body, dict) and answer.whole is not None:
            body = answer.echoed(body, request_body, valid)
        return answer.reply(body, dict(answer.headers))


def varies(answer: Answer) -> bool:
    """Whether an answer has a body generated or taken from a schema's example, in JSON or a media type that holds
    its schema's values (XML, YAML: contract/media.py): the answers --dynamic varies."""
    media = answer.media
    return (answer.problem is None and media is not None and media.schema is not None and answer.base is not NO_BODY
            and not sends_no_body(answer.status)
            and (is_json(answer.content_type or JSON) or (answer.writer is not None and answer.writer.holds_values
                                                           and not any(isinstance(v, str) for v in answer.examples.values()))))
