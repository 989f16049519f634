"""Pure predicates shared by rule selection and verification: path templates, partial JSON equality and the
`$` matchers (`{"$regex": "^Bearer "}`, `$contains`, `$present`, `$absent`, `$eq`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import NamedTuple

from plantstub._json import MISSING, inside
from plantstub._regex import costly, pattern_problem, searches
from plantstub._words import did_you_mean

_PARAMETER = re.compile(r"\{([^}/]+)\}")


class Mismatch(NamedTuple):
    """Why a rule (or an expectation) did not match: the field, what was wanted, what came.

    A NamedTuple rather than a frozen dataclass: as immutable, and built 3x faster, once per criterion that
    fails for each rule a request is tried against.
    """

    field: str
    expected: object
    actual: object

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


def _same(expected: object, actual: object) -> bool:
    # JSON equality: 1 == 1.0, but True is not 1.
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    return bool(expected == actual)


def body_mismatches(expected: object, actual: object, where: str = "body", matchers: bool = True) -> list[Mismatch]:
    """Partial JSON match: each key given must be in the request and match; lists match item by item.

    A mapping whose keys start with `$` is a matcher (matcher_mismatches()), at any depth; `matchers=False`
    (a rule that has none: uses_matchers()) skips looking for them.
    """
    if isinstance(expected, dict):
        if matchers and expected and is_matcher(expected):
            return matcher_mismatches(expected, actual, where)
        if not isinstance(actual, dict):
            return [Mismatch(where, expected, actual)]
        found = []
        for key, value in expected.items():
            sub = f"{where}.{key}"
            if key not in actual:
                if matchers and type(value) is dict and value and is_matcher(value):  # `$absent: true` holds
                    found.extend(matcher_mismatches(value, MISSING, sub))
                else:
                    found.append(Mismatch(sub, value, MISSING))
            else:
                found.extend(body_mismatches(value, actual[key], sub, matchers))
        return found
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [Mismatch(where, expected, actual)]
        found = []
        for i, (want, got) in enumerate(zip(expected, actual, strict=True)):
            found.extend(body_mismatches(want, got, f"{where}[{i}]", matchers))
        return found
    return [] if _same(expected, actual) else [Mismatch(where, expected, actual)]


# -- matchers -----------------------------------------------------------------------------------
# In a `match:` (and in expectations) a mapping whose keys start with `$` is a matcher, never a literal: every
# key must be one of these, and all must hold. `{"$eq": X}` matches X literally (the escape for a `$` key).
MATCHERS = ("$regex", "$contains", "$present", "$absent", "$eq")


def uses_matchers(value: object) -> bool:
    """Does `value` (a `match:` body) hold a matcher anywhere?"""
    return any(isinstance(item, dict) and item and is_matcher(item) for item in inside(value))


def is_matcher(value: dict) -> bool:
    """Is this mapping a matcher? (checked on its first key: a mapping that mixes `$` keys and others is refused
    at load, see matcher_problems())."""
    first = next(iter(value))
    return isinstance(first, str) and first.startswith("$")


def as_text(value: object) -> str | None:
    """The one coercion: a value as the text a request carries, as JSON writes it (`True` -> "true", `None` ->
    "null", `2` -> "2", `2.5` -> "2.5"); None for a list or an object, which are no text. Expected header and
    query values are compared so, and `$regex` / `$contains` read a body's numbers and booleans so."""
    if isinstance(value, str):
        return str.__str__(value)  # an Enum or other subclass of str: its text, not its repr
    if value is None or isinstance(value, (bool, int, float)):
        return json.dumps(value)  # float("inf"): Infinity, as Python's json writes it
    return None


def expected_text(value: object) -> object:
    """An expected header or query value, ready to compare with what a request carries: text (as_text()), a
    matcher as written, or for a list (a repeated name) a list of texts."""
    if type(value) is str or isinstance(value, dict):
        return value
    if isinstance(value, (list, tuple)):
        return [expected_text(item) for item in value]
    text = as_text(value)
    return str(value) if text is None else text  # a date, a UUID...: its str(), as the user would write it


