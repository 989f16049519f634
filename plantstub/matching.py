"""Pure predicates shared by rule selection and verification: path templates and partial JSON equality."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from plantstub._json import MISSING

_PARAMETER = re.compile(r"\{([^}/]+)\}")


@dataclass(frozen=True, slots=True)
class Mismatch:
    """Why a rule (or an expectation) did not match: the field, what was wanted, what came."""

    field: str
    expected: Any
    actual: Any

    def __str__(self) -> str:
        shown = "<absent>" if self.actual is MISSING else repr(self.actual)
        return f"{self.field}: expected {self.expected!r}, got {shown}"


def template_names(template: str) -> list[str]:
    """`/plants/{id}/{part}` -> ["id", "part"]."""
    return _PARAMETER.findall(template)


def literal_length(template: str) -> int:
    """How many characters of `template` are literal: the more, the more specific the template."""
    return len(_PARAMETER.sub("", template))


def template_regex(template: str, *, capture: bool = False) -> re.Pattern[str]:
    """A literal path, or a spec-style template (`/plants/{id}`) where each `{x}` stands for text within one segment.

    A segment with several parameters (`{name}.{ext}`, `{name}{ext}`) matches any text here: whether it fits,
    and how it splits, is split_segment()'s to say (PathTemplate does both), so no path makes the regex
    backtrack once per way to split it. With `capture`, each parameter alone in its segment is a group, and so
    is each segment with several, in the order of template_groups().
    """
    any_text = "([^/]+)" if capture else "[^/]+"
    pattern = ""
    for i, segment in enumerate(template.split("/")):
        pattern += "" if i == 0 else "/"
        found = list(_PARAMETER.finditer(segment))
        if len(found) > 1:
            pattern += any_text
            continue
        last = 0
        for m in found:
            pattern += re.escape(segment[last : m.start()]) + any_text
            last = m.end()
        pattern += re.escape(segment[last:])
    return re.compile(pattern + r"\Z")


def template_groups(template: str) -> list[str]:
    """What each group of template_regex(capture=True) holds: a parameter's name, or a segment template with
    several parameters (`{name}.{ext}`)."""
    groups = []
    for segment in template.split("/"):
        names = _PARAMETER.findall(segment)
        if len(names) > 1:
            groups.append(segment)
        else:
            groups.extend(names)
    return groups


def split_segment(segment: str, text: str, budget: int = 4096) -> Iterator[dict[str, str]]:
    """Each way `text` fills segment template `segment` (`{name}.{ext}`), the first parameters longest first.

    Literals must match where they stand and every value is non-empty; `budget` bounds the places looked at
    (a few milliseconds), so a long segment split many ways cannot hold the stub up.
    """
    tokens: list[tuple[bool, str]] = []  # (is a parameter, name or literal text)
    last = 0
    for m in _PARAMETER.finditer(segment):
        if m.start() > last:
            tokens.append((False, segment[last : m.start()]))
        tokens.append((True, m.group(1)))
        last = m.end()
    if last < len(segment):
        tokens.append((False, segment[last:]))
    left = [budget]
    found: dict[str, str] = {}

    def fill(i: int, pos: int) -> Iterator[dict[str, str]]:
        left[0] -= 1
        if left[0] < 0:
            return
        if i == len(tokens):
            if pos == len(text):
                yield dict(found)
            return
        is_param, word = tokens[i]
        if not is_param:
            if text.startswith(word, pos):
                yield from fill(i + 1, pos + len(word))
            return
        if i + 1 == len(tokens):
            ends: Iterable[int] = [len(text)] if pos < len(text) else []
        elif tokens[i + 1][0]:
            ends = range(len(text) - 1, pos, -1)  # leave the next parameter one character at least
        else:
            ends = _occurrences(text, tokens[i + 1][1], pos + 1)  # where the next literal starts
        for end in ends:
            left[0] -= 1  # every place looked at counts, found or not
            if left[0] < 0:
                return
            found[word] = text[pos:end]
            yield from fill(i + 1, end)

    return fill(0, 0)


def _occurrences(text: str, word: str, start: int) -> Iterator[int]:
    """Where `word` starts in `text` at `start` or after, last first."""
    end = len(text)
    while (at := text.rfind(word, start, end)) >= 0:
        yield at
        end = at + len(word) - 1


class PathTemplate:
    """A path template as a predicate on concrete paths (`match`), segments with several parameters included."""

    def __init__(self, template: str) -> None:
        self.regex = template_regex(template, capture=True)
        self.shared = [(i + 1, group) for i, group in enumerate(template_groups(template)) if "{" in group]

    def match(self, path: str) -> bool:
        m = self.regex.match(path)
        return m is not None and all(next(split_segment(group, m.group(i)), None) is not None for i, group in self.shared)


@lru_cache(maxsize=1024)
def path_pattern(path: str) -> re.Pattern[str] | PathTemplate:
    """A rule's or an expectation's path as something to `match` paths with, cached: its regex when every
    segment has one parameter at most (the common case, as fast as can be), else a PathTemplate."""
    template = PathTemplate(path)
    return template if template.shared else template_regex(path)


def _same(expected: Any, actual: Any) -> bool:
    # JSON equality: 1 == 1.0, but True is not 1.
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    return bool(expected == actual)


def body_mismatches(expected: Any, actual: Any, where: str = "body") -> list[Mismatch]:
    """Partial JSON match: each key given must be in the request and match; lists match item by item."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [Mismatch(where, expected, actual)]
        found = []
        for key, value in expected.items():
            sub = f"{where}.{key}"
            if key not in actual:
                found.append(Mismatch(sub, value, MISSING))
            else:
                found.extend(body_mismatches(value, actual[key], sub))
        return found
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [Mismatch(where, expected, actual)]
        found = []
        for i, (want, got) in enumerate(zip(expected, actual, strict=True)):
            found.extend(body_mismatches(want, got, f"{where}[{i}]"))
        return found
    return [] if _same(expected, actual) else [Mismatch(where, expected, actual)]
