"""RequestPattern: what a request or a recorded call must look like. One pattern, judged one way, for rules
(scenario files, `stub.when`), assertions, waits and call filters, so a criterion means the same everywhere."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from plantstub._fields import ByFields
from plantstub._json import MISSING, NO_BODY, shown
from plantstub.matching import (
    Mismatch,
    body_mismatches,
    expected_text,
    matcher_problems,
    path_pattern,
    uses_matchers,
    value_mismatches,
)

Query = Mapping[str, str | list[str]]  # a request's query: each name's value, or the list of its values
Row = tuple[str, object, object, bool]  # (field, expected, actual, ok): one line of a near miss


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class RequestPattern(ByFields):
    """Every field optional; all given must hold. Build it with of() from what a user wrote.

    Header and query values are text as expected_text() writes them (`True` -> "true", `2` -> "2"), a matcher
    (`{"$regex": "^Bearer "}`), or a list (every value of a repeated name, in order); header names match in any
    case; a query name's first value is compared. `body` matches partially; `status` applies to recorded calls.
    """

    method: str | None = None  # upper case
    path: str | None = None  # a literal path or a template: /plants/{id}
    headers: dict[str, object] = field(default_factory=dict)  # name -> text, a matcher or a list (expected_text())
    query: dict[str, object] = field(default_factory=dict)
    body: object = NO_BODY
    status: int | None = field(default=None, kw_only=True)  # keyword-only: Criteria's `line` follows `body`
    matchers: bool = field(init=False, default=False)  # whether `body` holds a matcher: if not, none is looked for

    def __post_init__(self) -> None:
        object.__setattr__(self, "matchers", self.body is not NO_BODY and uses_matchers(self.body))

    @classmethod
    def of(cls, method: str | None = None, path: str | None = None, headers: Mapping[str, object] | None = None,
           query: Mapping[str, object] | None = None, body: object = NO_BODY, status: int | None = None) -> RequestPattern:
        """The pattern of what a user wrote: the method in upper case, values coerced once (expected_text())."""
        return cls(None if method is None else method.upper(), path,
                   {name: expected_text(value) for name, value in (headers or {}).items()},
                   {name: expected_text(value) for name, value in (query or {}).items()}, body, status=status)

    def mismatches(self, method: str, path: str, headers: Mapping[str, str], query: Query, body: object,
                   status: int | None = None) -> list[Mismatch]:
        """Every way a request fails this pattern; empty means it matches. On the request path: plain values cost
        a comparison each, matchers are looked at only when the plain comparison fails.

        :param headers: case-insensitive (a multidict), as aiohttp and recorded calls give them.
        :param query: each name's value, or list of values (a repeated name).
        """
        found: list[Mismatch] = []
        if self.method is not None and self.method != method:
            found.append(Mismatch("method", self.method, method))
        if self.path is not None and not path_pattern(self.path).match(path):
            found.append(Mismatch("path", self.path, path))
        for name, value in self.headers.items():
            actual: object = headers.get(name, MISSING)
            if actual != value:
                if type(value) is str:  # the common case, written out: a failing plain value costs one record
                    found.append(Mismatch(f"headers.{name}", value, actual))
                else:  # a matcher (a dict) or a list, never equal to the text
                    found.extend(value_mismatches(value, _all(headers, name) if type(value) is list else actual,
                                                  f"headers.{name}"))
        for name, value in self.query.items():
            got = query.get(name, MISSING)
            actual = got[0] if type(got) is list else got
            if actual != value:
                if type(value) is str:
                    found.append(Mismatch(f"query.{name}", value, actual))
                else:
                    whole = type(value) is list
                    found.extend(value_mismatches(value, _query_value(query, name, whole) if whole else actual,
                                                  f"query.{name}"))
        if self.body is not NO_BODY:
            found.extend(body_mismatches(self.body, body, "body", self.matchers))
        if self.status is not None and self.status != status:
            found.append(Mismatch("status", self.status, status))
        return found

    def rows(self, method: str, path: str, headers: Mapping[str, str], query: Query, body: object,
             status: int | None = None) -> list[Row]:
        """Each field this pattern looks at, as near misses show it: what came, and what was expected where
        it differs. Built from mismatches(), so what is shown is what was judged."""
        missed: dict[str, list[Mismatch]] = {}
        for miss in self.mismatches(method, path, headers, query, body, status):
            missed.setdefault(_top(miss.field), []).append(miss)
        looked: list[tuple[str, object, object]] = []
        if self.method is not None:
            looked.append(("method", self.method, method))
        if self.path is not None:
            looked.append(("path", self.path, path))
        looked.extend((f"headers.{name}", value, headers.get(name, MISSING)) for name, value in self.headers.items())
        looked.extend((f"query.{name}", value, _query_value(query, name, whole=type(value) is list))
                      for name, value in self.query.items())
        if self.body is not NO_BODY:
            looked.append(("body", self.body, "matches"))
        if self.status is not None:
            looked.append(("status", self.status, status))
        rows: list[Row] = []
        for name, expected, actual in looked:
            misses = missed.get(name)
            if misses:
                rows.extend((m.field, m.expected, m.actual, False) for m in misses)
            else:
                rows.append((name, expected, actual, True))
        return rows


def pattern_problems(method: object = None, path: object = None, headers: object = None, query: object = None,
                     body: object = NO_BODY, status: object = None) -> list[tuple[str, str]]:
    """What is wrong with criteria given from code or JSON (assertions, waits), each as (location path, message):
    so a typo is an error, not a criterion that never holds (rules get the same from their loader)."""
    found: list[tuple[str, str]] = []
    for name, value in (("method", method), ("path", path)):
        if value is not None and not isinstance(value, str):
            found.append((name, f"{shown(value)} is not text"))
    for name, value in (("headers", headers), ("query", query)):
        if value is not None and not isinstance(value, Mapping):
            found.append((name, f"{shown(value)} is not an object of names and values"))
        elif value:
            for key, item in value.items():
                found.extend(matcher_problems(item, f"{name}.{key}"))
    if body is not NO_BODY:
        found.extend(matcher_problems(body, "body"))
    if status is not None and (not isinstance(status, int) or isinstance(status, bool)):
        found.append(("status", f"{shown(status)} is not an HTTP status (an integer)"))
    return found


def _all(headers: Mapping[str, str], name: str) -> list[str]:
    """Every value of a header (a repeated one has several)."""
    getall = getattr(headers, "getall", None)
    if getall is not None:
        return list(getall(name, []))
    value = headers.get(name)
    return [] if value is None else [value]


def _query_value(query: Query, name: str, whole: bool) -> object:
    """A query name's first value (MISSING when absent), or with `whole` the list of all its values."""
    got = query.get(name, MISSING)
    values = [] if got is MISSING else got if type(got) is list else [got]
    if whole:
        return values
    return values[0] if values else MISSING


def _top(where: str) -> str:
    """The row a mismatch belongs to: `body.tags[0].id` -> `body`; `headers.X` and `query.q` are rows themselves."""
    if where.startswith("body"):
        return "body"
    return where
