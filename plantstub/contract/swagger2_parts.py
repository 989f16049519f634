"""Swagger 2.0's objects in OpenAPI 3.0 terms: a parameter's type and `collectionFormat` as a schema with a style,
a response's `schema`, `headers` and `examples` as content, a security definition as a security scheme, and the
few schema keywords 2.0 writes otherwise (`type: file`, `x-nullable`, a `discriminator` that is a name).

The rules are swagger2openapi's (Mermade/oas-kit), the converter most 2.0 documents meet, so a document serves as
its conversion does; where 2.0 means more than that conversion keeps (a form in both form media types, `ssv` in a
header) it is read as 2.0 means it. Each function returns new objects and leaves the document as it was read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import overload

from plantstub._json import shown
from plantstub._memo import IdentityMemo
from plantstub.contract.bundle import join
from plantstub.contract.origins import Steps
from plantstub.contract.schema import SCHEMA_LISTS, SCHEMA_MAPS, SCHEMA_ONE

Warn = Callable[[str, Steps], None]  # a warning, and the 2.0 location it is about

URLENCODED, MULTIPART = "application/x-www-form-urlencoded", "multipart/form-data"
# A parameter's, an items object's or a header's keywords that are a schema's too (2.0, "Parameter Object").
_SCHEMA_WORDS = ("format", "default", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength",
                 "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "enum", "multipleOf")
# `collectionFormat` as a 3.x style: (style, explode) per location. `multi` is query and formData only in 2.0.
_QUERY_STYLES = {"csv": ("form", False), "multi": ("form", True), "ssv": ("spaceDelimited", False),
                 "pipes": ("pipeDelimited", False), "tsv": ("tabDelimited", False)}
_SIMPLE_STYLES = {"csv": ("simple", False), "ssv": ("spaceDelimited", False), "pipes": ("pipeDelimited", False),
                  "tsv": ("tabDelimited", False)}
# The styles a converted document's parameters may have: OpenAPI 3's, and 2.0's delimiters where 3.x has none.
STYLES = {
    "path": ("simple", "label", "matrix", "spaceDelimited", "pipeDelimited", "tabDelimited"),
    "query": ("form", "spaceDelimited", "pipeDelimited", "deepObject", "tabDelimited"),
    "header": ("simple", "spaceDelimited", "pipeDelimited", "tabDelimited"),
    "cookie": ("form",),
}
_FLOWS = {"implicit": "implicit", "password": "password", "application": "clientCredentials",
          "accessCode": "authorizationCode"}


def extensions(raw: dict[str, object]) -> dict[str, object]:
    """The `x-` fields of an object, kept as they are."""
    return {key: value for key, value in raw.items() if isinstance(key, str) and key.startswith("x-")}


# -- schemas --------------------------------------------------------------------------------------------------
class SchemaFixes:
    """Schemas as OpenAPI 3.0 reads them: `type: file` is a binary string, `x-nullable` is `nullable`, a
    `discriminator` naming a property is `{propertyName: ...}`, `x-anyOf`/`x-oneOf`/`x-not`/`x-required` are what
    they stand for, a `required: true` on a property schema joins its parent's `required`. In another file than the
    document, relative `$ref`s are made absolute (the schema is served from the converted document).

    A schema that needs none of it is returned as it is (not copied); one that does is copied along the way to the
    change. Each object is fixed once.
    """

    def __init__(self, main: str) -> None:
        self.main = main  # the document's URI
        self.done: IdentityMemo[dict[str, object]] = IdentityMemo()

    @overload
    def fix(self, node: dict[str, object], base: str) -> dict[str, object]: ...

    @overload
    def fix(self, node: object, base: str) -> object: ...

    def fix(self, node: object, base: str) -> object:
        """`node` fixed (itself when nothing changes); the same object asked again gives the same answer."""
        if not isinstance(node, dict):
            return node
        return self.done.make(node, lambda: self._fix(node, base), base)

    def _fix(self, node: dict[str, object], base: str) -> dict[str, object]:
        # Subschemas first, each fixed without the memo (a tree is walked once); a copy only where one changed.
        changed: dict[str, object] = {}
        for key, value in node.items():
            if key in SCHEMA_MAPS and isinstance(value, dict):
                fixed = _changed_map(value, lambda sub: self._fix(sub, base) if isinstance(sub, dict) else sub)
                if fixed is not value:
                    changed[key] = fixed
            elif key in SCHEMA_LISTS and isinstance(value, list):
                items = [self._fix(sub, base) if isinstance(sub, dict) else sub for sub in value]
                if any(a is not b for a, b in zip(items, value, strict=True)):
                    changed[key] = items
            elif key in SCHEMA_ONE and isinstance(value, dict):
                fixed = self._fix(value, base)
                if fixed is not value:
                    changed[key] = fixed
        if not changed and not _wants_fixing(node, base != self.main):
            return node
        out = {**node, **changed}
        if base != self.main and isinstance(node.get("$ref"), str):
            out["$ref"] = join(base, node["$ref"])
        if node.get("type") == "file":
            out.update(type="string", format="binary")
        # The extensions 2.0 documents write for what 3.0 has keywords for become those keywords.
        if isinstance(node.get("x-nullable"), bool):
            out.setdefault("nullable", out.pop("x-nullable"))
        if isinstance(node.get("discriminator"), str):
            out["discriminator"] = {"propertyName": node["discriminator"]}
        # (`changed` holds subschema keywords only: `out`'s `x-` fields are `node`'s.)
        for word in ("anyOf", "oneOf"):
            if isinstance(branches := node.get(f"x-{word}"), list) and word not in node:
                del out[f"x-{word}"]
                out[word] = [self._fix(sub, base) if isinstance(sub, dict) else sub for sub in branches]
        if isinstance(negated := node.get("x-not"), dict) and "not" not in node:
            del out["x-not"]
            out["not"] = self._fix(negated, base)
        required = listed if isinstance(listed := node.get("required"), list) else []
        if isinstance(more := node.get("x-required"), list):
            del out["x-required"]
            required = [*required, *(name for name in more if name not in required)]
        props = out.get("properties")
        if isinstance(props, dict) and _flags(props):
            # `required: true` on a property (a 2.0 habit): the property is required by its object
            required = [*required, *(name for name, sub in props.items() if isinstance(sub, dict)
                                     and sub.get("required") is True and name not in required)]
            out["properties"] = {name: {k: v for k, v in sub.items() if k != "required"}
                                 if isinstance(sub, dict) and isinstance(sub.get("required"), bool) else sub
                                 for name, sub in props.items()}
        if required:
            out["required"] = required
        elif isinstance(node.get("required"), bool):  # not a schema's keyword: a property's flag, read above
            del out["required"]
        return out


_TRIGGERS = ("x-nullable", "x-anyOf", "x-oneOf", "x-not", "x-required")


def _wants_fixing(node: dict[str, object], elsewhere: bool) -> bool:
    """Whether a schema object itself (not its subschemas) is written in a way 3.0 writes otherwise."""
    if node.get("type") == "file" or isinstance(node.get("discriminator"), str) or isinstance(node.get("required"), bool):
        return True
    if elsewhere and isinstance(node.get("$ref"), str):
        return True
    if any(key in node for key in _TRIGGERS):
        return True
    props = node.get("properties")
    return isinstance(props, dict) and _flags(props)


def _flags(props: dict[str, object]) -> bool:
    return any(isinstance(sub, dict) and isinstance(sub.get("required"), bool) for sub in props.values())


def _changed_map(value: dict[str, object], fix: Callable[[object], object]) -> dict[str, object]:
    """`value` with each entry fixed: `value` itself when none changed, else a copy."""
    out: dict[str, object] | None = None
    for name, sub in value.items():
        fixed = fix(sub)
        if fixed is not sub:
            if out is None:
                out = dict(value)
            out[name] = fixed
    return value if out is None else out


# -- parameters -----------------------------------------------------------------------------------------------
def simple_schema(raw: dict[str, object], fixes: SchemaFixes, base: str) -> dict[str, object]:
    """The schema a non-body parameter, an items object or a header writes inline (`type`, `format`, `items`,
    bounds, `enum`...)."""
    if isinstance(raw.get("$ref"), str):  # not 2.0, but written: a schema by reference
        return fixes.fix({"$ref": raw["$ref"]}, base)
    if raw.get("type") == "file":
        return {"type": "string", "format": "binary"}
    schema: dict[str, object] = {}
    if "type" in raw:
        schema["type"] = raw["type"]
    schema.update((key, raw[key]) for key in _SCHEMA_WORDS if key in raw)
    if isinstance(items := raw.get("items"), dict):
        schema["items"] = simple_schema(items, fixes, base)
    elif "items" in raw:
        schema["items"] = raw["items"]  # not a 2.0 items object: the loader says what is wrong with it
    elif raw.get("type") == "array":
        schema["items"] = {}
    if isinstance(raw.get("x-nullable"), bool):
        schema["nullable"] = raw["x-nullable"]
    return schema


def parameter(raw: dict[str, object], fixes: SchemaFixes, base: str, at: Steps, warn: Warn) -> dict[str, object]:
    """A path, query or header parameter in OpenAPI 3.0 terms (`collectionFormat` as style and explode)."""
    location = raw["in"]
    out: dict[str, object] = {"name": raw["name"], "in": location}
    if "description" in raw:
        out["description"] = raw["description"]
    out["required"] = location == "path" or raw.get("required") is True
    if "type" not in raw and "$ref" not in raw:
        warn(f"{_named(raw)} has no `type`; read as a string", at)
    out["schema"] = simple_schema(raw if "type" in raw or "$ref" in raw else {**raw, "type": "string"}, fixes, base)
    if raw.get("type") == "array":
        style = _style(raw, location, at, warn)
        if style is not None:
            out["style"], out["explode"] = style
    if location == "query" and isinstance(raw.get("allowEmptyValue"), bool):
        out["allowEmptyValue"] = raw["allowEmptyValue"]
    if "x-example" in raw:
        out["example"] = raw["x-example"]
    if isinstance(raw.get("x-deprecated"), bool):
        out["deprecated"] = raw["x-deprecated"]
    out.update(extensions(raw))
    return out


def _named(raw: dict[str, object]) -> str:
    return f"parameter {shown(raw.get('name'))} (in: {raw.get('in')})"


def _style(raw: dict[str, object], location: object, at: Steps, warn: Warn) -> tuple[str, bool] | None:
    """An array parameter's `collectionFormat` (csv when absent) as (style, explode) for its location."""
    written = raw.get("collectionFormat", "csv")
    items = raw.get("items")
    if isinstance(items, dict) and items.get("collectionFormat", written) != written:
        warn(f"{_named(raw)}: an array inside an array (collectionFormat {shown(items['collectionFormat'])} inside"
             f" {shown(written)}): its inner items are read as text", at)
    table = _QUERY_STYLES if location == "query" else _SIMPLE_STYLES
    if not isinstance(written, str) or written not in table:  # (no other value is a key of it)
        known = "csv, ssv, tsv, pipes and multi" if location == "query" else "csv, ssv, tsv and pipes"
        warn(f"{_named(raw)}: collectionFormat {shown(written)} is not one of {known} for a {location} parameter;"
             " read as csv", at)
        written = "csv"
    return table[written]


