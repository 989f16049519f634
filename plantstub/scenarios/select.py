"""Rule selection: does a rule's `match:` hold for a request, and which rule answers it (with its counters)."""

from __future__ import annotations

import heapq
from collections.abc import Container, Iterable
from operator import attrgetter
from typing import Any

from plantstub._json import inside
from plantstub.incoming import IncomingRequest
from plantstub.matching import Mismatch, path_pattern
from plantstub.scenarios.model import Criteria, Rule, Scenario


def mismatches(criteria: Criteria, request: IncomingRequest, body: Any) -> list[Mismatch]:
    """Every way `request` (with its parsed `body`) fails `criteria`; empty means it matches."""
    return criteria.mismatches(request.method, request.path, request.headers, request.query, body)


class RuleCounters:
    """How often each rule of each scenario has answered; reset by `POST reset` and by switching scenario,
    and per scenario when a reload changes its rules (`forget`)."""

    def __init__(self) -> None:
        self._uses: dict[str, dict[int, int]] = {}  # scenario name -> rule index -> answers given

    def of(self, scenario: Scenario) -> dict[int, int]:
        """The counts of `scenario`'s rules, by rule index (what select_rule() counts in)."""
        uses = self._uses.get(scenario.name)
        if uses is None:
            uses = self._uses[scenario.name] = {}
        return uses

    def clear(self) -> None:
        self._uses.clear()

    def forget(self, names: set[str]) -> None:
        """Start the scenarios `names` afresh; the others keep their counts."""
        for name in names:
            self._uses.pop(name, None)


def _without_lines(rule: Rule) -> tuple:
    return (rule.match.method, rule.match.path, rule.match.headers, rule.match.query, rule.match.body,
            tuple((r.status, r.headers, r.body, r.delay_ms, r.fault) for r in rule.replies), rule.times, rule.off_contract,
            rule.answers)


def same_rules(old: Scenario, new: Scenario) -> bool:
    """Whether a reloaded scenario answers as before: the same rules in the same order (lines may move),
    so its counters still mean what they counted."""
    return (old.validate_requests == new.validate_requests and len(old.rules) == len(new.rules)
            and all(_without_lines(a) == _without_lines(b) for a, b in zip(old.rules, new.rules, strict=True)))


def _key(value: Any) -> Any:
    """A hashable key with JSON equality: 1 and 1.0 share one, True and 1 do not."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", value)
    if isinstance(value, str) or value is None:
        return ("s", value)
    return None  # lists and objects are not indexed


_BY_INDEX = attrgetter("index")


def uses_regex(rule: Rule) -> bool:
    """Whether a rule's `match:` holds a `$regex` matcher anywhere: only then does trying it need a RegexBudget."""
    match = rule.match
    return any(isinstance(item, dict) and "$regex" in item for item in inside([match.headers, match.query, match.body]))


class RuleIndex:
    """Finds candidate rules fast: by method and path, then by the body field most rules pin down.

    A 200-rule scenario costs a dictionary lookup or two per request, not 200 comparisons; the
    candidates are still checked in order with mismatches(), so the first matching rule wins.
    Building a route's entry is linear in the rules: a rule that pins the field goes into one bucket,
    and a request's candidates are its bucket merged in rule order with the rules that pin nothing.
    """

    MAX_ROUTES = 1024

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        counts: dict[str, int] = {}
        for rule in scenario.rules:
            if isinstance(rule.match.body, dict):
                for name, value in rule.match.body.items():
                    if _key(value) is not None:
                        counts[name] = counts.get(name, 0) + 1
        self.field = max(counts, key=lambda name: counts[name]) if counts else None
        self._routes: dict[tuple[str, str], tuple[dict[Any, list[Rule]], list[Rule]]] = {}
        self.templates: dict[int, Any] = {}  # compiled reply templates; dropped with the scenario set
        self.answerers: dict[tuple[int, int], Any] = {}  # who answered, per (rule, reply): decide()'s, kept alike
        self.regex = any(uses_regex(rule) for rule in scenario.rules)  # whether trying its rules needs a RegexBudget

    def _pinned(self, rule: Rule) -> Any:
        body = rule.match.body
        if self.field is not None and isinstance(body, dict) and self.field in body:
            return _key(body[self.field])
        return None

    def _build(self, method: str, path: str) -> tuple[dict[Any, list[Rule]], list[Rule]]:
        buckets: dict[Any, list[Rule]] = {}
        free: list[Rule] = []
        for rule in self.scenario.rules:
            if (rule.match.method is None or rule.match.method.upper() == method) and (
                rule.match.path is None or path_pattern(rule.match.path).match(path)
            ):
                key = self._pinned(rule)
                if key is None:
                    free.append(rule)
                else:
                    buckets.setdefault(key, []).append(rule)
        return buckets, free

    def candidates(self, request: IncomingRequest, body: Any) -> Iterable[Rule]:
        """The rules that may match, in rule order (a lazy merge: iterating stops at the first match)."""
        slot = (request.method, request.path)
        entry = self._routes.get(slot)
        if entry is None:
            if len(self._routes) >= self.MAX_ROUTES:
                self._routes.clear()
            entry = self._routes[slot] = self._build(*slot)
        buckets, free = entry
        if buckets and isinstance(body, dict) and self.field in body:
            pinned = buckets.get(_key(body[self.field]))
            if pinned:
                return heapq.merge(pinned, free, key=_BY_INDEX) if free else pinned
        return free


def select_rule(
    index: RuleIndex, counters: RuleCounters, request: IncomingRequest, body: Any, operation: str = ""
) -> tuple[Rule, int] | None:
    """The scenario's rule that answers `request`, with the index of its reply (first_answering()); else None."""
    return first_answering(index.candidates(request, body), counters.of(index.scenario), request, body, operation)


def first_answering(rules: Iterable[Rule], uses: dict[int, int], request: IncomingRequest, body: Any,
                    operation: str = "", kept: Container[int] | None = None) -> tuple[Rule, int] | None:
    """The first of `rules` that matches and has uses left, with the index of the reply it gives; else None. The one
    rule selection: of a scenario's rules and of the rules from code.

    `uses`: how often each rule (by index) has answered; the use is counted there, so the caller must send that reply.
    `operation` is the request's (`POST /plants`): a rule narrowed to others (`Rule.answers`) does not answer it.
    `kept`: the indexes of the rules still there (a rule removed but still in an index is passed over); None: all.
    """
    method, path, query, headers = request[:4]  # read once, not once per rule tried
    for rule in rules:
        if kept is not None and rule.index not in kept:
            continue
        if rule.times is not None and uses.get(rule.index, 0) >= rule.times:
            continue
        if rule.answers is not None and operation not in rule.answers:
            continue
        if not rule.match.mismatches(method, path, headers, query, body):
            before = uses.get(rule.index, 0)
            uses[rule.index] = before + 1
            return rule, min(before, len(rule.replies) - 1)
    return None
