"""Rules declared from code (`stub.when(...)`) or the admin API (`POST /__plantstub/rules`): kept in declaration
order, tried before the active scenario's rules, gone on reset. Each is one rule in the scenario format."""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Any, Protocol, cast

from plantstub.incoming import IncomingRequest
from plantstub.scenarios.model import Rule, Scenario
from plantstub.scenarios.select import RuleIndex, mismatches

MAX_RULES = 10_000  # per stub (per session): a client in a loop cannot grow the stub without end


class TooManyRules(ValueError):
    """MAX_RULES rules are declared already."""


@dataclass(frozen=True, slots=True)
class DeclaredRule:
    """A rule from code: its id (`r1`), the rule, what was declared (scenario format) and where (`file:line`)."""

    id: str
    rule: Rule
    data: dict[str, Any]
    source: str

    def label(self, at: int) -> str:
        """What the journal's `rule` field shows: `r1`, or `r1.replies[1]` for a rule with several replies."""
        return self.id if len(self.rule.replies) == 1 else f"{self.id}.replies[{at}]"


class DeclaredRules:
    """The rules declared on one stub (one Session), with how often each has answered."""

    def __init__(self) -> None:
        self.rules: dict[str, DeclaredRule] = {}  # in declaration order; tried in that order
        self.uses: dict[str, int] = {}
        self.templates: dict[int, Any] = {}  # compiled reply templates (scenarios/replies.py)
        self._next = 0  # ids never come back, so a handle kept past a reset cannot reach a newer rule
        self._index: RuleIndex | None = None
        self._by_index: dict[int, DeclaredRule] = {}

    def add(self, rule: Rule, data: dict[str, Any], source: str) -> DeclaredRule:
        """Keep `rule` after the others; raises TooManyRules past MAX_RULES."""
        if len(self.rules) >= MAX_RULES:
            raise TooManyRules(f"{MAX_RULES:,} rules from code are declared already; remove some (or reset) first")
        self._next += 1
        # Numbered in declaration order, so the RuleIndex below keeps that order among its candidates.
        declared = DeclaredRule(f"r{self._next}", replace(rule, index=self._next), data, source)
        self.rules[declared.id] = declared
        self.uses[declared.id] = 0
        self._index = None
        return declared

    def remove(self, rule_id: str) -> bool:
        """Remove one rule; False when there is no such rule."""
        if self.rules.pop(rule_id, None) is None:
            return False
        del self.uses[rule_id]
        self._index = None
        return True

    def clear(self) -> int:
        """Remove every rule; how many there were."""
        count = len(self.rules)
        self.rules.clear()
        self.uses.clear()
        self.templates.clear()
        self._index = None
        return count

    def select(self, request: IncomingRequest, body: Any) -> tuple[DeclaredRule, int] | None:
        """The first rule that matches and has uses left, with the index of its reply; counts the use."""
        index = self._index
        if index is None:  # built on the first request after a change: a test declaring 500 rules pays once
            rules = tuple(d.rule for d in self.rules.values())
            index = self._index = RuleIndex(Scenario("", "", "", rules))
            self._by_index = {d.rule.index: d for d in self.rules.values()}
        for rule in index.candidates(request, body):
            declared = self._by_index[rule.index]
            before = self.uses[declared.id]
            if rule.times is not None and before >= rule.times:
                continue
            if not mismatches(rule.match, request, body):
                self.uses[declared.id] = before + 1
                return declared, min(before, len(rule.replies) - 1)
        return None

    def listing(self) -> list[dict[str, Any]]:
        """The rules as `GET /__plantstub/rules` and `stub.rules` show them."""
        return [{"id": d.id, "source": d.source, "uses": self.uses[d.id], "rule": copy.deepcopy(d.data)}
                for d in self.rules.values()]


# -- declaring from Python ------------------------------------------------------------------------
def caller_location() -> tuple[str, int]:
    """The file and line of the first caller outside plantstub (the test that declared the rule)."""
    frame = sys._getframe(1)
    while frame.f_back is not None:
        name = frame.f_globals.get("__name__", "")
        if name != "plantstub" and not name.startswith("plantstub."):
            break
        frame = frame.f_back
    path = Path(frame.f_code.co_filename)
    try:
        shown = str(path.relative_to(Path.cwd()))
    except ValueError:
        shown = str(path)
    return shown, frame.f_lineno


class RuleOwner(Protocol):
    """What a RuleBuilder declares its rule on: the in-process Stub, or one that drives a stub over HTTP."""

    def declare(self, rule: dict[str, Any], file: str, line: int) -> str: ...
    @property
    def rules(self) -> list[dict[str, Any]]: ...
    def remove_rule(self, rule_id: str) -> bool: ...


