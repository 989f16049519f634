"""Form bodies read as JSON: `application/x-www-form-urlencoded` and `multipart/form-data`, each field typed
by its property's schema (a field whose schema is an array is a list, even when sent once)."""

from __future__ import annotations

import logging
from email.message import Message
from email.parser import BytesHeaderParser
from typing import Any
from urllib.parse import parse_qs

from plantstub._json import BodyError, decode_json, is_json
from plantstub.contract.flatten import defs_of, flatten
from plantstub.contract.params import property_types, read_scalar, schema_types

MAX_PARTS = 1_000  # parts of a multipart body read; each costs a header parse, so a hostile body cannot stall the loop
MAX_HEADERS = 8  # header lines of one part (a form's part has one to three)
MAX_HEADER_LINE = 4_096  # bytes of one header line, name and value
_HEADERS = BytesHeaderParser()
_QUIET = logging.Logger("plantstub.multipart", logging.CRITICAL)  # never registered, never writes


class FormFields:
    """The JSON types of a form schema's fields, and of the items of those that are arrays."""

    def __init__(self, schema: Any) -> None:
        self.types = property_types(schema)
        defs = defs_of(schema)
        flat = flatten(schema, defs)
        props = flat.get("properties") if isinstance(flat, dict) else None
        self.item_types: dict[str, set[str]] = {}
        for name, types in self.types.items():
            if "array" in types and isinstance(props, dict):
                member = flatten(props[name], defs)
                self.item_types[name] = schema_types(member.get("items", {}) if isinstance(member, dict) else {}, defs)

    def value(self, name: str, sent: list[Any]) -> Any:
        """A field's values as JSON: a list for an array, else one value. Each is text, or a part's JSON as `(value,)`
        (taken as it is: a JSON string `"12"` stays a string)."""
        types = self.types.get(name, set())
        if len(sent) == 1 and isinstance(sent[0], tuple):
            one = sent[0][0]  # an array field's one part holding an item, not the array: a one-item array
            return [one] if types == {"array"} and not isinstance(one, list) else one
        if "array" in types and (len(sent) > 1 or not types - {"array"}):
            items = self.item_types.get(name, set())
            return [v[0] if isinstance(v, tuple) else read_scalar(v, items) for v in sent]
        if len(sent) == 1:
            return read_scalar(sent[0], types)
        return [v[0] if isinstance(v, tuple) else v for v in sent]

    def urlencoded(self, raw: bytes) -> dict[str, Any]:
        """`a=1&tags=x`: raises BodyError when the body is not UTF-8."""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BodyError(f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
        fields = parse_qs(text, keep_blank_values=True, strict_parsing=False)
        return {name: self.value(name, sent) for name, sent in fields.items()}

    def multipart(self, raw: bytes, content_type: str) -> dict[str, Any]:
        """A multipart/form-data body's fields by their parts' names; raises BodyError naming what is wrong."""
        sent: dict[str, list[Any]] = {}
        for i, (name, kind, data) in enumerate(_parts(raw, content_type)):
            if is_json(kind) or (not kind and self.json_by_default(name, data)):
                try:
                    value: Any = (decode_json(data),)
                except BodyError as exc:
                    raise BodyError(f"part {i + 1} ({name!r}): {exc}") from None
            else:
                value = data.decode("utf-8", errors="replace")  # a file's bytes: text for a `format: binary` string
            sent.setdefault(name, []).append(value)
        return {name: self.value(name, values) for name, values in sent.items()}

    def json_by_default(self, name: str, data: bytes) -> bool:
        """Whether a part sent without a Content-Type is JSON by OpenAPI's encoding defaults: that of an object
        property, of an item of an array of objects or arrays, or a whole array sent in one part (`[...]`)."""
        types = self.types.get(name, set())
        if not types or "string" in types:
            return False
        if "object" in types:
            return True
        if "array" in types:
            items = self.item_types.get(name, set())
            return (bool(items & {"object", "array"}) and "string" not in items) or data.lstrip()[:1] == b"["
        return False


def _boundary(content_type: str) -> bytes:
    header = Message()
    header["Content-Type"] = content_type
    boundary = header.get_param("boundary")
    if not isinstance(boundary, str) or not boundary or len(boundary) > 70:
        raise BodyError("multipart/form-data without a boundary in its Content-Type (1 to 70 characters)")
    return boundary.encode("latin-1", errors="replace")


def _parts(raw: bytes, content_type: str) -> list[tuple[str, str, bytes]]:
    """(name, Content-Type or "" when the part has none, bytes) of each part (RFC 7578), split by python-multipart's
    parser within our bounds: at most MAX_PARTS parts, MAX_HEADERS header lines of MAX_HEADER_LINE bytes each."""
    from python_multipart import MultipartParser
    from python_multipart.exceptions import MultipartParseError

    boundary = _boundary(content_type)
    split = _Split(f"--{boundary.decode('latin-1')}")
    parser = MultipartParser(boundary, split.callbacks)
    parser.logger = _QUIET  # its warnings on a malformed body: the refusal says what is wrong, once
    try:
        parser.write(raw)
    except MultipartParseError:
        raise BodyError(split.broken()) from None
    if not split.ended:
        raise BodyError(split.broken(cut_short=True))
    return split.parts


class _Split:
    """The parser's callbacks: the parts met, each part's headers and data as they come, where the parser is."""

    def __init__(self, delimiter: str) -> None:
        self.delimiter = delimiter
        self.parts: list[tuple[str, str, bytes]] = []
        self.stage = "before"  # before the first part, in a part's headers, in its data, between two parts
        self.ended = False  # the closing delimiter was met
        self.lines: list[list[bytes]] = []  # this part's header lines, each [name, value] as they came
        self.data: list[bytes] = []
        self.callbacks: Any = {
            "on_part_begin": self.begin, "on_header_begin": self.header, "on_header_field": self.field,
            "on_header_value": self.value, "on_headers_finished": self.headers_done, "on_part_data": self.more,
            "on_part_end": self.end, "on_end": self.close,
        }

    def begin(self) -> None:
        if len(self.parts) == MAX_PARTS:
            raise BodyError(f"more than {MAX_PARTS:,} parts; plantstub reads at most {MAX_PARTS:,}")
        self.stage, self.lines, self.data = "headers", [], []

    def header(self) -> None:
        if len(self.lines) == MAX_HEADERS:
            raise BodyError(self.broken())
        self.lines.append([b"", b""])

    def field(self, data: bytes, start: int, end: int) -> None:
        self._add(0, data[start:end])

    def value(self, data: bytes, start: int, end: int) -> None:
        self._add(1, data[start:end])

    def _add(self, at: int, piece: bytes) -> None:
        line = self.lines[-1]
        line[at] += piece
        if len(line[0]) + len(line[1]) > MAX_HEADER_LINE:
            raise BodyError(self.broken())

    def headers_done(self) -> None:
        self.stage = "data"

    def more(self, data: bytes, start: int, end: int) -> None:
        self.data.append(data[start:end])

    def end(self) -> None:
        n = len(self.parts) + 1
        headers = _HEADERS.parsebytes(b"".join(name + b": " + value + b"\r\n" for name, value in self.lines) + b"\r\n")
        name = headers.get_param("name", header="content-disposition")
        if not isinstance(name, str) or headers.get_content_disposition() != "form-data":
            raise BodyError(f"part {n}: no `Content-Disposition: form-data; name=...` header")
        self.parts.append((name, headers.get_content_type() if "Content-Type" in headers else "", b"".join(self.data)))
        self.stage = "between"

    def close(self) -> None:
        self.ended = True

    def broken(self, cut_short: bool = False) -> str:
        """What is wrong where the parser stopped (`cut_short`: the body ended there)."""
        n = len(self.parts) + 1
        if self.stage == "before":
            return f"no part starts with the boundary {self.delimiter!r}"
        if self.stage == "headers":
            if cut_short:
                return f"part {n}: its headers do not end with an empty line"
            return (f"part {n}: its headers are not lines of `Name: value` (at most {MAX_HEADERS} lines of at most "
                    f"{MAX_HEADER_LINE:,} bytes) ending with an empty line")
        ended = len(self.parts) + (self.stage == "data")  # the part whose closing boundary is missing or broken
        return f"part {ended} does not end with the boundary {self.delimiter!r}"
