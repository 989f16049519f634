"""XML read back into a value by a shape (contract/xml_shape.py): expat first, with every document type declaration
refused, so no entity is ever declared or expanded and none fetched; then the C tree builder; nesting and element
count bounded."""

from __future__ import annotations

from functools import lru_cache
from typing import Any
from xml.etree import ElementTree
from xml.parsers import expat

from plantstub._json import BodyError
from plantstub.contract.params import read_scalar
from plantstub.contract.xml_shape import XSI, Shape, decode_name

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


def _refuse_doctype(*_: Any) -> None:
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


def value_of(element: ElementTree.Element, shape: Shape, top: bool = False) -> Any:
    """The value `element` holds as `shape` maps it."""
    if element.get(_NIL) in ("true", "1"):
        return None
    children = list(element)
    attributes = _attributes(element)
    types = shape.types
    if top and "array" in types and types <= {"array", "null"}:
        return [value_of(child, shape.item(i)) for i, child in enumerate(children)]
    if shape.wrapped and "array" in types:
        return [value_of(child, shape.item(i)) for i, child in enumerate(children)]
    if not children and not attributes and shape.text is None:
        text = _inner_text(element)
        containers = types & {"object", "array"}
        if containers == {"array"} and not text.strip():
            return []
        if not ((containers or not types) and not text.strip()):  # an empty element of an object or any value: {}
            return _scalar(text, types)  # an object's place holding a text: the text, which the schema refuses
    out: dict[str, Any] = {}
    for name, value in attributes.items():
        prop = shape.attributes.get(name, name)
        out[prop] = _scalar(value, shape.child(prop).types)
    text = _inner_text(element) if shape.text is not None else ""
    if shape.text is not None and text.strip():
        out[shape.text] = _scalar(text, shape.child(shape.text).types)
    index = shape.index()
    lists: set[str] = set()
    for child in children:
        name = _local(child.tag)
        prop = index.get(name, name)
        sub = shape.child(prop)
        if sub.unwrapped():
            items = out.setdefault(prop, [])
            if isinstance(items, list):
                items.append(value_of(child, sub.item(len(items))))
            continue
        value = value_of(child, sub)
        if prop in out:  # a name met again where one value stands: a list (which the schema then refuses)
            if prop not in lists:
                out[prop] = [out[prop]]
                lists.add(prop)
            out[prop].append(value)
        else:
            out[prop] = value
    for prop in shape.required:  # a required array written as no element at all: an empty one
        if prop not in out and shape.child(prop).unwrapped():
            out[prop] = []
    return out


def _scalar(text: str, types: set[str]) -> Any:
    """An element's or attribute's text read as `types` read it (null only by `xsi:nil`); the text when none fits."""
    if types & {"integer", "number", "boolean"}:
        value = read_scalar(text.strip(), types - {"null"})
        if not isinstance(value, str):
            return value
    return text
