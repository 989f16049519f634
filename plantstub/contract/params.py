"""Parameters as OpenAPI declares them: read from path, query, header or cookie by their style, typed by
their schema, checked.

Every style of OpenAPI 3.1's "Style Values" table is read: `simple` (`3,4,5`; objects `R,100,G,200`, exploded
`R=100,G=200`), `label` (`.3,4,5`, exploded `.3.4.5`), `matrix` (`;id=3,4,5`, exploded `;id=3;id=4`), `form`
(`id=3,4,5`, exploded `id=3&id=4`; an exploded object spreads over the query: `R=100&G=200`),
`spaceDelimited`, `pipeDelimited` and `deepObject` (`id[R]=100&id[G]=200`). A parameter declared with
`content` is read as that media type (JSON parsed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from plantstub._json import MAX_DIGITS, MISSING, BodyError, decode_json, is_json, shown
from plantstub.contract.compiled import Checks
from plantstub.contract.flatten import defs_of, flatten, types_of
from plantstub.contract.model import Parameter
from plantstub.contract.schema import SchemaCheck, Violation
from plantstub.incoming import IncomingRequest

_JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
# `type: integer` has no size limit (format int32/int64 bounds are in the schema, contract/bundle.py): as many
# digits as a JSON body may have.
_INTEGER = re.compile(rf"[+-]?[0-9]{{1,{MAX_DIGITS}}}")
_DELIMITERS = {"spaceDelimited": " ", "pipeDelimited": "|", "tabDelimited": "\t"}  # the last: Swagger 2.0's tsv


def schema_types(schema: object, defs: dict[str, object] | None = None) -> set[str]:
    """The JSON types a schema names, to read a parameter's or form field's text by (empty: read as text)."""
    return types_of(schema, defs_of(schema) if defs is None else defs) or set()


def property_types(schema: object) -> dict[str, set[str]]:
    """The JSON types of each declared property of an object schema, to read its fields' text by."""
    defs = defs_of(schema)
    flat = flatten(schema, defs)  # an allOf loop folds in once (flatten.py)
    props = flat.get("properties") if isinstance(flat, dict) else None
    if not isinstance(props, dict):
        return {}
    return {name: types_of(sub, defs) or set() for name, sub in props.items()}


def read_scalar(text: str, types: set[str]) -> int | float | bool | str | None:
    """Read a parameter string the way its schema types it; leave it alone when it does not fit."""
    if ("integer" in types or "number" in types) and _INTEGER.fullmatch(text):
        return int(text)
    if "number" in types and _JSON_NUMBER.fullmatch(text):
        number = float(text)
        if number == number and abs(number) != float("inf"):
            return number
    if "boolean" in types and text in ("true", "false"):
        return text == "true"
    if "null" in types and text in ("", "null"):
        return None
    return text


class Malformed(str):
    """A parameter whose text does not have the shape its style gives (the reason)."""


def _split(text: str, delimiter: str | None) -> list[str]:
    """`3,4,5` -> ["3", "4", "5"]; an empty text holds no items. No delimiter: a scalar's one text."""
    if delimiter is None:
        return [text]
    return text.split(delimiter) if text else []


def _pairs(parts: list[str], exploded: bool) -> dict[str, str] | Malformed:
    """An object's members: `["R", "100", "G", "200"]`, or exploded `["R=100", "G=200"]`."""
    if exploded:
        if not all("=" in part for part in parts):
            return Malformed("expected name=value members")
        return dict(part.partition("=")[::2] for part in parts)
    if len(parts) % 2:
        return Malformed("expected name,value pairs")
    return dict(zip(parts[::2], parts[1::2], strict=True))


