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

Reading (contract/xml_read.py) uses the standard library (expat, then its C tree builder) with every document type
declaration refused: no entity is ever declared, so none is expanded (no "billion laughs", whatever expat's own
limits), and no external one is fetched; nesting is bounded.
"""

from __future__ import annotations

import re

from plantstub._json import MAX_NESTING, BodyError, scalar_text
from plantstub._memo import IdentityMemo
from plantstub.contract.flatten import def_key, defs_of, flatten, types_of
from plantstub.contract.xml_read import parse, value_of
from plantstub.contract.xml_shape import ANY, NAME, XSI, Shape, encode_name

_UNWRITABLE = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")  # characters XML 1.0 cannot carry


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
        shape.title = _text(flat.get("title")) if NAME.match(str(flat.get("title", ""))) else None
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
        return value_of(parse(raw), self.root, top=True)


def _xml(schema: object) -> dict[str, object]:
    xml = schema.get("xml") if isinstance(schema, dict) else None
    return xml if isinstance(xml, dict) else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _component(schema: object) -> str | None:
    """The component a root's `$ref` names (its `$defs` key, as the bundler made it from the component's name)."""
    key = def_key(schema.get("$ref")) if isinstance(schema, dict) else None
    if key is None:
        return None
    return key.removesuffix(".request").removesuffix(".response") or None


def _wrapping(shape: Shape) -> Shape:
    """A root array's shape as a wrapped one."""
    wrapped = Shape()
    for slot in Shape.__slots__:
        setattr(wrapped, slot, getattr(shape, slot))
    wrapped.wrapped = True
    return wrapped


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
