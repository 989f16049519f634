"""The `$regex` matcher's patterns: refused at load when too large to compile, matched under a timeout (a pattern
that backtracks without end cannot hold the stub up), and under a budget shared by every pattern of one request's
rule selection, one wait or one assertion (many costly patterns cannot hold it up either)."""

from __future__ import annotations

import re
import sys
import time
from contextvars import ContextVar, Token
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import regex

if sys.version_info >= (3, 11):  # the parser behind `re`: how large a `$regex` grows once compiled
    from re import _parser as sre_parse
else:  # pragma: no cover - Python 3.10
    import sre_parse

PATTERN_SECONDS = 0.1  # at most, per `$regex` match
REQUEST_SECONDS = 0.1  # at most, for every `$regex` of one request's rule selection together


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> regex.Pattern[str]:
    import regex  # the `regex` package: matches under a timeout (Python's `re` has none); loaded on first use

    return regex.compile(pattern)


MAX_EXPANDED = 100_000  # what a pattern's counted repeats may expand to: `((a{100}){100}){100}` compiles for seconds
_COUNTED = re.compile(r"\{([0-9]+)(?:,([0-9]*))?\}")


def _expanded(items: Any) -> int:
    """How large a parsed pattern is once its counted repeats are written out (the `regex` package compiles so).

    `items`: sre_parse's (opcode, argument) pairs, each argument shaped as its opcode says (left `Any`: a private
    structure whose typeshed union no opcode narrows)."""
    total = 0
    for op, av in items:
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = av
            total += (max(low, 1) if high == sre_parse.MAXREPEAT else high) * _expanded(sub)
        elif name == "SUBPATTERN":
            total += _expanded(av[-1])
        elif name == "BRANCH":
            total += sum(_expanded(branch) for branch in av[1])
        elif name == "ATOMIC_GROUP":
            total += _expanded(av)
        elif name in ("ASSERT", "ASSERT_NOT"):
            total += _expanded(av[1])
        elif name == "GROUPREF_EXISTS":
            total += _expanded(av[1]) + (_expanded(av[2]) if av[2] else 0)
        else:
            total += 1
        if total > MAX_EXPANDED:
            break
    return total


def _too_large(pattern: str) -> bool:
    """Would compiling `pattern` write out more than MAX_EXPANDED items? Checked before the `regex` package
    compiles it, which has no time limit. Syntax Python's parser does not read (`\\p{L}`) is judged on its
    counted repeats all multiplied, as if nested."""
    try:
        return _expanded(sre_parse.parse(pattern).data) > MAX_EXPANDED
    except (RecursionError, OverflowError):
        return True
    except Exception:  # noqa: BLE001 - not Python's syntax: the coarse bound below
        product = 1
        for low, high in _COUNTED.findall(pattern):
            product *= max(int(high or low), 1)
            if product > MAX_EXPANDED:
                return True
        return False


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` cannot be a `$regex` (None when it can)."""
    if _too_large(pattern):
        return (f"{pattern[:80]!r} is too large once its counted repeats are written out (over {MAX_EXPANDED:,} "
                "items); use fewer or smaller {n} repeats")
    try:
        _compiled(pattern)
    except Exception as exc:  # noqa: BLE001 - regex.error and the odd ValueError / OverflowError: all mean "not one"
        return f"{pattern!r} is not a regular expression ({exc})"
    return None


class RegexBudget:
    """Seconds of `$regex` matching that one piece of work may spend in all: `with RegexBudget(0.1, "request"):`
    around it, and every search() inside (in this thread or task) draws from it. Once spent, a search answers None
    at once; `spent` keeps the first pattern that could not be judged."""

    __slots__ = ("_token", "left", "seconds", "spent", "what")

    def __init__(self, seconds: float, what: str) -> None:
        self.seconds = self.left = seconds
        self.what = what  # "request", "wait": for the messages
        self.spent: str | None = None
        self._token: Token[RegexBudget | None] | None = None

    def __enter__(self) -> RegexBudget:  # one thread at a time; from several at once, use() and release()
        self._token = self.use()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            release(self._token)
            self._token = None

    def use(self) -> Token[RegexBudget | None]:
        """Draw from this budget in this thread (or task) until release(token)."""
        return _BUDGET.set(self)

    def message(self) -> str:
        """What happened, for a call's stub_errors or a refused wait."""
        return (f"$regex {_cut(self.spent or '')!r}: not judged: the {self.what}'s {self.seconds:g} s for matching "
                "patterns was spent; rules and filters that needed it did not match (simplify the pattern)")


_BUDGET: ContextVar[RegexBudget | None] = ContextVar("plantstub_regex_budget", default=None)


def release(token: Token[RegexBudget | None]) -> None:
    """Stop drawing from the budget that use() gave `token` for."""
    _BUDGET.reset(token)


def _cut(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def costly(pattern: str) -> str:
    """Why `pattern` gave no answer (searches() returned None), as a mismatch shows it."""
    budget = _BUDGET.get()
    if budget is not None and budget.left <= 0:
        return f"not judged: the {budget.what}'s {budget.seconds:g} s for matching patterns was spent"
    return f"too costly to match (over {PATTERN_SECONDS:g} s); simplify the pattern"


def searches(pattern: str, text: str) -> bool | None:
    """Does `pattern` match somewhere in `text`? None when it could not tell within PATTERN_SECONDS, or within what
    is left of the RegexBudget in use."""
    budget = _BUDGET.get()
    if budget is None:
        try:
            return _compiled(pattern).search(text, timeout=PATTERN_SECONDS) is not None
        except TimeoutError:
            return None
    if budget.left <= 0:
        budget.spent = budget.spent or pattern
        return None
    started = time.perf_counter()
    try:
        found: bool | None = _compiled(pattern).search(text, timeout=min(PATTERN_SECONDS, budget.left)) is not None
    except TimeoutError:
        found = None
        budget.spent = budget.spent or pattern
    budget.left -= time.perf_counter() - started
    return found
