"""XML bodies by OpenAPI's XML Object: a value written as XML from its schema, and XML read back into a value by the
same mapping, to be checked with the schema.

The mapping (OpenAPI 3.0-3.2): an object is an element whose properties are child elements named by the property
(or its `xml.name`), attributes (`attribute: true`, 3.2's `nodeType: attribute`) or its text (`nodeType: text` or
`cdata`); an array's items repeat under the parent, or inside a wrapping element (`wrapped: true`, `nodeType:
element`), each named by the items' `xml.name`, else the array's name; a scalar is an element's text; null an empty
element with `xsi:nil="true"` (an attribute left out). The root is named by its `xml.name`, else the component its
`$ref` names, else its title. `namespace` and `prefix` are written; reading matches local names. A name XML cannot
hold is written `_xHHHH_` per character, as .NET's XmlConvert does, and read back. `anyOf`/`oneOf` branches are read
as one shape: their properties together, their types together.

Reading uses the standard library (expat, then its C tree builder) with every document type declaration refused: no
entity is ever declared, so none is expanded (no "billion laughs", whatever expat's own limits), and no external one
is fetched; nesting is bounded.
"""

from __future__ import annotations

import re
from functools import lru_cache
from xml.etree import ElementTree
from xml.parsers import expat

from plantstub._json import MAX_NESTING, BodyError, scalar_text
from plantstub._memo import IdentityMemo
from plantstub.contract.flatten import defs_of, flatten, types_of
from plantstub.contract.params import read_scalar

XSI = "http://www.w3.org/2001/XMLSchema-instance"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")  # the XML names written as they are (ASCII; no `:`)
_ESCAPED = re.compile(r"_x([0-9A-Fa-f]{4,6})_")
_UNWRITABLE = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")  # characters XML 1.0 cannot carry


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


class Mapping:
    """The shapes of one bundled schema's places (its `$defs` shared), each made once."""

    def __init__(self, schema: object) -> None:
        self.defs = defs_of(schema)
        self.shapes: IdentityMemo[Shape] = IdentityMemo()
        self.root = self.shape(schema)
        if self.root.name is None:
            self.root.name = _component(schema) or self.root.title or "root"

    def shape(self, schema: object) -> Shape:
        if not isinstance(schema, dict):
            return ANY
        kept = self.shapes.get(schema)
        if kept is not None:
            return kept
        shape = self.shapes.put(schema, Shape())
        flat = flatten(schema, self.defs)
        if not isinstance(flat, dict):
            return shape
        parts = [flat]
        for key in ("anyOf", "oneOf"):
            if isinstance(flat.get(key), list):
                parts += [branch for branch in (flatten(b, self.defs) for b in flat[key]) if isinstance(branch, dict)]
        # The XML Object where it is used wins over the one its `$ref` leads to (3.2's point-of-use name).
        xml = _xml(schema) or _xml(flat)
        shape.name = _text(xml.get("name"))
        shape.namespace = _text(xml.get("namespace"))
        shape.prefix = _text(xml.get("prefix")) if shape.namespace else None
        node = xml.get("nodeType")
        if xml.get("attribute") is True or node == "attribute":
            shape.node = "attribute"
        elif node in ("text", "cdata"):
            shape.node = "text"
        shape.wrapped = xml.get("wrapped") is True or node == "element"
        shape.title = _text(flat.get("title")) if _NAME.match(str(flat.get("title", ""))) else None
        shape.types = types_of(schema, self.defs) or set()
        subs: dict[str, list[object]] = {}  # each property's schemas, in every part (a branch's too)
        for part in parts:
            required = part.get("required")
            shape.required += [r for r in (required if isinstance(required, list) else ())
                               if isinstance(r, str) and r not in shape.required]
            props = part.get("properties")
            for prop, sub in (props.items() if isinstance(props, dict) else ()):
                subs.setdefault(prop, []).append(sub)
            extra = part.get("additionalProperties")
            if shape.extra is None and isinstance(extra, dict):
                shape.extra = self.shape(extra)
            items = part.get("items")
            if shape.items is None and isinstance(items, dict):
                shape.items = self.shape(items)
            prefixed = part.get("prefixItems")
            if not shape.prefixed and isinstance(prefixed, list):
                shape.prefixed = [self.shape(p) for p in prefixed]
        for prop, found in subs.items():  # a property several branches declare reads as any of them
            shape.props[prop] = self.shape(found[0] if len(found) == 1 else {"anyOf": found})
        for prop, sub in shape.props.items():
            if sub.node == "attribute":
                shape.attributes.setdefault(sub.name or prop, prop)
            elif sub.node == "text" and shape.text is None:
                shape.text = prop
        return shape

    # -- writing -------------------------------------------------------------------------------------------------
    def write(self, value: object) -> str:
        """`value` (valid against the schema) as an XML document."""
        out = ['<?xml version="1.0" encoding="UTF-8"?>']
        root = self.root
        if isinstance(value, list) and not root.wrapped:  # a document has one root element: a list is wrapped
            _element(out, root.name or "root", value, _wrapping(root), 0)
        else:
            _element(out, root.name or "root", value, root, 0)
        return "".join(out)

    # -- reading -------------------------------------------------------------------------------------------------
    def read(self, raw: bytes) -> object:
        """The value an XML body holds by this mapping; BodyError naming what is wrong (not well-formed, a DTD)."""
        return _value(parse(raw), self.root, top=True)


