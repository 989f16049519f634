"""Lists wrapped in an object, for `--stateful`: `{"data": [...], "total": 2, "has_more": false}`.

page_of() reads a list operation's answer schema once: which array property holds the records, and what each
other property of the wrapper gets (a count, whether more remain, a link, the paging applied, a generated value).
Page.wrap() fills it for one answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from plantstub.contract.compiled import Checks
from plantstub.contract.flatten import types_of
from plantstub.contract.samples import sample
from plantstub.stateful.shapes import fields_of, flat_of

# The array properties that hold a list's records by convention, preferred in this order (then the collection's
# own name, `things` for /things) when a wrapper has more than one.
ITEM_NAMES = ("data", "items", "results", "records", "value", "entries")
# Property names as compared: lower case, letters and digits only (`total_count`, `totalCount` -> totalcount).
COUNTS = frozenset({"total", "count", "totalcount", "totalresults", "totalitems", "totalrecords", "totalelements",
                    "totalentries", "totalsize", "odatacount", "itemstotal", "itemcount", "itemscount", "resultcount",
                    "resultscount", "recordcount", "recordscount"})
MORES = frozenset({"hasmore", "hasnext", "hasnextpage", "hasmoreitems", "hasmoreresults"})
LIMITS = {"limit": "size", "perpage": "size", "pagesize": "size", "offset": "offset", "page": "page",
          "pagenumber": "page"}
COUNT, MORE, LINK, SIZE, OFFSET, PAGE = "count", "more", "link", "size", "offset", "page"
OMIT = object()  # a property left out of the answer


def _plain(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _link(plain: str) -> bool:
    """A link or cursor to another page: next, previous, next_page, nextLink, @odata.nextLink, next_cursor..."""
    plain = plain.removeprefix("odata")
    return plain.startswith(("next", "prev"))


@dataclass(frozen=True, slots=True)
class Slot:
    """A property of the wrapper filled per answer: `kind` says with what; `fallback` (a generated value, or OMIT
    when it is optional) stands in when that value is unknown or breaks the property's schema."""

    name: str
    kind: str
    check: Any  # a SchemaCheck, or None: the value always fits
    fallback: Any

    def value(self, value: Any) -> Any:
        if value is None or (self.check is not None and not self.check.is_valid(value)):
            return self.fallback
        return value


@dataclass(frozen=True, slots=True)
class Page:
    """How a list answer wraps its records: the property holding them, and every other property it has, in the
    declared order (a Slot, filled per answer, or a fixed value)."""

    items: str
    parts: tuple[tuple[str, Any], ...]  # (name, Slot or fixed value), OMIT ones left out already
    needs_total: bool  # a count or a has_more: the records after the filters must be counted

    def wrap(self, records: list[Any], total: int | None, start: int, size: int | None, page: int | None) -> dict:
        """The answer holding `records` (a page of `total` after the filters, from `start`; `size` records a page
        when one was asked for, `page` its number when asked by page)."""
        answer: dict[str, Any] = {}
        for name, part in self.parts:
            if name == self.items:
                answer[name] = records
                continue
            if type(part) is not Slot:
                answer[name] = part
                continue
            kind = part.kind
            if kind == COUNT:
                value: Any = total
            elif kind == MORE:
                value = None if total is None else start + len(records) < total
            elif kind == SIZE:
                value = size
            elif kind == OFFSET:
                value = start
            else:
                value = page if page is not None else (start // size + 1 if size else 1)
            value = part.value(value)
            if value is not OMIT:
                answer[name] = value
        return answer


def _items_of(sub: Any, defs: dict[str, Any]) -> dict[str, Any] | None:
    """The flattened item schema of an array property's schema, None when it is not an array."""
    flat = flat_of(sub, defs)
    if flat.get("type") != "array" and "items" not in flat:
        return None
    return flat_of(flat.get("items", True), defs)


def items_property(flat: dict[str, Any], defs: dict[str, Any], fields: frozenset[str], name: str) -> str | None:
    """The array property of an object answer that holds the records: the one whose items share fields with the
    records, or are objects when either's fields are unknown; among several, the first of ITEM_NAMES, then `name`
    (the collection's), then the one sharing the most fields with the records. None when none does, several tie,
    or the answer is a choice (oneOf, anyOf)."""
    props = flat.get("properties")
    if not isinstance(props, dict) or flat.get("oneOf") or flat.get("anyOf") or "items" in flat:
        return None
    found: dict[str, int] = {}
    for prop, sub in props.items():
        items = _items_of(sub, defs)
        if items is None:
            continue
        own = set(fields_of(items) or ())
        shared = len(fields & own)
        objects = types_of(items, defs) == {"object"} or "properties" in items
        if shared or (objects and not (fields and own)):  # objects of other fields are something else
            found[prop] = shared
    if len(found) <= 1:
        return next(iter(found), None)
    for prop in (*ITEM_NAMES, name):
        if prop in found:
            return prop
    best = max(found.values())
    chosen = [prop for prop, shared in found.items() if shared == best]
    return chosen[0] if best and len(chosen) == 1 else None


def page_of(schema: Any, defs: dict[str, Any], checks: Checks, fields: frozenset[str], name: str) -> Page | None:
    """How a list answer of `schema` wraps the records (None: it does not, or no property holds them)."""
    flat = flat_of(schema, defs)
    items = items_property(flat, defs, fields, name)
    if items is None:
        return None
    required = flat.get("required")
    required = set(required) if isinstance(required, list) else set()
    parts: list[tuple[str, Any]] = []
    for prop, sub in flat["properties"].items():
        if prop == items:
            parts.append((prop, None))
            continue
        plain = _plain(prop)
        types = types_of(flat_of(sub, defs), defs) or set()
        fallback = sample(sub, defs, checks=checks) if prop in required else OMIT
        if fallback is not OMIT and not _fits(checks, fallback, sub, defs):
            return None  # a required part no value satisfies: the default answer (its 501) says why
        kind = None
        if plain in COUNTS and types & {"integer", "number"}:
            kind = COUNT
        elif plain in MORES and "boolean" in types:
            kind = MORE
        elif plain in LIMITS and types & {"integer", "number"}:
            kind = LIMITS[plain]
        elif _link(plain):
            if _fits(checks, None, sub, defs):
                parts.append((prop, None))
            elif fallback is not OMIT:
                parts.append((prop, fallback))
            continue
        if kind is None:
            if fallback is not OMIT:
                parts.append((prop, fallback))
            continue
        check: Any
        try:
            check = checks.check(sub, defs)
        except Exception:  # noqa: BLE001 - a schema jsonschema-rs cannot compile: no value is known to fit it
            check = _NOTHING_FITS
        parts.append((prop, Slot(prop, kind, check, fallback)))
    needs_total = any(type(p) is Slot and p.kind in (COUNT, MORE) for _, p in parts)
    return Page(items, tuple(parts), needs_total)


class _NothingFits:
    @staticmethod
    def is_valid(value: Any) -> bool:
        return False


_NOTHING_FITS = _NothingFits()


def _fits(checks: Checks, value: Any, schema: Any, defs: dict[str, Any]) -> bool:
    return checks.valid(value, schema, defs)
