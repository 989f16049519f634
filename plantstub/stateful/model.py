"""The model of `--stateful`: a `Resource` (a collection of records: where they live, their key, what a record
must be) and an `Action` (what one operation does to it); both read from the spec once, by stateful/resources.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from plantstub._json import shown
from plantstub.contract.params import read_scalar
from plantstub.contract.schema import SchemaCheck
from plantstub.stateful.branches import Branch, pick
from plantstub.stateful.keys import has_surrogate, key_text
from plantstub.stateful.pages import Page
from plantstub.stateful.shapes import Shape

CREATE, LIST, READ, REPLACE, MERGE, DELETE = "create", "list", "read", "replace", "merge", "delete"
_READ_AS_OTHER = frozenset({"integer", "number", "boolean", "null"})  # types read_scalar reads a text as


@dataclass(frozen=True, slots=True)
class Resource:
    """A collection of records: where they live, their key and what a record must be."""

    collection: str  # a path template: /plants, or /stores/{store}/plants
    item: str | None  # /plants/{id}
    key: str  # the record's field that holds the key
    param: str  # the item path's parameter that names it (the same name, unless the records only have `id`)
    key_types: frozenset[str]
    schema: Any  # what a record must be (the create body's schema, else the read answer's); None: any object
    defs: Any
    fields: frozenset[str]
    key_check: SchemaCheck | None = None  # the item path parameter's schema: what a path may name
    # Fields some answer requires, with a generated value: a record created or replaced without one gets it, as a
    # server assigns `createdAt`, and keeps it, so a later read agrees.
    defaults: dict[str, Any] = field(default_factory=dict)
    choices: list[tuple[Branch, ...]] = field(default_factory=list)  # answers that are a choice of objects

    def filled(self, record: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
        """`record` with each required field it lacks: the old record's value, else the generated one; an `id` the
        answers show beside another key field (`alias`) is the key itself, where its schemas take it. A new dict when
        anything was added, else `record` itself."""
        alias = self.alias
        if alias is not None and alias not in record and self.key in record and (old is None or alias not in old) \
                and all(check.is_valid(record[self.key]) for check in self.alias_checks):
            record = {**record, alias: record[self.key]}
        out = record
        for name, value in self.defaults.items():  # a loop, not a comprehension: a create's every call
            if name not in out:
                if out is record:
                    out = dict(record)
                out[name] = old[name] if old is not None and name in old else value
        for choice in self.choices:  # an answer of a choice of objects: what the record's branch requires
            out = pick(choice, out).apply(out, old)
        return out

    field_types: frozenset[str] = frozenset()  # the records' key field's types (else the parameter's count)
    field_checks: tuple[SchemaCheck, ...] = ()  # the key field's schemas, in the records and the answers
    key_samples: tuple[str, ...] = ()  # generated keys the schemas take, whose tail a counter replaces
    key_enum: tuple[Any, ...] = ()  # the keys an enum allows, given out in order
    alias: str | None = None  # `id`, which answers show while the records are keyed by another field
    alias_checks: tuple[SchemaCheck, ...] = ()  # its schemas in those answers
    envelope: str | None = None  # the one property bodies send the record in (Asana's `{"data": {...}}`)
    batch: str | None = None  # the array property a create sends its records in (Xero's `Contacts`); "": the body
    # The item parameter's name where it spells the key field in another case (`id` for `Id`): a body may send the key
    # under it (sent_as()); None where it is the key field's name or another word. Made from the two.
    spelt: str | None = field(init=False, default=None)
    home: str | None = field(init=False, default=None)  # the concrete collection path, when it has no parameter
    # Made from the key's types, once (a create looks at its key, admit()): whether an integer, a text can be a key
    # (fits()); whether a path segment spelling one surely reads back as the same key (_reads_back()).
    ints_fit: bool = field(init=False, default=False)
    texts_fit: bool = field(init=False, default=False)
    ints_read_back: bool = field(init=False, default=False)
    texts_read_back: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        param, key, types = self.param, self.key, self.field_types or self.key_types
        made = {"home": collection_path(self.collection, {}) if "{" not in self.collection else None,
                "spelt": param if param != key and param.lower() == key.lower() else None,
                "ints_fit": not types or "integer" in types or "number" in types,
                "texts_fit": not types or "string" in types,
                "ints_read_back": "integer" in self.key_types or "number" in self.key_types,
                "texts_read_back": not self.key_types & _READ_AS_OTHER}
        for name, value in made.items():
            object.__setattr__(self, name, value)

    def unwrap(self, body: Any) -> Any:
        """The record a create or update body sends: in its envelope, when it has one; for a create in an array
        (`batch`), the list of records (an update: the one record of the array)."""
        if self.envelope is not None and isinstance(body, dict) and isinstance(body.get(self.envelope), dict):
            return body[self.envelope]
        if self.batch is not None:
            rows = body if self.batch == "" else body.get(self.batch) if isinstance(body, dict) else None
            if isinstance(rows, list) and all(isinstance(r, dict) for r in rows):
                return rows
        return body

    def sent_as(self, body: dict[str, Any]) -> str | None:
        """The body field that carries the key under the item parameter's name spelt otherwise than the records'
        key field (`id` sent, `Id` answered); None when the key field is sent as it is, or not at all."""
        if self.spelt is None or self.key in body:
            return None
        return self.spelt if self.spelt in body else None

    def unkeyable(self) -> str | None:
        """Why no record can be keyed at all: the key field's schema is no string nor number (an object)."""
        types = self.field_types or self.key_types
        if not types or types & {"string", "integer", "number"}:
            return None
        return (f"the records are keyed by {self.key}, which the document makes {' or '.join(sorted(types))}: no path"
                f" {self.item or self.collection + '/{' + self.param + '}'} names such a key, so the store can keep no"
                " record here")

    def fits(self, value: Any) -> bool:
        """Whether `value` can be a key: a string or an integer, as the records' key field says (else the path
        parameter); unaddressable() says whether the item path reads it back as the same key."""
        if isinstance(value, int) and not isinstance(value, bool):
            return self.ints_fit
        return isinstance(value, str) and self.texts_fit

    @property
    def assigns_text(self) -> bool:
        """Keys the stub assigns are "1", "2"... (a string key schema), not 1, 2..."""
        types = self.field_types or self.key_types
        return "string" in types and "integer" not in types and "number" not in types

    def assign(self, n: int) -> Any | None:
        """The `n`th key the stub assigns: `n` itself where every schema takes it, else a generated key with `n`
        in its tail (a uuid, a pattern's text) or after it, else the enum's `n`th value; None when none fits."""
        digits = str(n)
        candidates: list[Any] = [digits, n] if self.assigns_text else [n, digits]
        for text in self.key_samples:
            if len(digits) <= len(text):
                width = min(len(text), max(len(digits), 12))
                candidates.append(text[: len(text) - width] + digits.rjust(width, "0"))
            candidates.append(text + digits)  # a pattern the tail replaced breaks (`^aia_tool_.+$`): appended
        if n <= len(self.key_enum):
            candidates.append(self.key_enum[n - 1])
        for value in candidates:
            if self.unaddressable(value) is None and all(c.is_valid(value) for c in self.field_checks):
                return value
        return None

    def key_of(self, text: str) -> Any:
        """A key as its path segment spells it, read as its schema types it (`"7"` -> 7 for an integer)."""
        return read_scalar(text, set(self.key_types))

    def _reads_back(self, value: Any, text: str) -> bool:
        """Whether a path segment `text` surely reads as `value` again, without reading it (the common keys)."""
        if isinstance(value, str):
            return self.texts_read_back
        return len(text) < 19 and self.ints_read_back

    def admit(self, value: Any) -> tuple[str | None, str | None]:
        """A key a create body sends, judged once: (its text, None) when the store keeps it as sent; (None, None) when
        the item parameter's schema refuses it, though a path could carry it (a text under an integer parameter: the
        document names records in the path's form, so the store assigns one); (None, why) when it cannot be a key
        (what the refusal says after `body.{key}: `): not a string or an integer as fits() says, or no item path
        names it (unaddressable())."""
        kind = type(value)  # parsed JSON's own types first, as fits(), key_text() and _reads_back() judge them
        if kind is int and self.ints_fit:
            text = str(value)
            odd = None  # digits, and a sign
            back = len(text) < 19 and self.ints_read_back
        elif kind is str and self.texts_fit:
            text = value
            odd = _odd_segment(text)
            back = self.texts_read_back
        elif self.fits(value):  # a subclass
            text = key_text(value)
            odd = _odd_segment(text)
            back = self._reads_back(value, text)
        else:
            return None, f"{shown(value)} cannot be a key"
        check, item = self.key_check, self.item
        if check is None and item is None:
            return text, None
        read = value
        if odd is None:
            if not back:
                read = self.key_of(text)
            if check is not None and not check.is_valid(read):
                return None, None
            if item is None or read is value or key_text(read) == text:
                return text, None
        elif item is None:
            return text, None
        reason = odd if odd is not None else f"the path reads {shown(text)} as {shown(read)}"
        return None, f"{shown(value)} cannot be a key: no path {item} names it ({reason})"

    def unaddressable(self, value: Any) -> str | None:
        """Why no item path names the key `value` (which fits()): `/words/{word}` must read it back as the same
        key, and its parameter's schema take it. None when one does (or the resource has no item path)."""
        if self.item is None:
            return None
        text = key_text(value)
        reason = _odd_segment(text)
        if reason is None:
            read = value if self._reads_back(value, text) else self.key_of(text)
            if key_text(read) != text:
                reason = f"the path reads {shown(text)} as {shown(read)}"
            elif self.key_check is None or self.key_check.is_valid(read):
                return None
            else:
                reason = "; ".join(f"{v.where}: {v.message}" for v in self.key_check.errors(read, f"path.{self.param}"))
        return f"no path {self.item} names it ({reason})"


