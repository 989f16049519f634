"""Bodies in media types other than JSON that still hold a value its schema describes: XML (by OpenAPI's XML Object,
contract/xml.py), YAML, and plain text holding a number or a boolean. One home for how such a body is written (an
answer) and read back into the value its schema checks (a request, a proxied answer), the same way both ways."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from plantstub._json import BodyError, essence, is_json, scalar_text
from plantstub._yaml import decode_text, parse_text
from plantstub.contract.flatten import defs_of, types_of
from plantstub.contract.params import read_scalar

if TYPE_CHECKING:
    from plantstub.contract.xml import Mapping

_XML = frozenset(("application/xml", "text/xml"))
_YAML = frozenset(("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"))
_SCALARS = frozenset(("integer", "number", "boolean"))


def media_kind(media_type: str | None) -> str:
    """json, xml (`*/xml`, `*+xml`), yaml (`*/yaml`, `*/x-yaml`, `*+yaml`), text (`text/plain`) or other."""
    kind = essence(media_type)
    if is_json(kind):
        return "json"
    if kind in _XML or kind.endswith("+xml"):
        return "xml"
    if kind in _YAML or kind.endswith("+yaml"):
        return "yaml"
    return "text" if kind == "text/plain" else "other"


class TextBody:
    """How a body of one declared media type (not JSON) and schema is written and read.

    `holds_values`: it carries the values of its schema (XML, YAML, plain text whose schema is a number or a boolean),
    so an answer is made from the schema as a JSON one is, and a body sent in it is read into a value and checked.
    Other media (CSV, HTML, binary, a text whose schema is a string) are written and taken as text, as before."""

    def __init__(self, media_type: str, schema: object) -> None:
        self.kind = media_kind(media_type)
        self.schema = schema
        types = types_of(schema, defs_of(schema)) if isinstance(schema, dict) else None
        self.types = types or set()
        scalar = bool(self.types & _SCALARS) and self.types <= _SCALARS | {"null"}
        self.holds_values = self.kind in ("xml", "yaml") or (self.kind == "text" and scalar)

    @cached_property
    def mapping(self) -> Mapping:
        from plantstub.contract.xml import Mapping  # imported by the first XML body: most specs have none

        return Mapping(self.schema if isinstance(self.schema, dict) else {})

    def write(self, value: object) -> str | None:
        """`value` as this media type writes it; None when it cannot hold it (plain text holding an object)."""
        if self.kind == "xml":
            return self.mapping.write(value)
        if self.kind == "yaml":
            import yaml  # on the first YAML body: most specs have none

            dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
            return yaml.dump(value, Dumper=dumper, sort_keys=False, allow_unicode=True, default_flow_style=False)
        if isinstance(value, str):
            return value
        if self.kind == "text" and value is not None and not isinstance(value, (dict, list)):
            return scalar_text(value)
        return None

    def read(self, raw: bytes) -> object:
        """The value a body holds (where it `holds_values`); BodyError naming what is wrong."""
        if self.kind == "xml":
            return self.mapping.read(raw)
        try:
            text = decode_text(raw, "body")
        except ValueError as exc:
            raise BodyError(str(exc).removeprefix("body: ")) from None
        if self.kind == "yaml":
            try:
                return parse_text(text, "body")  # safe, YAML 1.2's core types, depth and aliases bounded
            except ValueError as exc:
                line, _, reason = str(exc).removeprefix("body").partition(": ")
                raise BodyError(f"{reason} (line {line[1:]})" if line.startswith(":") else reason) from None
        value = read_scalar(text.strip(), self.types - {"null", "string"})  # a number or boolean, else the text
        return text if isinstance(value, str) else value
