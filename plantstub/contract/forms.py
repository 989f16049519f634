"""Form bodies read as JSON: `application/x-www-form-urlencoded` and `multipart/form-data`, each field typed
by its property's schema (a field whose schema is an array is a list, even when sent once)."""

from __future__ import annotations

from email.message import Message
from email.parser import BytesHeaderParser
from typing import Any
from urllib.parse import parse_qs

from plantstub._json import BodyError, decode_json, is_json
from plantstub.contract.flatten import defs_of, flatten
from plantstub.contract.params import property_types, read_scalar, schema_types

MAX_PARTS = 1_000  # parts of a multipart body read; each costs a header parse, so a hostile body cannot stall the loop
_HEADERS = BytesHeaderParser()


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
    """(name, Content-Type or "" when the part has none, bytes) of each part, in one pass over the body (RFC 7578)."""
    delimiter = b"--" + _boundary(content_type)
    start = raw.find(delimiter)
    if start < 0 or (start > 0 and raw[start - 2:start] != b"\r\n"):
        raise BodyError(f"no part starts with the boundary {delimiter.decode('latin-1')!r}")
    parts: list[tuple[str, str, bytes]] = []
    at = start + len(delimiter)
    while not raw.startswith(b"--", at):
        if len(parts) == MAX_PARTS:
            raise BodyError(f"more than {MAX_PARTS:,} parts; plantstub reads at most {MAX_PARTS:,}")
        line_end = raw.find(b"\r\n", at)
        end = raw.find(b"\r\n" + delimiter, at)
        if line_end < 0 or end < 0:
            raise BodyError(f"part {len(parts) + 1} does not end with the boundary {delimiter.decode('latin-1')!r}")
        block = raw[line_end + 2:end]
        head, found, data = (b"", b"\r\n", block[2:]) if block.startswith(b"\r\n") else block.partition(b"\r\n\r\n")
        if not found:
            raise BodyError(f"part {len(parts) + 1}: its headers do not end with an empty line")
        headers = _HEADERS.parsebytes(head + b"\r\n\r\n")
        name = headers.get_param("name", header="content-disposition")
        if not isinstance(name, str) or headers.get_content_disposition() != "form-data":
            raise BodyError(f"part {len(parts) + 1}: no `Content-Disposition: form-data; name=...` header")
        parts.append((name, headers.get_content_type() if "Content-Type" in headers else "", data))
        at = end + 2 + len(delimiter)
    return parts
