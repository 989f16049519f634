"""How messages word a count, a list and a likely typo: `plural()` ("1 call", "2 calls"), `listed()` and
`did_you_mean()`."""

from __future__ import annotations

from collections.abc import Iterable


def plural(n: int, word: str, many: str = "") -> str:
    """`1 call`, `2 calls`; `many`: the plural when it is not `word` + s (`entries`). The number grouped by thousands."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


MOST_LISTED = 10  # choices a message names: a spec of 18,000 paths must not make a message of 18,000


def listed(choices: Iterable[object], most: int = MOST_LISTED) -> str:
    """`a, b, c`: the choices a message offers, the first `most` of them and `and 17,990 more` after."""
    names = [str(choice) for choice in choices]
    shown = ", ".join(names[:most])
    return shown if len(names) <= most else f"{shown} and {len(names) - most:,} more"


def did_you_mean(word: str, choices: Iterable[object], prefix: str = "") -> str:
    """`did you mean 'name'?` for the choice `word` most likely misspells (difflib's closest, above its 0.6 cut-off),
    quoted with `prefix` before it (`request.`); "" when none is close."""
    import difflib  # imported on the first typo: the pytest plugin's start never pays for it

    from plantstub._json import shown

    close = difflib.get_close_matches(word, [str(choice) for choice in choices], n=1)
    return f"did you mean {shown(prefix + close[0])}?" if close else ""
