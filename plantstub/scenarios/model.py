"""Scenario, Rule, Criteria (the `match:` block) and Reply: the scenario model, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from plantstub._fields import ByFields
from plantstub._json import NO_BODY
from plantstub.pattern import RequestPattern


class Fault(str, Enum):
    """A way to misbehave that a reply can ask for (`fault:`); the scenario schema lists the same values."""

    CONNECTION_RESET = "connection_reset"  # RST: the client sees ECONNRESET
    EMPTY_REPLY = "empty_reply"  # FIN without a byte of response
    MALFORMED_BODY = "malformed_body"  # valid HTTP, broken JSON: the status is still sent

    @property
    def sends_status(self) -> bool:
        """Whether the client gets an HTTP status line (only malformed_body sends one)."""
        return self is Fault.MALFORMED_BODY


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class Reply(ByFields):
    """What a rule sends: status, headers, body (templates filled per request), delay, or a fault."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: object = NO_BODY
    delay_ms: int = 0
    fault: Fault | None = None
    line: int = 0


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class Criteria(RequestPattern):
    """The `match:` block: a RequestPattern (no `status`) with the line it is on. Header names are lower-case."""

    line: int = 0


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class RuleWebhook(ByFields):
    """One entry of a rule's `webhooks:`: a webhook (or callback) of the spec to send after a 2xx answer."""

    name: str
    body: object = NO_BODY  # NO_BODY: the created record, or a body generated from the webhook's schema
    delay_ms: int = 0
    line: int = 0


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class Rule(ByFields):
    """When a request matches, answer with the next reply; the last reply repeats."""

    index: int
    match: Criteria
    replies: tuple[Reply, ...]
    times: int | None = None  # None: no limit
    off_contract: bool = False
    line: int = 0
    webhooks: tuple[RuleWebhook, ...] | None = None  # None: the answer sends what it sends by default
    # The operations (`GET /plants`) it answers, when the contract check narrowed a rule without `method:` to those
    # its replies fit; None: every operation its match allows.
    answers: frozenset[str] | None = None

    @property
    def label(self) -> str:
        return f"rules[{self.index}]"


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class Scenario(ByFields):
    """A named set of rules, loaded from one file."""

    name: str
    description: str
    file: str
    rules: tuple[Rule, ...]
    validate_requests: bool = True
    state: dict[str, list[dict[str, object]]] | None = None  # `state:`, what a --stateful stub holds when it activates