@dataclass(frozen=True)
class RuleHandle:
    """A declared rule: its `id`, how often it has answered (`uses`), and `remove()`."""

    id: str
    owner: RuleOwner = field(repr=False, compare=False)

    @property
    def uses(self) -> int:
        """How many calls this rule has answered (since it was declared; 0 once removed)."""
        return next((r["uses"] for r in self.owner.rules if r["id"] == self.id), 0)

    def remove(self) -> bool:
        """Remove this rule now; False when it is gone already (removed, or a reset)."""
        return self.owner.remove_rule(self.id)


def _given(**fields: Any) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not None}


class RuleBuilder:
    """`stub.when(...)`: what a request must look like; `.reply()`, `.replies()` or `.fault()` declares the rule."""

    __slots__ = ("_match", "_owner", "_rule")

    def __init__(self, owner: RuleOwner, match: dict[str, Any], times: int | None, off_contract: bool) -> None:
        self._owner = owner
        self._match = match
        self._rule: dict[str, Any] = {"match": match}
        if times is not None:
            self._rule["times"] = times
        if off_contract:
            self._rule["off_contract"] = True

    def _declare(self, answer: dict[str, Any]) -> RuleHandle:
        __tracebackhide__ = True
        file, line = caller_location()
        rule = copy.deepcopy({**self._rule, **answer})  # later edits of the caller's dicts change nothing here
        return RuleHandle(self._owner.declare(rule, file, line), self._owner)

    def reply(self, status: int = 200, body: Any = None, headers: dict[str, str] | None = None,
              delay_ms: int = 0) -> RuleHandle:
        """Answer with `status`, `body` (JSON; templates as in scenario files), `headers`, after `delay_ms`.

        :raises ScenarioError: the rule breaks the contract or the scenario format, at the caller's file:line.
        """
        __tracebackhide__ = True
        return self._declare({"reply": _given(status=status, headers=headers, body=body, delay_ms=delay_ms or None)})

    def replies(self, replies: list[dict[str, Any]]) -> RuleHandle:
        """Successive answers, each a reply in the scenario format (`{"status": 400, "body": ...}`); the last repeats."""
        __tracebackhide__ = True
        return self._declare({"replies": replies})

    def fault(self, kind: str | Enum) -> RuleHandle:
        """Misbehave instead of answering: `connection_reset`, `empty_reply` or `malformed_body`."""
        __tracebackhide__ = True
        return self._declare({"reply": {"fault": kind.value if isinstance(kind, Enum) else kind}})


class DeclaresRules:
    """`when(...)` and `declare(...)`, the same on the in-process Stub and on one driven over the admin API: each
    gives `_add_rule(rule, file, line)` (the rule as given: it copies what it keeps), `rules` and `remove_rule`."""

    def when(
        self,
        method: str | None = None,
        path: str | None = None,
        headers: dict[str, Any] | None = None,
        query: dict[str, Any] | None = None,
        body: Any = None,
        times: int | None = None,
        *,
        off_contract: bool = False,
    ) -> RuleBuilder:
        """A rule from code: ``stub.when(path="/plants", body={"name": "Cactus"}).reply(400, {...})``.

        Every criterion is optional, as in a scenario's `match:` (matchers such as ``{"$regex": "^Bearer "}``
        included). Then ``.reply(status, body=None, headers=None, delay_ms=0)``, ``.replies([...])`` or
        ``.fault(kind)`` checks the rule against the contract at once (a ScenarioError at the caller's line)
        and returns a RuleHandle (``id``, ``uses``, ``remove()``). Rules from code are tried before the active
        scenario's, in the order declared; ``reset()`` removes them (the fixture resets for each test).

        :param times: how many calls the rule answers; then it falls through.
        :param off_contract: the replies deliberately break the spec: not checked.
        """
        given = _given(method=method, path=path, headers=headers, query=query, body=body)
        return RuleBuilder(cast(RuleOwner, self), given, times, off_contract)

    def declare(self, rule: dict[str, Any], file: str | None = None, line: int | None = None) -> str:
        """Declare one rule in the scenario format (``{"match": ..., "reply": ...}``); returns its id.

        :raises ScenarioError: every problem, at `file:line` (default: the caller's), as a scenario file's rule
            gets them.
        """
        __tracebackhide__ = True
        if file is None:
            file, line = caller_location()
        return self._add_rule(rule, file, line or None)

    def _add_rule(self, rule: dict[str, Any], file: str, line: int | None) -> str:
        raise NotImplementedError

