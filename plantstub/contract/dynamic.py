"""Dynamic answers (--dynamic, `Prefer: dynamic=true`): a declared JSON answer made anew for each call with
random values that keep its schema, the request's echo kept, from a seed so that a run can be repeated.

Each session draws from its own `Draws`: a random stream per declared response, seeded by (seed, the session's key,
operation, response). The n-th dynamic answer of one response in a session depends on those and n only: not on the
calls to other operations between, nor on other sessions, nor on what the session answered before its last reset.
The pytest fixture keys each test's draws with its node id (`Draws.restart`), so one test rerun alone with the
run's seed draws its answers again. Every value is checked against the response schema; one that breaks it is
drawn again (TRIES), then the fixed answer is sent, which keeps the contract. A value that would take more than DRAW bytes (arrays of arrays)
stops being drawn at once: that answer is fixed from then on (and the fixed one is bounded by MAX_GENERATED,
contract/samples.py).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from typing import TYPE_CHECKING

from plantstub._json import JSON, NO_BODY, is_json
from plantstub._memo import IdentityMemo
from plantstub.contract.answers import Answer, sends_no_body
from plantstub.contract.compiled import Checks
from plantstub.contract.flatten import defs_of
from plantstub.contract.outgoing import Outgoing
from plantstub.contract.sample_values import NONE, Room, TooLarge
from plantstub.contract.schema import SchemaCheck
from plantstub.contract.streams import streamed

if TYPE_CHECKING:  # the walk that draws random values is imported by the first dynamic answer: most stubs make none
    from plantstub.contract.random_values import Planned

TRIES = 3  # random values drawn for one answer before the fixed one is sent
MISSES = 3  # calls of one answer in a row whose every draw broke the schema: it is sent fixed from then on


def keyed_seed(seed: int, key: str) -> int:
    """The seed of the draws keyed `key` under `seed`: a stable hash of both (the same in every process, unlike
    hash(), which Python salts per process), 64 bits."""
    return int.from_bytes(hashlib.sha256(f"{seed}\n{key}".encode()).digest()[:8], "big")


class Draws:
    """The random streams one session draws its dynamic answers from, one per declared response, and how many
    answers it drew since it (re)started. `key` None: the stub's own streams, from its seed alone (as a stub
    without sessions draws them); else from the seed and the key (a sidecar session's id, a test's node id)."""

    __slots__ = ("_streams", "answers", "key", "misses", "seed")

    def __init__(self, seed: int, key: str | None = None) -> None:
        self.seed = seed
        self.key = key
        self.answers = 0  # dynamic answers made since the start or the last restart
        self._streams: dict[int, random.Random] = {}  # by id(answer): an Answer lives as long as its operation
        self.misses: dict[int, int] = {}  # by id(answer): calls in a row sent fixed

    def restart(self, key: str | None) -> None:
        """Draw from the start again, keyed `key` (None: from the seed alone)."""
        self.key = key
        self.answers = 0
        self._streams.clear()
        self.misses.clear()

    def stream(self, answer: Answer) -> random.Random:
        rng = self._streams.get(id(answer))
        if rng is None:
            # Random() hashes a string seed with SHA-512: stable across processes and machines.
            base = self.seed if self.key is None else keyed_seed(self.seed, self.key)
            rng = self._streams[id(answer)] = random.Random(f"{base} {answer.label} {answer.key}")
        return rng


class Dynamic:
    """The dynamic answers of one stub: its seed, what every session's draws share (the plans of schemas, fixed
    values), and the draws of callers that bring none."""

    def __init__(self, seed: int, checks: Checks) -> None:
        self.seed = seed
        self.checks = checks
        self.draws = Draws(seed)  # for a caller that gives no draws of its own
        self._plans: IdentityMemo[Planned] = IdentityMemo()  # what each schema asks, read once
        self._fixes: IdentityMemo[tuple[object, int]] = IdentityMemo()  # the fixed value of a place, made once
        self.fixed = 0  # answers sent fixed because no random value fitted (for tests and figures)
        self.first: Callable[[], object] | None = None  # called once, before the first dynamic answer is made

    def body(self, answer: Answer, check: SchemaCheck, draws: Draws) -> object:
        """A random value of the answer's schema that passes `check`; else the answer's fixed body."""
        assert answer.media is not None and answer.media.schema is not None
        schema = answer.media.schema
        misses = draws.misses.get(id(answer), 0)
        if misses < MISSES:  # a schema the walker reads wrong (an allOf beside `additionalProperties: false`)
            from plantstub.contract.random_values import DRAW, RandomValues

            values = RandomValues(draws.stream(answer), self.checks, defs_of(schema), self._plans, self._fixes)
            for _ in range(TRIES):
                values.room = Room(DRAW)
                try:
                    value = values.value(schema)
                except TooLarge:  # this schema's values are all that big: its answers are fixed from now on
                    misses = MISSES - 1
                    break
                if value is not NONE and check.is_valid(value):
                    draws.misses[id(answer)] = 0
                    return value
            draws.misses[id(answer)] = misses + 1
        self.fixed += 1
        return answer.base

    def build(self, answer: Answer, check: SchemaCheck | str, request_body: object, valid: bool = False,
              draws: Draws | None = None) -> Outgoing:
        """`answer` with a random body drawn from `draws` (default: the stub's own), the request's fields echoed in
        as the fixed answer does; an answer with no JSON schema, or none that keeps the contract, is the fixed one."""
        if self.first is not None:
            first, self.first = self.first, None
            first()
        draws = self.draws if draws is None else draws
        draws.answers += 1
        if answer.stream and answer.problem is None:  # OpenAPI 3.2: each item of the stream drawn anew
            assert answer.media is not None
            schema = answer.media.item_schema if answer.media.item_schema is not None else answer.media.schema
            from plantstub.contract.random_values import RandomValues

            values = RandomValues(draws.stream(answer), self.checks, defs_of(schema), self._plans, self._fixes)
            payload = streamed(answer.media, lambda: values.value(schema), self.checks)
            if payload is None:
                self.fixed += 1
                return answer.build(request_body)
            return Outgoing(answer.status, payload.decode("utf-8"), payload, answer.content_type, dict(answer.headers))
        if not isinstance(check, SchemaCheck) or not varies(answer):
            return answer.build(request_body, None, valid)
        body = self.body(answer, check, draws)
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