class ParameterCheck:
    """One declared parameter, compiled: how its text is read (style, explode, schema types) and its check.

    :param others: the names of the operation's other query parameters, which an exploded `form` object
        spread over the query does not take.
    """

    def __init__(self, param: Parameter, where: str, others: frozenset[str] = frozenset(),
                 checks: Checks | None = None) -> None:
        self.param = param
        self.style = param.style or ("form" if param.location in ("query", "cookie") else "simple")
        self.types = schema_types(param.schema)
        defs = defs_of(param.schema)
        self.kind = "array" if "array" in self.types else "object" if "object" in self.types else "scalar"
        if self.style == "deepObject":
            self.kind = "object"
        if param.media:
            self.kind = "content"
        self.item_types: set[str] = set()
        self.field_types: dict[str, set[str]] = {}
        self.field_item_types: dict[str, set[str]] = {}  # of the members that are arrays
        self.extra_types: set[str] = set()  # of the members it does not declare (additionalProperties)
        self.spread: frozenset[str] | None = None  # an exploded form object: the query names it takes (None: all)
        self.others = others
        flat = flatten(param.schema, defs) if self.kind in ("array", "object") else None
        if self.kind == "array" and isinstance(flat, dict):  # types_of() above flattened it already: no loop here
            self.item_types = schema_types(flat.get("items", {}), defs)
        elif self.kind == "object" and isinstance(flat, dict):
            self._members(flat, defs)
        self.plain = self.kind == "scalar" and self.style in ("simple", "form")
        self.members_in_query = (self.kind == "object" and param.location == "query" and param.explode
                                 and self.style in ("form", "deepObject"))
        self.check: SchemaCheck | None = None
        if param.schema is not None:  # compiled with the spec's other schemas when `checks` are given
            self.check = (checks.check(param.schema, where=where) if checks is not None
                          else SchemaCheck(param.schema, where, checked=True))
        label = {"header": "headers", "cookie": "cookies"}.get(param.location, param.location)
        self.where = f"{label}.{param.name}"

    def _members(self, flat: dict[str, object], defs: dict[str, object]) -> None:
        """An object parameter: the types of its members, and which query names an exploded form object takes."""
        self.field_types = property_types(self.param.schema)
        props = flat.get("properties")
        props = props if isinstance(props, dict) else {}
        for name, types in self.field_types.items():
            if "array" in types:
                member = flatten(props[name], defs)
                self.field_item_types[name] = schema_types(member.get("items", {}) if isinstance(member, dict) else {}, defs)
        extra = flat.get("additionalProperties", False)  # absent: the declared names only, else every other name
        self.extra_types = schema_types(extra, defs) if isinstance(extra, dict) else set()
        open_ended = not self.field_types or extra is not False or bool(flat.get("patternProperties"))
        self.spread = None if open_ended else frozenset(self.field_types)

    def value(self, request: IncomingRequest, path_params: Mapping[str, str], cookies: Mapping[str, str]) -> object:
        """The parameter's value as JSON: MISSING when not sent, a Malformed reason when its shape is wrong."""
        p = self.param
        if p.location == "path":
            raw = path_params.get(p.name)
            values = None if raw is None else [raw]
        elif p.location == "query":
            if self.members_in_query:
                return self._deep_object(request.query) if self.style == "deepObject" else self._spread(request.query)
            values = request.query.get(p.name)  # every value of a repeated name
        else:
            raw = request.headers.get(p.name) if p.location == "header" else cookies.get(p.name)
            values = None if raw is None else [raw]
        if values is None:
            return MISSING
        if self.plain:  # the common case: one scalar as sent
            return read_scalar(values[0], self.types)
        return self.read(values)

    def read(self, values: list[str]) -> object:
        """`values` (as `text()` gives them) read by style and schema."""
        if self.kind == "content":
            return self._content(values[0])
        parts = self._parts(values)
        if isinstance(parts, Malformed):
            return parts
        if self.kind == "scalar":
            return read_scalar(parts[0], self.types)
        if self.kind == "array":
            return [read_scalar(item, self.item_types) for item in parts]
        exploded = self.param.explode and self.style not in ("form", "spaceDelimited", "pipeDelimited")
        members = _pairs(parts, exploded) if parts else {}
        return members if isinstance(members, Malformed) else self._fields(members)

    def _parts(self, values: list[str]) -> list[str] | Malformed:
        """The items (or object members) of the value, its style's prefix and delimiters taken off."""
        p, style, first = self.param, self.style, values[0]
        scalar = self.kind == "scalar"
        if style == "label":
            if not first.startswith("."):
                return Malformed(f"expected '.' first (style: label), got {shown(first)}")
            return _split(first[1:], None if scalar else "." if p.explode else ",")
        if style == "matrix":
            if not first.startswith(";"):
                return Malformed(f"expected ';{p.name}' first (style: matrix), got {shown(first)}")
            if p.explode and self.kind == "object":
                return _split(first[1:], ";")
            members = first[1:].split(";") if p.explode and self.kind == "array" else [first[1:]]
            parts = []
            for member in members:
                name, _, text = member.partition("=")
                if name != p.name:
                    return Malformed(f"expected ';{p.name}=' before each value (style: matrix), got {shown(first)}")
                parts.extend(_split(text, None if scalar else ",") if len(members) == 1 else [text])
            return parts
        if p.location == "query" and self.kind == "array" and p.explode:
            return values  # form, spaceDelimited, pipeDelimited exploded: one name per item
        if scalar:
            return [first]
        delimiter = _DELIMITERS.get(style, ",")
        parts = [part for value in values for part in _split(value, delimiter)]
        return [part.strip() for part in parts] if p.location == "header" else parts  # HTTP lists may space items

    def _content(self, text: str) -> object:
        if not is_json(self.param.media):
            return text
        try:
            return decode_json(text.encode("utf-8"))
        except BodyError as exc:
            return Malformed(f"{exc} ({self.param.media})")

    def _fields(self, members: Mapping[str, str | list[str]]) -> dict[str, object]:
        """An object's members read by their property's types (text where it declares none)."""
        out: dict[str, object] = {}
        for name, sent in members.items():
            types = self.field_types.get(name, self.extra_types)
            if "array" in types:
                items = sent if isinstance(sent, list) else _split(sent, ",")
                out[name] = [read_scalar(item, self.field_item_types.get(name, set())) for item in items]
            else:
                out[name] = read_scalar(sent[0] if isinstance(sent, list) else sent, types)
        return out

    def _spread(self, query: Mapping[str, list[str]]) -> object:
        """An exploded form object: its members are query names of their own (`?R=100&G=200`)."""
        if self.spread is not None:
            members = {name: query[name] for name in self.spread if name in query}
        else:
            members = {name: values for name, values in query.items() if name not in self.others}
        return self._fields(members) if members else MISSING

    def _deep_object(self, query: Mapping[str, list[str]]) -> object:
        """`id[R]=100&id[G]=200`; a further `[...]` nests (`id[a][b]=1`), its value read as text."""
        head = self.param.name + "["
        out: dict[str, object] = {}
        for key, values in query.items():
            if not (key.startswith(head) and key.endswith("]")):
                continue
            path = key[len(head):-1].split("][")
            if len(path) == 1:
                out.update(self._fields({path[0]: values}))
                continue
            node = out
            for step in path[:-1]:
                nested = node.setdefault(step, {})
                if not isinstance(nested, dict):
                    return Malformed(f"{shown(key)} nests inside a member that is not an object (style: deepObject)")
                node = nested
            node[path[-1]] = values[0]
        return out or MISSING

    def violations(self, request: IncomingRequest, path_params: Mapping[str, str], cookies: Mapping[str, str]) -> list[Violation]:
        value = self.value(request, path_params, cookies)
        if value is MISSING:
            return [Violation(self.where, "required parameter is missing")] if self.param.required else []
        if isinstance(value, Malformed):
            return [Violation(self.where, str(value))]
        if self.check is None:
            return []
        errors = self.check.errors(value, self.where)
        if errors and value == [] and self.kind == "array" and self.param.location == "query":
            # `name=` is how OpenAPI writes both an empty array and an array of one empty string: either reading
            # that the schema takes is what was sent (Okta's orderBy has minItems 1).
            one = [read_scalar("", self.item_types)]
            if self.check.is_valid(one):
                return []
        return errors

    def accepts(self, text: str) -> bool:
        """Whether a path parameter's text (as routed, percent-decoded) is a valid value (contract/router.py)."""
        value = self.read([text])
        return not isinstance(value, Malformed) and (self.check is None or self.check.is_valid(value))
