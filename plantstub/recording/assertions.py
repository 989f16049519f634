"""Assertions over recorded calls, with failure text that shows expected, received and the closest call."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from multidict import CIMultiDict, CIMultiDictProxy

from plantstub._fields import ByFields
from plantstub._json import MISSING, NO_BODY, shown
from plantstub._regex import RegexBudget
from plantstub._words import plural
from plantstub.errors import CallAssertionError
from plantstub.pattern import Query, RequestPattern, Row, pattern_problems
from plantstub.recording.call import Call

NEAR_MISSES = 3
ASSERT_REGEX_SECONDS = 0.5  # what every `$regex` of one assertion may take in all, over every call it judges


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class Expectation(ByFields):
    """What a call should look like; None (or NO_BODY) means "any". Built from a user's criteria by checked()."""

    method: str | None = None
    path: str | None = None
    headers: Mapping[str, object] | None = None
    query: Mapping[str, object] | None = None
    body: object = NO_BODY
    status: int | None = None
    pattern: RequestPattern = dataclasses.field(init=False, repr=False, compare=False)  # what the fields above mean, judged

    def describe(self) -> str:
        text = " ".join(x for x in (self.method and self.method.upper(), self.path) if x) or "(any)"
        parts = []
        if self.headers:
            parts.append(f"headers {self.headers!r}")
        if self.query:
            parts.append(f"query {self.query!r}")
        if self.body is not NO_BODY:
            parts.append(f"body {self.body!r}")
        if self.status is not None:
            parts.append(f"status {self.status}")
        return text + (" with " + ", ".join(parts) if parts else "")

    def __post_init__(self) -> None:
        pattern = RequestPattern.of(self.method, self.path, self.headers, self.query, self.body, self.status)
        object.__setattr__(self, "pattern", pattern)

    def fields(self, call: Call) -> list[Row]:
        """(field, expected, actual, ok) for each thing this expectation looks at."""
        return self.pattern.rows(*_parts(call))

    def matches(self, call: Call) -> bool:
        return not self.pattern.mismatches(*_parts(call))


def checked(where: str = "", **criteria: Any) -> Expectation:
    """The Expectation of criteria given from code or JSON; ValueError naming each one that cannot be a criterion
    (`assert_called(): headers.X.$regx: unknown matcher ...`), so a typo never passes as "no such call"."""
    problems = pattern_problems(**criteria)
    if problems:
        raise ValueError("; ".join(f"{where}{at}: {message}" for at, message in problems))
    return Expectation(**criteria)


def _parts(call: Call) -> tuple[str, str, Mapping[str, str], Query, object, int | None]:
    """What a pattern reads of a call; headers case-insensitive even when a Call was built with a plain dict."""
    headers = call.headers
    if not isinstance(headers, (CIMultiDict, CIMultiDictProxy)):
        headers = CIMultiDict(headers)
    return call.method, call.path, headers, call.query, call.body, call.status


def call_line(call: Call) -> str:
    """`#2 POST /plants  400  invalid: body.id: ...` - one recorded call, as failure texts list it."""
    line = f"  #{call.seq} {call.method:<6} {call.path}  {call.outcome}"
    if call.errors:
        line += "  invalid: " + "; ".join(call.errors)
    elif call.rule and not call.rule.startswith("rules["):  # a rule from code (`r1`): no scenario holds it
        line += f"  rule {call.rule}"
    elif call.rule:
        line += f"  rule {call.scenario}/{call.rule}"
    return line


def render_calls(calls: list[Call], limit: int = 20) -> str:
    if not calls:
        return "No calls recorded."
    shown = calls[-limit:]
    head = f"{plural(len(calls), 'call')} recorded" + (f" (last {limit} shown)" if len(calls) > limit else "")
    return head + ":\n" + "\n".join(call_line(c) for c in shown)


def render_near_misses(expectation: Expectation, calls: list[Call]) -> str:
    """The closest calls (fewest differing fields, then newest), side by side with what was expected."""
    scored = []
    for call in calls:
        rows = expectation.fields(call)
        scored.append((sum(not ok for *_, ok in rows), -call.seq, call, rows))
    scored.sort(key=lambda item: item[:2])
    blocks: list[str] = []
    for _, _, call, rows in scored[:NEAR_MISSES]:
        width = max((len(f) for f, *_ in rows), default=5)
        lines = [f"Closest: #{call.seq} {call.method} {call.path}" if not blocks else f"Next: #{call.seq} {call.method} {call.path}"]
        for field, expected, actual, ok in rows:
            # quoted in 80 characters at most: a call's body may be 1 MB, or nested 900 levels deep
            got = "<absent>" if actual is MISSING else shown(actual)
            if ok:
                lines.append(f"  {field:<{width}}  {got:<12}  ok")
            else:
                lines.append(f"  {field:<{width}}  {got:<12}  expected {shown(expected)}   <<<<<")
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def assert_called(calls: list[Call], expectation: Expectation, times: int | None = None) -> list[Call]:
    """Pass when the calls matching `expectation` number `times` (at least one when None)."""
    __tracebackhide__ = True
    with RegexBudget(ASSERT_REGEX_SECONDS, "assertion") as budget:  # every `$regex` over every call, together
        found = [c for c in calls if expectation.matches(c)]
        if budget.spent is not None:  # some calls could not be judged: neither a pass nor a count to trust
            raise CallAssertionError(f"plantstub: {budget.message()}")
        if (times is None and found) or (times is not None and len(found) == times):
            return found
        wanted = "at least 1 call" if times is None else plural(times, "call")
        raise CallAssertionError(_failure(f"expected {wanted}", calls, expectation, found,
                                          times is None or len(found) < times))


def _failure(head: str, calls: list[Call], expectation: Expectation, found: list[Call], too_few: bool) -> str:
    text = f"plantstub: {head} {expectation.describe()}; got {len(found)}.\n{render_calls(calls)}"
    others = [c for c in calls if c not in found] if too_few else []
    if others:
        text += "\n" + render_near_misses(expectation, others)
    elif found and not too_few:
        text += "\nMatching: " + ", ".join(f"#{c.seq}" for c in found)
    return text


def wait_failure(calls: list[Call], expectation: Expectation, found: list[Call], n: int, timeout: float) -> str:
    """The text when `n` calls like `expectation` did not arrive within `timeout` seconds."""
    return _failure(f"waited {timeout:g} s for {plural(n, 'call')}", calls, expectation, found, True)


def assert_all_valid(calls: list[Call], who: str = "the code under test") -> None:
    """Pass when no recorded call broke the contract; else list each one with its reasons."""
    __tracebackhide__ = True
    bad = [c for c in calls if not c.valid]
    if not bad:
        return
    lines = [f"#{c.seq} {c.method} {c.path} -> {c.outcome}: {'; '.join(c.errors)}" for c in bad]
    raise CallAssertionError(
        f"plantstub: {who} sent {plural(len(bad), 'request')} that {'breaks' if len(bad) == 1 else 'break'} "
        "the contract:\n  " + "\n  ".join(lines)
    )
