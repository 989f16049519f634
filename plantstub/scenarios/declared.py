"""Rules declared from code (`stub.when(...)`) or the admin API (`POST /__plantstub/rules`): kept in declaration
order, tried before the active scenario's rules, gone on reset. Each is one rule in the scenario format."""

from __future__ import annotations

import copy
import sys
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, replace
from enum import Enum
from itertools import chain
from pathlib import Path
from typing import Any, Protocol, cast

from plantstub._budget import Budget
from plantstub._fields import ByFields
from plantstub.incoming import IncomingRequest
from plantstub.scenarios.model import Rule, Scenario
from plantstub.scenarios.rule_bytes import rule_bytes
from plantstub.scenarios.select import RuleIndex, first_answering, uses_regex

MAX_RULES = 10_000  # per stub (per session): a client in a loop cannot grow the stub without end
RULES = "rules"  # the kind of bytes rules from code take from the session's memory Budget


class TooManyRules(ValueError):
    """MAX_RULES rules are declared already."""


class NoRoom(ValueError):
    """The memory budget cannot hold one more rule: the message says which budget, what it holds and what to do."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class DeclaredRule(ByFields):
    """A rule from code: its id (`r1`), the rule, what was declared (scenario format), where (`file:line`), and the
    bytes it holds (taken from the session's memory budget)."""

    id: str
    rule: Rule
    data: dict[str, Any]
    source: str
    size: int = 0

    def label(self, at: int) -> str:
        """What the journal's `rule` field shows: `r1`, or `r1.replies[1]` for a rule with several replies."""
        return self.id if len(self.rule.replies) == 1 else f"{self.id}.replies[{at}]"


class _Level:
    """Rules declared one after the other, indexed together; `dead`: how many of them were removed since (skipped,
    and still held until the level is rebuilt: their bytes stay taken until then)."""

    __slots__ = ("dead", "dead_bytes", "index", "rules")

    def __init__(self, rules: tuple[Rule, ...]) -> None:
        self.rules = rules
        self.index = RuleIndex(Scenario("", "", "", rules))
        self.dead = self.dead_bytes = 0


def no_room(memory: Budget, size: int) -> str:
    """Why `memory` refused `size` bytes of rules, and what to do."""
    return memory.refusal(size, "this rule", "remove rules (DELETE /__plantstub/rules/ID, handle.remove()) or reset "
                                             "first, or start the stub with a larger --max-bytes")


class DeclaredRules:
    """The rules declared on one stub (one Session), with how often each has answered; their bytes are taken from
    `memory` (the session's Budget) and given back when they go.

    The index is kept in levels, as a binary counter: a declaration adds a level of one rule, merged with the
    levels before it while they are no larger, so a rule is re-indexed about log2(n) times over n declarations
    (a declaration costs O(log n) amortised, not the O(n) of rebuilding one index over all). A request looks in
    each level in turn (oldest first: declaration order); after as many requests as there are rules with no
    declaration, the levels are merged into one.
    """

    def __init__(self, memory: Budget) -> None:
        self.memory = memory
        # Bytes taken from `memory`: the rules kept, and the removed ones a level still holds.
        self.holding = memory.holding(RULES)
        self.rules: dict[str, DeclaredRule] = {}  # in declaration order; tried in that order
        self.uses: dict[int, int] = {}  # rule index -> answers given
        self.templates: dict[int, Any] = {}  # compiled reply templates (scenarios/replies.py)
        self._next = 0  # ids never come back, so a handle kept past a reset cannot reach a newer rule
        self._levels: list[_Level] = []
        self._by_index: dict[int, DeclaredRule] = {}
        self._quiet = 0  # requests since the levels last changed
        self.regex = 0  # rules kept whose `match:` holds a `$regex` (a request then tries them under a RegexBudget)

    def check_count(self) -> None:
        """Raise TooManyRules when MAX_RULES rules are declared already."""
        if len(self.rules) >= MAX_RULES:
            raise TooManyRules(f"{MAX_RULES:,} rules from code are declared already; remove some (or reset) first")

    def add(self, rule: Rule, data: dict[str, Any], source: str, size: int | None = None) -> DeclaredRule:
        """Keep `rule` after the others (`size`: its rule_bytes(), when measured already); raises TooManyRules past
        MAX_RULES, NoRoom when the memory budget cannot hold it (nothing is kept then)."""
        self.check_count()
        size = rule_bytes(rule, data, source) if size is None else size
        if not self.holding.take(size) and not self._room_once_merged(size):
            self.holding.lost(size)
            raise NoRoom(no_room(self.memory, size))
        self._next += 1
        # Numbered in declaration order, so each level's RuleIndex keeps that order among its candidates.
        declared = DeclaredRule(f"r{self._next}", replace(rule, index=self._next), data, source, size)
        self.rules[declared.id] = declared
        self._by_index[declared.rule.index] = declared
        self._push(declared.rule)
        self.regex += uses_regex(rule)
        return declared

    def remove(self, rule_id: str) -> bool:
        """Remove one rule; False when there is no such rule."""
        declared = self.rules.pop(rule_id, None)
        if declared is None:
            return False
        self.uses.pop(declared.rule.index, None)
        del self._by_index[declared.rule.index]
        self.regex -= uses_regex(declared.rule)
        for part in (*declared.rule.replies, *(declared.rule.webhooks or ())):
            self.templates.pop(id(part), None)
        at = bisect_right([level.rules[0].index for level in self._levels], declared.rule.index) - 1
        level = self._levels[at]
        level.dead += 1
        level.dead_bytes += declared.size
        if 2 * level.dead >= len(level.rules):  # half of it removed: rebuilt, which lets the removed rules go
            self._levels[at:at + 1] = self._rebuilt([level])
        return True

    def clear(self) -> int:
        """Remove every rule; how many there were."""
        count = len(self.rules)
        self.rules.clear()
        self.uses.clear()
        self.templates.clear()
        self._by_index.clear()
        self._levels.clear()
        self.regex = 0
        self.holding.release()
        return count

    def select(self, request: IncomingRequest, body: Any, operation: str = "") -> tuple[DeclaredRule, int] | None:
        """The first rule that matches and has uses left, with the index of its reply; counts the use. A rule narrowed
        to other operations than `operation` (the request's, `POST /plants`) does not answer."""
        levels = self._levels
        if len(levels) > 1:
            self._quiet += 1
            if self._quiet > len(self._by_index):  # no declaration for a while: one index again (O(n) once)
                self._merge_all()
                levels = self._levels
        candidates = (levels[0].index.candidates(request, body) if len(levels) == 1 else
                      chain.from_iterable(level.index.candidates(request, body) for level in levels))
        # A removed rule a level still holds is passed over: only those in _by_index are kept.
        chosen = first_answering(candidates, self.uses, request, body, operation, self._by_index)
        return None if chosen is None else (self._by_index[chosen[0].index], chosen[1])

    def uses_of(self, rule_id: str) -> int:
        """How often rule `rule_id` has answered (0: no such rule)."""
        declared = self.rules.get(rule_id)
        return 0 if declared is None else self.uses.get(declared.rule.index, 0)

    def listing(self) -> list[dict[str, Any]]:
        """The rules as `stub.rules` shows them (copies: the caller may change them)."""
        return [{**entry, "rule": copy.deepcopy(entry["rule"])} for entry in self.entries()]

    def entries(self) -> Iterator[dict[str, Any]]:
        """The rules as `GET /__plantstub/rules` writes them, not copied: which rules and their uses are taken now
        (references only: cheap on the event loop), each entry is made as it is read (off the loop)."""
        taken = [(d, self.uses.get(d.rule.index, 0)) for d in self.rules.values()]
        return ({"id": d.id, "source": d.source, "uses": uses, "rule": d.data} for d, uses in taken)

    # -- the index's levels --------------------------------------------------------------------------
    def _push(self, rule: Rule) -> None:
        levels = self._levels
        levels.append(_Level((rule,)))
        while len(levels) > 1 and len(levels[-2].rules) <= len(levels[-1].rules):
            levels[-2:] = self._rebuilt(levels[-2:])
        self._quiet = 0

    def _rebuilt(self, levels: list[_Level]) -> list[_Level]:
        """`levels` as one, without their removed rules (whose bytes are given back now); none when all went."""
        freed = sum(level.dead_bytes for level in levels)
        if freed:
            self.holding.give(freed)
        live = tuple(rule for level in levels for rule in level.rules if rule.index in self._by_index)
        return [_Level(live)] if live else []

    def _merge_all(self) -> None:
        self._levels[:] = self._rebuilt(self._levels)
        self._quiet = 0

    def _room_once_merged(self, size: int) -> bool:
        """Whether `size` more bytes fit once the removed rules that levels still hold are let go."""
        if not any(level.dead for level in self._levels):
            return False
        self._merge_all()
        return self.holding.take(size)


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

    def declare(self, rule: dict[str, Any], file: str, line: int) -> RuleHandle: ...
    def _rule_uses(self, rule_id: str) -> int: ...
    def remove_rule(self, rule_id: str | RuleHandle) -> bool: ...


ENTRY_KEYS = ("id", "source", "uses", "rule")  # a rule as GET /__plantstub/rules lists it


class RuleHandle:
    """A declared rule: its `id`, how often it has answered (`uses`, read now), `remove()`; `source` (where it was
    declared) and `rule` (as declared). `str()` is the id, and a handle equals its id; `handle["uses"]` reads as
    the entry of GET /__plantstub/rules does, so code that kept declare()'s id or read `stub.rules` as dicts works."""

    __slots__ = ("_owner", "id", "rule", "source")

    def __init__(self, rule_id: str, owner: RuleOwner, source: str, rule: dict[str, Any]) -> None:
        self.id = rule_id
        self.source = source
        self.rule = rule
        self._owner = owner

    @property
    def uses(self) -> int:
        """How many calls this rule has answered (since it was declared; 0 once removed)."""
        return self._owner._rule_uses(self.id)

    def remove(self) -> bool:
        """Remove this rule now; False when it is gone already (removed, or a reset)."""
        return self._owner.remove_rule(self.id)

    def __getitem__(self, key: str) -> Any:
        if key not in ENTRY_KEYS:
            raise KeyError(key)
        return getattr(self, key)

    def __str__(self) -> str:
        return self.id

    def __repr__(self) -> str:
        return f"RuleHandle(id={self.id!r}, source={self.source!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RuleHandle):
            return self.id == other.id
        return self.id == other if isinstance(other, str) else NotImplemented

    def __hash__(self) -> int:
        return hash(self.id)


def _given(**fields: Any) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not None}