def collection_path(template: str, params: Mapping[str, str]) -> str:
    """The concrete collection path: `/stores/{store}/plants` with the request's `store`; without a trailing
    slash, so `/things` and `/things/` are one collection."""
    if "{" in template:
        template = "/".join(params.get(s[1:-1], s) if s.startswith("{") else s for s in template.split("/"))
    return template.rstrip("/") or "/"


def _odd_segment(text: str) -> str | None:
    """Why a path segment cannot spell the key `text` whatever its schema: None when one can."""
    if not text:
        return "an empty path segment"
    if text in (".", ".."):
        return "clients drop a path segment . or .. before sending"
    if not text.isascii() and has_surrogate(text):
        return "a lone surrogate, which no URL carries"
    return None


@dataclass(frozen=True, slots=True)
class Action:
    """What one operation does to its resource, and the statuses of what can go wrong."""

    kind: str
    resource: Resource
    shape: Shape
    missing: int  # an unknown key: 404 where declared, else the declared error
    conflict: int  # creating a key that exists: 409 where declared, else the declared error
    full: int  # the store holds MAX_RECORDS: 507 where declared, else the declared error
    limit: bool = False
    offset: bool = False
    filters: tuple[tuple[str, frozenset[str]], ...] = ()  # query parameters naming a record field, and their types
    page: str | None = None  # a list's page number parameter (1-based), and its page size parameter
    per_page: str | None = None
    per_page_default: int | None = None  # the page size a page is cut by when the request does not say one
    wrapper: Page | None = None  # how a list answer wraps the records (`{"data": [...]}`); None: an array
