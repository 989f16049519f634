"""Assertions over recorded calls, with failure text that shows expected, received and the closest call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plantstub._json import MISSING, NO_BODY
from plantstub.errors import CallAssertionError
from plantstub.matching import body_mismatches, path_pattern, value_mismatches
from plantstub.recording.call import Call

NEAR_MISSES = 3


@dataclass(frozen=True, slots=True)
class Expectation:
    """What a call should look like; None (or NO_BODY) means "any"."""

    method: str | None = None
    path: str | None = None
    headers: dict[str, str] | None = None
    query: dict[str, Any] | None = None
    body: Any = NO_BODY
    status: int | None = None

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

    def fields(self, call: Call) -> list[tuple[str, Any, Any, bool]]:
        """(field, expected, actual, ok) for each thing this expectation looks at."""
        rows: list[tuple[str, Any, Any, bool]] = []
        if self.method is not None:
            rows.append(("method", self.method.upper(), call.method, call.method == self.method.upper()))
        if self.path is not None:
            rows.append(("path", self.path, call.path, bool(path_pattern(self.path).match(call.path))))
        lowered = {k.lower(): v for k, v in call.headers.items()}
        for name, value in (self.headers or {}).items():
            actual = lowered.get(name.lower())
            if isinstance(value, dict):  # a matcher: {"$regex": "^Bearer "}
                ok = not value_mismatches(value, MISSING if actual is None else actual, f"headers.{name}")
                rows.append((f"headers.{name}", value, actual, ok))
            else:
                rows.append((f"headers.{name}", str(value), actual, actual == str(value)))
        for name, value in (self.query or {}).items():
            actual = call.query.get(name)
            if isinstance(value, dict):
                first = actual[0] if isinstance(actual, list) else MISSING if actual is None else actual
                rows.append((f"query.{name}", value, actual, not value_mismatches(value, first, f"query.{name}")))
            else:
                rows.append((f"query.{name}", value, actual, actual == value or actual == str(value)))
        if self.body is not NO_BODY:
            misses = body_mismatches(self.body, call.body)
            if misses:
                rows.extend((m.field, m.expected, m.actual, False) for m in misses)
            else:
                rows.append(("body", self.body, "matches", True))
        if self.status is not None:
            rows.append(("status", self.status, call.status, call.status == self.status))
        return rows

    def matches(self, call: Call) -> bool:
        return all(ok for *_, ok in self.fields(call))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def call_line(call: Call) -> str:
    """`#2 POST /plants  400  invalid: body.id: ...` - one recorded call, as failure texts list it."""
    status = call.response.get("status")
    shown = call.response.get("fault") if status is None else status
    line = f"  #{call.seq} {call.method:<6} {call.path}  {shown}"
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
    head = f"{_plural(len(calls), 'call')} recorded" + (f" (last {limit} shown)" if len(calls) > limit else "")
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
            shown = "<absent>" if actual is MISSING else repr(actual)
            if ok:
                lines.append(f"  {field:<{width}}  {shown:<12}  ok")
            else:
                lines.append(f"  {field:<{width}}  {shown:<12}  expected {expected!r}   <<<<<")
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def assert_called(calls: list[Call], expectation: Expectation, times: int | None = None) -> list[Call]:
    """Pass when the calls matching `expectation` number `times` (at least one when None)."""
    __tracebackhide__ = True
    found = [c for c in calls if expectation.matches(c)]
    if (times is None and found) or (times is not None and len(found) == times):
        return found
    wanted = "at least 1 call" if times is None else _plural(times, "call")
    raise CallAssertionError(_failure(f"expected {wanted}", calls, expectation, found, times is None or len(found) < times))


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
    return _failure(f"waited {timeout:g} s for {_plural(n, 'call')}", calls, expectation, found, True)


def assert_all_valid(calls: list[Call], who: str = "the code under test") -> None:
    """Pass when no recorded call broke the contract; else list each one with its reasons."""
    __tracebackhide__ = True
    bad = [c for c in calls if not c.valid]
    if not bad:
        return
    lines = [f"#{c.seq} {c.method} {c.path} -> {c.response.get('status')}: {'; '.join(c.errors)}" for c in bad]
    raise CallAssertionError(
        f"plantstub: {who} sent {_plural(len(bad), 'request')} that {'breaks' if len(bad) == 1 else 'break'} "
        "the contract:\n  " + "\n  ".join(lines)
    )