class RuleBuilder:
    """`stub.when(...)`: what a request must look like; `.reply()`, `.replies()` or `.fault()` declares the rule."""

    __slots__ = ("_owner", "_rule")

    def __init__(self, owner: RuleOwner, match: dict[str, Any], times: int | None, off_contract: bool) -> None:
        self._owner = owner
        self._rule: dict[str, Any] = {"match": match}
        if times is not None:
            self._rule["times"] = times
        if off_contract:
            self._rule["off_contract"] = True

    def _declare(self, answer: dict[str, Any]) -> RuleHandle:
        __tracebackhide__ = True
        file, line = caller_location()
        rule = copy.deepcopy({**self._rule, **answer})  # later edits of the caller's dicts change nothing here
        return self._owner.declare(rule, file, line)

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

    def declare(self, rule: dict[str, Any], file: str | None = None, line: int | None = None) -> RuleHandle:
        """Declare one rule in the scenario format (``{"match": ..., "reply": ...}``); returns its RuleHandle, as
        ``when(...).reply(...)`` does (``str(handle)`` is the id).

        :raises ScenarioError: every problem, at `file:line` (default: the caller's), as a scenario file's rule
            gets them.
        """
        __tracebackhide__ = True
        if file is None:
            file, line = caller_location()
        rule_id = self._add_rule(rule, file, line or None)
        return RuleHandle(rule_id, cast(RuleOwner, self), f"{file}:{line}" if line else file, rule)

    def _handles(self, entries: list[dict[str, Any]]) -> list[RuleHandle]:
        """GET rules' entries as handles."""
        owner = cast(RuleOwner, self)
        return [RuleHandle(e["id"], owner, e["source"], e["rule"]) for e in entries]

    def _add_rule(self, rule: dict[str, Any], file: str, line: int | None) -> str:
        raise NotImplementedError

