"""How a schema maps to XML by OpenAPI's XML Object (contract/xml.py reads it into shapes): `Shape`, and the XML
names of properties (`_xHHHH_` for what XML cannot hold, as .NET's XmlConvert does)."""

from __future__ import annotations

import re

XSI = "http://www.w3.org/2001/XMLSchema-instance"
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")  # the XML names written as they are (ASCII; no `:`)
_ESCAPED = re.compile(r"_x([0-9A-Fa-f]{4,6})_")


class Shape:
    """How one schema maps to XML, read from it once: its XML Object, the node it is, its properties, items, types.

    `props`, `extra` and `items` are the shapes of the subschemas (made on first use, so a recursive schema is one
    Shape per place); `types` the JSON types a text is read as."""

    __slots__ = ("_index", "attributes", "extra", "items", "name", "namespace", "node", "prefix", "prefixed", "props",
                 "required", "text", "title", "types", "wrapped")

    def __init__(self) -> None:
        self.name: str | None = None  # xml.name
        self.namespace: str | None = None
        self.prefix: str | None = None
        self.node = "element"  # element, attribute, text (cdata too), none
        self.wrapped = False  # an array inside an element of its own
        self.props: dict[str, Shape] = {}
        self.extra: Shape | None = None  # additionalProperties
        self.items: Shape | None = None
        self.prefixed: list[Shape] = []  # prefixItems
        self.types: set[str] = set()  # empty: any
        self.required: list[str] = []
        self.attributes: dict[str, str] = {}  # attribute name -> property
        self.text: str | None = None  # the property that is the element's text
        self.title: str | None = None
        self._index: dict[str, str] | None = None

    def child(self, prop: str) -> Shape:
        return self.props.get(prop) or self.extra or ANY

    def item(self, i: int) -> Shape:
        return self.prefixed[i] if i < len(self.prefixed) else self.items or ANY

    def element_name(self, prop: str) -> str:
        """The name of the element a property is: its `xml.name`, else its own (a wrapped array's wrapper)."""
        shape = self.child(prop)
        return shape.name or prop

    def item_name(self, prop: str, i: int = 0) -> str:
        """The name of the elements an array property's items are: the items' `xml.name`, else the wrapper's
        name when wrapped (3.2), else the property's."""
        shape = self.child(prop)
        item = shape.item(i)
        return item.name or (shape.name if shape.wrapped and shape.name else prop)

    def unwrapped(self) -> bool:
        """An array whose items repeat under the parent element, with no element of its own."""
        return not self.wrapped and "array" in self.types and self.types <= {"array", "null"}

    def index(self) -> dict[str, str]:
        """Child element name -> the property it belongs to (a wrapper's name, or each item's when unwrapped)."""
        if self._index is None:
            found: dict[str, str] = {}
            for prop, shape in self.props.items():
                if shape.node != "element":
                    continue
                if shape.unwrapped():
                    for i in range(max(1, len(shape.prefixed))):
                        found.setdefault(self.item_name(prop, i), prop)
                else:
                    found.setdefault(self.element_name(prop), prop)
            self._index = found
        return self._index


ANY = Shape()


def encode_name(name: str) -> str:
    """An XML name for `name`: as it is when XML takes it, else each character XML refuses there as `_xHHHH_` (an
    underscore that starts such a run escaped too, so every name reads back as itself)."""
    if NAME.match(name) and "_x" not in name:
        return name
    out = []
    for i, char in enumerate(name):
        fits = char.isascii() and (char.isalpha() or char == "_" or (i > 0 and (char.isdigit() or char in ".-")))
        if char == "_" and _ESCAPED.match(name, i):
            fits = False
        out.append(char if fits else f"_x{ord(char):04X}_")
    return "".join(out)


def decode_name(name: str) -> str:
    return _ESCAPED.sub(lambda m: chr(int(m[1], 16)) if int(m[1], 16) <= 0x10FFFF else m[0], name) if "_x" in name else name