def _xml(schema: object) -> dict[str, object]:
    xml = schema.get("xml") if isinstance(schema, dict) else None
    return xml if isinstance(xml, dict) else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _component(schema: object) -> str | None:
    """The component a root's `$ref` names (its `$defs` key, as the bundler made it from the component's name)."""
    ref = schema.get("$ref") if isinstance(schema, dict) else None
    if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
        return None
    return ref[8:].removesuffix(".request").removesuffix(".response") or None


def _wrapping(shape: Shape) -> Shape:
    """A root array's shape as a wrapped one."""
    wrapped = Shape()
    for slot in Shape.__slots__:
        setattr(wrapped, slot, getattr(shape, slot))
    wrapped.wrapped = True
    return wrapped


# -- names --------------------------------------------------------------------------------------------------------
def encode_name(name: str) -> str:
    """An XML name for `name`: as it is when XML takes it, else each character XML refuses there as `_xHHHH_` (an
    underscore that starts such a run escaped too, so every name reads back as itself)."""
    if _NAME.match(name) and "_x" not in name:
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


# -- writing ------------------------------------------------------------------------------------------------------
def _escape(text: str, quote: bool = False) -> str:
    text = _UNWRITABLE.sub("\ufffd", text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")
    return text.replace('"', "&quot;").replace("\n", "&#10;").replace("\t", "&#9;") if quote else text


def _open(out: list[str], name: str, shape: Shape, attributes: list[str]) -> str:
    tag = encode_name(name)
    if shape.prefix and shape.namespace:
        tag = f"{encode_name(shape.prefix)}:{tag}"
        attributes.insert(0, f' xmlns:{encode_name(shape.prefix)}="{_escape(shape.namespace, True)}"')
    elif shape.namespace:
        attributes.insert(0, f' xmlns="{_escape(shape.namespace, True)}"')
    out.append(f"<{tag}{''.join(attributes)}")
    return tag


def _element(out: list[str], name: str, value: object, shape: Shape, depth: int) -> None:
    if depth > MAX_NESTING:
        raise BodyError("nested too deeply to write as XML")
    if value is None:
        _open(out, name, shape, [f' xsi:nil="true" xmlns:xsi="{XSI}"'])
        out.append("/>")
        return
    attributes: list[str] = []
    children: list[tuple[str, object, Shape]] = []  # (name, value, shape) of each child element
    text = ""
    if isinstance(value, dict):
        for prop, member in value.items():
            sub = shape.child(prop)
            if sub.node == "attribute" and not isinstance(member, (dict, list)):
                if member is not None:
                    attr = encode_name(sub.name or prop)
                    if sub.prefix and sub.namespace:
                        attributes.append(f' xmlns:{encode_name(sub.prefix)}="{_escape(sub.namespace, True)}"')
                        attr = f"{encode_name(sub.prefix)}:{attr}"
                    attributes.append(f' {attr}="{_escape(scalar_text(member), True)}"')
            elif sub.node == "text" and not isinstance(member, (dict, list)) and prop == shape.text:
                text = "" if member is None else scalar_text(member)
            elif isinstance(member, list) and not sub.wrapped:
                children.extend((shape.item_name(prop, i), item, sub.item(i)) for i, item in enumerate(member))
            else:
                children.append((shape.element_name(prop), member, sub))
    elif isinstance(value, list):
        children = [(shape.item(i).name or name, item, shape.item(i)) for i, item in enumerate(value)]
    else:
        text = scalar_text(value)
    tag = _open(out, name, shape, attributes)
    if not children and not text:
        out.append("/>")
        return
    out.append(">")
    out.append(_escape(text))
    for child_name, child, sub in children:
        if isinstance(child, list) and not sub.wrapped:  # an array item that is an array: an element of its own
            sub = _wrapping(sub)
        _element(out, child_name, child, sub, depth + 1)
    out.append(f"</{tag}>")


# -- reading ------------------------------------------------------------------------------------------------------
_XML_NS = "{http://www.w3.org/XML/1998/namespace}"
_NIL = f"{{{XSI}}}nil"
MAX_DEPTH = 256  # levels of elements read (each level a step of the reading's own recursion)
MAX_ELEMENTS = 100_000  # elements read in one document: what a body of --max-body can make the reading walk


def parse(raw: bytes) -> ElementTree.Element:
    """The root element of an XML document; BodyError when it is not well-formed, declares a document type, nests
    deeper than MAX_DEPTH or holds more than MAX_ELEMENTS elements.

    First a pass of expat alone, which calls Python for nothing but a document type declaration (refused there,
    before any entity in it is read); then the standard library's C tree builder on a document known to have none,
    so nothing is expanded."""
    guard = expat.ParserCreate()
    guard.StartDoctypeDeclHandler = _refuse_doctype
    guard.EntityDeclHandler = _refuse_doctype
    guard.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        guard.Parse(raw, True)
    except expat.ExpatError as exc:
        raise BodyError(f"not well-formed XML: {expat.ErrorString(exc.code)} at line {exc.lineno} column"
                        f" {exc.offset + 1}") from None
    try:
        root = ElementTree.fromstring(raw)
    except ElementTree.ParseError as exc:  # (the guard read the same bytes: not expected)
        raise BodyError(f"not well-formed XML: {exc}") from None
    todo, count = [(root, 1)], 0
    while todo:
        element, depth = todo.pop()
        count += 1
        if depth > MAX_DEPTH:
            raise BodyError(f"nested more than {MAX_DEPTH} elements deep; plantstub reads no deeper")
        if count > MAX_ELEMENTS:
            raise BodyError(f"more than {MAX_ELEMENTS:,} elements; plantstub reads at most {MAX_ELEMENTS:,}")
        todo.extend((child, depth + 1) for child in element)
    return root


def _refuse_doctype(*_: object) -> None:
    raise BodyError("a document type declaration (<!DOCTYPE ...>) is not accepted: plantstub reads no DTD, so no entity"
                    " can be declared or expanded")


@lru_cache(maxsize=4096)  # a document repeats its few names
def _local(name: str) -> str:
    """`{namespace}local` -> `local`, its `_xHHHH_` escapes read back."""
    return decode_name(name.rpartition("}")[2] if name[:1] == "{" else name)


def _attributes(element: ElementTree.Element) -> dict[str, str]:
    """An element's attributes by local name, XML Schema instance and `xml:` ones left out."""
    if not element.attrib:
        return {}
    return {_local(name): value for name, value in element.attrib.items()
            if not name.startswith((f"{{{XSI}}}", _XML_NS))}


def _inner_text(element: ElementTree.Element) -> str:
    """The text directly inside an element (before, between and after its children)."""
    parts = [element.text or ""]
    parts += [child.tail or "" for child in element]
    return "".join(parts)


def _value(element: ElementTree.Element, shape: Shape, top: bool = False) -> object:
    """The value `element` holds as `shape` maps it."""
    if element.get(_NIL) in ("true", "1"):
        return None
    children = list(element)
    attributes = _attributes(element)
    types = shape.types
    if top and "array" in types and types <= {"array", "null"}:
        return [_value(child, shape.item(i)) for i, child in enumerate(children)]
    if shape.wrapped and "array" in types:
        return [_value(child, shape.item(i)) for i, child in enumerate(children)]
    if not children and not attributes and shape.text is None:
        text = _inner_text(element)
        containers = types & {"object", "array"}
        if containers == {"array"} and not text.strip():
            return []
        if not ((containers or not types) and not text.strip()):  # an empty element of an object or any value: {}
            return _scalar(text, types)  # an object's place holding a text: the text, which the schema refuses
    out: dict[str, object] = {}
    for name, written in attributes.items():
        prop = shape.attributes.get(name, name)
        out[prop] = _scalar(written, shape.child(prop).types)
    text = _inner_text(element) if shape.text is not None else ""
    if shape.text is not None and text.strip():
        out[shape.text] = _scalar(text, shape.child(shape.text).types)
    index = shape.index()
    lists: dict[str, list[object]] = {}  # a name met again where one value stands: its values so far
    for child in children:
        name = _local(child.tag)
        prop = index.get(name, name)
        sub = shape.child(prop)
        if sub.unwrapped():
            items = out.setdefault(prop, [])
            if isinstance(items, list):
                items.append(_value(child, sub.item(len(items))))
            continue
        value = _value(child, sub)
        if prop in out:  # a name met again where one value stands: a list (which the schema then refuses)
            if prop not in lists:
                out[prop] = lists[prop] = [out[prop]]
            lists[prop].append(value)
        else:
            out[prop] = value
    for prop in shape.required:  # a required array written as no element at all: an empty one
        if prop not in out and shape.child(prop).unwrapped():
            out[prop] = []
    return out


def _scalar(text: str, types: set[str]) -> object:
    """An element's or attribute's text read as `types` read it (null only by `xsi:nil`); the text when none fits."""
    if types & {"integer", "number", "boolean"}:
        value = read_scalar(text.strip(), types - {"null"})
        if not isinstance(value, str):
            return value
    return text
