"""A call's verdict, in one place: who broke the contract on it, and how. The live page, the report and strict mode
all ask `contract_problems()` (through `Record.problems` / `Call.problems`), so they never disagree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, TypedDict, TypeGuard

Verdict = Literal["ok", "invalid", "stub", "upstream"]
# In the order of blame: the request ("invalid"), the stub's own reply or a crash ("stub"), the real service's answer
# ("upstream", --proxy); "ok": none of them broke it.
VERDICTS: tuple[Verdict, ...] = ("ok", "invalid", "stub", "upstream")


class Upstream(TypedDict):
    """A proxied call's `upstream` (--proxy): the real service's answer judged against the contract. `status` None:
    it never answered (unreachable, timed out: a 502 of ours), and `errors` say why."""

    url: str  # shown as the stub shows URLs: no password
    status: int | None
    valid: bool
    errors: list[str]


def service_broke(upstream: Upstream | None) -> TypeGuard[Upstream]:
    """Whether the real service answered (--proxy) and its answer broke the contract. One that never answered
    (unreachable, timed out: a 502 of ours) broke nothing: its `upstream.errors` say why it did not answer."""
    return upstream is not None and upstream["status"] is not None and not upstream["valid"]


def contract_problems(errors: Sequence[str], stub_errors: Sequence[str],
                      upstream: Upstream | None) -> dict[Verdict, list[str]]:
    """Who broke the contract on one call, each with its problems, in the order of blame; empty when nobody did.
    `errors`, `stub_errors` and `upstream` are the call's own fields."""
    found: dict[Verdict, list[str]] = {}
    if errors:
        found["invalid"] = list(errors)
    if stub_errors:
        found["stub"] = list(stub_errors)
    if service_broke(upstream):
        found["upstream"] = list(upstream["errors"])
    return found


def verdict_of(problems: Mapping[Verdict, Sequence[str]]) -> Verdict:
    """The call's one verdict: the first to blame in `contract_problems()`'s order, else `ok`."""
    return next(iter(problems), "ok")
