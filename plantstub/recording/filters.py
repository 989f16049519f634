"""Which recorded calls a reader wants: the filters of `GET /__plantstub/calls`, checked and applied."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from plantstub._json import NO_BODY, shown
from plantstub.pattern import RequestPattern


class Filterable(Protocol):
    """What a filter looks at: a Call, or the journal's compact Record."""

    @property
    def seq(self) -> int: ...
    @property
    def method(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def status(self) -> int | None: ...
    @property
    def valid(self) -> bool: ...
    @property
    def scenario(self) -> str | None: ...
    @property
    def rule(self) -> str | None: ...


_C = TypeVar("_C", bound=Filterable)

_ANY = RequestPattern()
_NONE: dict[str, str] = {}  # the headers and query a method, path and status filter does not read
_INTEGER = re.compile(r"-?[0-9]{1,18}")


class FilterError(ValueError):
    """A filter with an unknown name or a value of the wrong kind; the message names it (`query.status: ...`)."""


@dataclass(frozen=True, slots=True)
class CallFilter:
    """Every field optional; the calls kept match all that are given. `limit` keeps the newest that many."""

    method: str | None = None
    path: str | None = None  # a literal path or a template: /plants/{id}
    status: int | None = None
    valid: bool | None = None
    scenario: str | None = None
    rule: str | None = None
    since: int | None = None  # calls with a larger seq
    limit: int | None = None

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> CallFilter:
        """Read the filters of a query string; raises FilterError naming the first bad one."""
        unknown = sorted(set(query) - set(CALL_FILTERS))
        if unknown:
            raise FilterError(f"query.{unknown[0]}: unknown filter (known: {', '.join(CALL_FILTERS)})")
        numbers: dict[str, int] = {}
        for name in ("status", "since", "limit"):
            if name in query:
                if not _INTEGER.fullmatch(query[name]):
                    raise FilterError(f"query.{name}: {shown(query[name], 40)} is not an integer")
                numbers[name] = int(query[name])
        if numbers.get("limit", 0) < 0:
            raise FilterError(f"query.limit: {numbers['limit']} is negative (the newest N calls: 0 or more)")
        valid = query.get("valid")
        if valid is not None and valid not in ("true", "false"):
            raise FilterError(f"query.valid: {shown(valid, 40)} is not true or false")
        return cls(
            method=query.get("method"), path=query.get("path"), valid=None if valid is None else valid == "true",
            scenario=query.get("scenario"), rule=query.get("rule"), **numbers,
        )

    def apply(self, calls: Iterable[_C]) -> list[_C]:
        """The calls that match, oldest first."""
        found = list(calls)
        pattern = RequestPattern.of(self.method, self.path, status=self.status)  # as assertions and rules judge it
        if pattern != _ANY:
            found = [c for c in found if not pattern.mismatches(c.method, c.path, _NONE, _NONE, NO_BODY, c.status)]
        if self.valid is not None:
            found = [c for c in found if c.valid == self.valid]
        if self.scenario is not None:
            found = [c for c in found if c.scenario == self.scenario]
        if self.rule is not None:
            found = [c for c in found if c.rule == self.rule]
        if self.since is not None:
            found = [c for c in found if c.seq > self.since]
        if self.limit is not None:
            found = found[-self.limit :] if self.limit > 0 else []
        return found


CALL_FILTERS = tuple(f.name for f in dataclasses.fields(CallFilter))  # the query names, in this order
