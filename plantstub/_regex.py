"""The `$regex` matcher's patterns: refused at load when too large to compile, matched under a timeout (a pattern
that backtracks without end cannot hold the stub up)."""

from __future__ import annotations

import re
import sys
from functools import lru_cache
from typing import Any

if sys.version_info >= (3, 11):  # the parser behind `re`: how large a `$regex` grows once compiled
    from re import _parser as sre_parse
else:  # pragma: no cover - Python 3.10
    import sre_parse

PATTERN_SECONDS = 0.1  # at most, per `$regex` match


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    import regex  # the `regex` package: matches under a timeout (Python's `re` has none); loaded on first use

    return regex.compile(pattern)


MAX_EXPANDED = 100_000  # what a pattern's counted repeats may expand to: `((a{100}){100}){100}` compiles for seconds
_COUNTED = re.compile(r"\{([0-9]+)(?:,([0-9]*))?\}")


def _expanded(items: Any) -> int:
    """How large a parsed pattern is once its counted repeats are written out (the `regex` package compiles so)."""
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


def searches(pattern: str, text: str) -> bool | None:
    """Does `pattern` match somewhere in `text`? None when it could not tell within PATTERN_SECONDS."""
    try:
        return _compiled(pattern).search(text, timeout=PATTERN_SECONDS) is not None
    except TimeoutError:
        return None
