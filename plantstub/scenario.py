"""Scenario, Rule, Criteria (the `match:` block) and Reply: the scenario model, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .incoming import NO_BODY

FAULTS = ("connection_reset", "empty_reply", "malformed_body")


@dataclass(frozen=True, slots=True)
class Reply:
    """What a rule sends: status, headers, body (templates filled per request), delay, or a fault."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = NO_BODY
    delay_ms: int = 0
    fault: str | None = None  # one of FAULTS
    line: int = 0


@dataclass(frozen=True, slots=True)
class Criteria:
    """The `match:` block: every key optional, all given must hold. Header names are lower-case."""

    method: str | None = None
    path: str | None = None  # a literal path or a spec-style template (/plants/{id})
    headers: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)
    body: Any = NO_BODY  # partial: each key given must equal the request's
    line: int = 0


@dataclass(frozen=True, slots=True)
class Rule:
    """When a request matches, answer with the next reply; the last reply repeats."""

    index: int
    match: Criteria
    replies: tuple[Reply, ...]
    times: int | None = None  # None: no limit
    off_contract: bool = False
    line: int = 0

    @property
    def label(self) -> str:
        return f"rules[{self.index}]"


@dataclass(frozen=True, slots=True)
class Scenario:
    """A named set of rules, loaded from one file."""

    name: str
    description: str
    file: str
    rules: tuple[Rule, ...]
    validate_requests: bool = True