def form_property(raw: dict[str, object], fixes: SchemaFixes, base: str) -> dict[str, object]:
    """A formData parameter as the property of the form's object schema (a file is a binary string)."""
    schema = simple_schema(raw, fixes, base)
    if "description" in raw:
        schema = {"description": raw["description"], **schema}
    schema.update(extensions(raw))
    return schema


def form_encoding(raw: dict[str, object]) -> dict[str, object] | None:
    """How an array formData field is sent: `multi` repeats the name (the form default), csv and the rest put the
    items in one value (the Encoding Object's style and explode, as OpenAPI 3 writes it)."""
    if raw.get("type") != "array":
        return None
    written = raw.get("collectionFormat", "csv")
    if written == "multi":
        return {"style": "form", "explode": True}
    style, _ = _QUERY_STYLES.get(written, ("form", False)) if isinstance(written, str) else ("form", False)
    return {"style": style, "explode": False}


# -- responses ------------------------------------------------------------------------------------------------
def response(raw: dict[str, object], produces: list[str], fixes: SchemaFixes, base: str, at: Steps,
             warn: Warn) -> dict[str, object]:
    """A 2.0 response: its `schema` under each media type the operation produces (`*/*` when it names none), its
    `examples` by media type, its headers with schemas."""
    out: dict[str, object] = {"description": raw.get("description") if isinstance(raw.get("description"), str) else ""}
    content: dict[str, dict[str, object]] = {}
    if raw.get("schema") is not None:
        schema = fixes.fix(raw["schema"], base)
        for media in produces or ["*/*"]:
            content[media] = {"schema": schema}
    examples = raw.get("examples")
    if isinstance(examples, dict):
        for media, value in examples.items():
            content.setdefault(str(media), {})["examples"] = {"response": {"value": value}}
    if content:
        out["content"] = content
    headers = raw.get("headers")
    if isinstance(headers, dict):
        out["headers"] = {
            str(name): header(spec, fixes, base, (*at, "headers", str(name)), warn)
            for name, spec in headers.items() if isinstance(spec, dict) and str(name).lower() != "status code"
        }
    out.update(extensions(raw))
    return out