def _holds(op: str, wanted: object, actual: object) -> bool | str:
    """Does one operator hold? True, False, or a reason it could not be judged (shown as what was got)."""
    if op == "$present":
        return (actual is not MISSING) == bool(wanted)
    if op == "$absent":
        return (actual is MISSING) == bool(wanted)
    if actual is MISSING:
        return False
    if op == "$eq":
        return json_equal(wanted, actual)
    if op == "$regex":
        text = as_text(actual)
        if text is None or not isinstance(wanted, str):
            return False
        found = searches(wanted, text)
        return costly(wanted) if found is None else found
    if op == "$contains":
        if isinstance(wanted, str) and not isinstance(actual, (list, dict)):
            text = as_text(actual)
            return text is not None and wanted in text
        return isinstance(actual, list) and any(not body_mismatches(wanted, item) for item in actual)
    return f"{op!r} is not a matcher (known: {', '.join(MATCHERS)})"


def json_equal(a: object, b: object) -> bool:
    """Deep JSON equality: as ==, but true and 1 differ."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(json_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return _same(a, b)


def matcher_mismatches(matcher: dict, actual: object, where: str) -> list[Mismatch]:
    """Every operator of `matcher` that does not hold for `actual` (MISSING: the field is absent)."""
    found = []
    for op, wanted in matcher.items():
        held = _holds(op, wanted, actual)
        if held is not True:
            found.append(Mismatch(where, {op: wanted}, actual if held is False else held))
    return found


def value_mismatches(expected: object, actual: object, where: str) -> list[Mismatch]:
    """A header or query value: equal as text (expected_text(): `1` is "1", `True` is "true"), or a matcher.

    `actual` is text, or MISSING; or, when `expected` is a list, the list of a repeated name's values."""
    wanted = expected_text(expected)
    if actual == wanted:
        return []
    if isinstance(wanted, dict) and wanted and is_matcher(wanted):
        return matcher_mismatches(wanted, actual, where)
    return [Mismatch(where, wanted, actual)]


def matcher_problems(value: object, where: str) -> list[tuple[str, str]]:
    """The mistakes in the matchers anywhere inside `value` (a `match:` body, header or query value), each as
    (location path, message); checked when a rule loads, so a typo is not a rule that never matches."""
    found: list[tuple[str, str]] = []
    if isinstance(value, list):
        for i, item in enumerate(value):
            found.extend(matcher_problems(item, f"{where}[{i}]"))
        return found
    if not isinstance(value, dict) or not value:
        return found
    dollar = [k for k in value if isinstance(k, str) and k.startswith("$")]
    if not dollar:
        for key, item in value.items():
            found.extend(matcher_problems(item, f"{where}.{key}"))
        return found
    if len(dollar) < len(value):
        others = ", ".join(repr(k) for k in value if k not in dollar)
        return [(where, f"mixes matchers ({', '.join(map(repr, dollar))}) with keys ({others}); keys starting with $ "
                        'are matchers: to match such a key literally, write {"$eq": {...}} around the object')]
    for op, wanted in value.items():
        at = f"{where}.{op}"
        if op not in MATCHERS:
            hint = did_you_mean(op, MATCHERS) or f"known: {', '.join(MATCHERS)}"
            found.append((at, f"unknown matcher {op!r} ({hint}); to match a key starting with $ literally, "
                              'write {"$eq": {...}} around the object'))
        elif op in ("$present", "$absent") and not isinstance(wanted, bool):
            found.append((at, f"{wanted!r} is not true or false"))
        elif op == "$regex":
            problem = "is not a string" if not isinstance(wanted, str) else pattern_problem(wanted)
            if problem is not None:
                found.append((at, problem if problem != "is not a string" else f"{wanted!r} {problem}"))
        elif op == "$contains":
            found.extend(matcher_problems(wanted, at))
    return found
