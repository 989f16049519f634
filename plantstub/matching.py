"""Pure predicates shared by rule selection and verification: path templates and partial JSON equality."""

from __future__ import annotations

import re
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
    """A literal path, or a spec-style template (`/plants/{id}`) where each `{x}` is one segment.

    With `capture`, each segment is a group, in the order of template_names().
    """
    segment = "([^/]+)" if capture else "[^/]+"
    pattern, last = "", 0
    for m in _PARAMETER.finditer(template):
        pattern += re.escape(template[last : m.start()]) + segment
        last = m.end()
    return re.compile(pattern + re.escape(template[last:]) + r"\Z")


@lru_cache(maxsize=1024)
def path_pattern(path: str) -> re.Pattern[str]:
    """template_regex() of a rule's or an expectation's path, cached."""
    return template_regex(path)


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