def header(raw: dict[str, object], fixes: SchemaFixes, base: str, at: Steps, warn: Warn) -> dict[str, object]:
    out: dict[str, object] = {"schema": simple_schema(raw, fixes, base)}
    if "description" in raw:
        out["description"] = raw["description"]
    if raw.get("type") == "array":
        written = raw.get("collectionFormat", "csv")
        if written == "multi":
            out["explode"] = True
        elif written != "csv":
            warn(f"collectionFormat {shown(written)} of a response header has no OpenAPI 3 style; read as csv", at)
    out.update(extensions(raw))
    return out


# -- security -------------------------------------------------------------------------------------------------
def security_scheme(raw: dict[str, object], at: Steps, warn: Warn) -> dict[str, object]:
    """basic -> http basic; apiKey as it is; oauth2's one `flow` -> `flows`."""
    kind = raw.get("type")
    out: dict[str, object] = {k: v for k, v in raw.items() if k in ("description",) or k.startswith("x-")}
    if kind == "basic":
        out.update(type="http", scheme="basic")
    elif kind == "apiKey":
        out.update(type="apiKey", name=raw.get("name"), **{"in": raw.get("in")})
    elif kind == "oauth2":
        flow: dict[str, object] = {"scopes": raw.get("scopes") if isinstance(raw.get("scopes"), dict) else {}}
        for url in ("authorizationUrl", "tokenUrl"):
            if isinstance(raw.get(url), str):
                flow[url] = raw[url]
        name = _FLOWS.get(str(raw.get("flow")))
        if name is None:
            warn(f"flow: {shown(raw.get('flow'))} is not one of implicit, password, application, accessCode;"
                 " read as implicit", at)
            name = "implicit"
        out.update(type="oauth2", flows={name: flow})
    else:
        out["type"] = kind  # refused by the loader as any unknown type is
    return out
