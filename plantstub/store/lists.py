"""A `--stateful` list answer: the records a list's filters keep, the page its paging parameters ask for, as an
array or in the object the operation wraps them in (stateful/pages.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from typing import Any

from plantstub._json import JSON
from plantstub.contract.outgoing import Outgoing, json_reply
from plantstub.contract.params import read_scalar
from plantstub.stateful.model import Action


def count_of(text: str) -> int | None:
    """A limit, an offset, a page or its size as sent; None when it is not a whole number (the request check had
    its say)."""
    value = read_scalar(text, {"integer"})
    return min(max(value, 0), sys.maxsize) if isinstance(value, int) else None


def _sent(query: Mapping[str, list[str]], name: str | None) -> int | None:
    return count_of(query[name][0]) if name is not None and name in query else None


def window(action: Action, query: Mapping[str, list[str]]) -> tuple[int, int | None, int | None]:
    """(the first record shown, how many at most or None, the page number or None) the request asks for: `offset`
    and `limit`; or a 1-based `page` of `per_page` (else `limit`, else the size's declared default) records, when no
    offset is sent; a size of 0 counts as none sent. A page with no size known holds every record (page 1), the next
    ones none."""
    size = _sent(query, action.per_page)
    if size is None and action.limit:
        size = _sent(query, "limit")
    start = _sent(query, "offset") if action.offset else None
    number = _sent(query, action.page) if start is None else None
    if number is None:
        return start or 0, size, None
    size = size if size is not None and size > 0 else action.per_page_default  # a page of 0 would never end
    if not size:
        return (0 if number <= 1 else sys.maxsize), None, number
    return min((max(number, 1) - 1) * size, sys.maxsize), size, number


def _having(records: Iterable[dict[str, Any]], name: str, wanted: list[Any]) -> Iterator[dict[str, Any]]:
    """The records whose field `name` is one of `wanted`, as they come."""
    return (r for r in records if name in r and r[name] in wanted)


def list_answer(action: Action, records: Iterable[dict[str, Any]], held: int,
                query: Mapping[str, list[str]]) -> Outgoing:
    """The answer listing `records` (the collection's `held` records, parsed as they are taken)."""
    filtered = False
    for name, types in action.filters:
        if name in query:
            records = _having(records, name, [read_scalar(v, set(types)) for v in query[name]])
            filtered = True
    start, size, number = window(action, query)
    wrapper = action.wrapper
    total = None
    if wrapper is not None and wrapper.needs_total:
        if filtered:
            records = list(records)
            total = len(records)
        else:
            total = held
    if start or size is not None:
        records = islice(records, start, None if size is None else min(start + size, sys.maxsize))
    shape = action.shape
    shown: Any = shape.show_all(records)
    if wrapper is not None:
        shown = wrapper.wrap(shown, total, start, size, number)
    return json_reply(shape.status, shown, content_type=shape.content_type or JSON)
