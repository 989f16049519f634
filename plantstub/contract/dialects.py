"""JSON Schema dialects: which one a schema is written in, and its keywords rewritten to their 2020-12 meaning.

plantstub validates everything as Draft 2020-12. An OpenAPI 3.0 document's schemas (draft-04 plus
`nullable`), an OpenAPI 3.1 document whose `jsonSchemaDialect` names an older draft, and a Schema Object
with its own `$schema` are rewritten keyword by keyword to mean the same in 2020-12 (contract/bundle.py
calls `to_2020_12` on every schema object it converts).
"""

from __future__ import annotations

from typing import cast

OAS30 = "OpenAPI 3.0"  # draft-04 with OpenAPI's changes (`nullable`, no `id`)
DRAFT4, DRAFT6, DRAFT7, DRAFT2019, DRAFT2020 = "draft-04", "draft-06", "draft-07", "2019-09", "2020-12"
SUPPORTED = "draft-04, draft-06, draft-07, 2019-09, 2020-12 and the OpenAPI 3.1 and 3.2 dialects"

# A dialect URI without its scheme (http or https) and trailing `#`, to the draft it names.
_KNOWN = {
    "json-schema.org/draft-04/schema": DRAFT4,
    "json-schema.org/draft-04/hyper-schema": DRAFT4,
    "json-schema.org/draft-06/schema": DRAFT6,
    "json-schema.org/draft-06/hyper-schema": DRAFT6,
    "json-schema.org/draft-07/schema": DRAFT7,
    "json-schema.org/draft-07/hyper-schema": DRAFT7,
    "json-schema.org/draft/2019-09/schema": DRAFT2019,
    "json-schema.org/draft/2019-09/hyper-schema": DRAFT2019,
    "json-schema.org/draft/2020-12/schema": DRAFT2020,
    "json-schema.org/draft/2020-12/hyper-schema": DRAFT2020,
}
# `base` and dated ones: 2020-12 plus OpenAPI's annotations (3.2 names its own dialect too)
_OAS31 = ("spec.openapis.org/oas/3.1/dialect/", "spec.openapis.org/oas/3.2/dialect/")
_TOO_OLD = ("json-schema.org/draft-00/", "json-schema.org/draft-01/", "json-schema.org/draft-02/",
            "json-schema.org/draft-03/")
_SIBLINGS_IGNORED = (OAS30, DRAFT4, DRAFT6, DRAFT7)  # before 2019-09 a `$ref` replaces its whole object
_DEPENDENCIES = (OAS30, DRAFT4, DRAFT6, DRAFT7)  # `dependencies`, split in two by 2019-09


class UnknownDialect(ValueError):
    """A dialect URI plantstub does not know (read as 2020-12, with a warning)."""


class UnsupportedDialect(ValueError):
    """A dialect URI plantstub knows and cannot serve (draft-03 and older)."""


def dialect_named(uri: str) -> str:
    """The dialect a `$schema` or `jsonSchemaDialect` URI names.

    Raises UnknownDialect for a URI it does not know, UnsupportedDialect for draft-03 and older.
    """
    key = uri.strip().removesuffix("#").removesuffix("/")
    for scheme in ("https://", "http://"):
        key = key.removeprefix(scheme)
    if key in _KNOWN:
        return _KNOWN[key]
    if key.startswith(_OAS31):
        return DRAFT2020
    if key.startswith(_TOO_OLD):
        raise UnsupportedDialect(f"JSON Schema {key.split('/')[1]} is not supported (plantstub reads {SUPPORTED})")
    raise UnknownDialect(uri)


def ref_siblings_ignored(dialect: str) -> bool:
    """Whether, in `dialect`, the keywords beside a `$ref` are ignored (draft-07 and older)."""
    return dialect in _SIBLINGS_IGNORED


def to_2020_12(schema: dict[str, object], dialect: str) -> dict[str, object]:
    """Rewrite one schema object's own keywords (its subschemas are already converted) to 2020-12."""
    schema.pop("$schema", None)  # the result is 2020-12, whatever it was written in
    # A schema's identifier: every `$ref` is bundled already (one `#/$defs/...` pointer), none may resolve against it.
    schema.pop("$id", None)
    if dialect in (OAS30, DRAFT4):
        if isinstance(schema.get("id"), str):
            del schema["id"]  # draft-04's `$id`
        for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
            if isinstance(schema.get(exclusive), bool):
                flag = schema.pop(exclusive)
                if flag and bound in schema:
                    schema[exclusive] = schema.pop(bound)
    if dialect in _DEPENDENCIES and isinstance(dependencies := schema.get("dependencies"), dict):
        del schema["dependencies"]
        for name, needs in dependencies.items():
            key = "dependentRequired" if isinstance(needs, list) else "dependentSchemas"
            # A `dependent*` field written beside (no keyword before 2019-09) is merged into, as it always was.
            cast("dict[str, object]", schema.setdefault(key, {}))[name] = needs
    if dialect == OAS30:
        return _nullable(schema)
    return schema


def tuple_items(schema: dict[str, object], converted: dict[str, object]) -> None:
    """`items: [a, b]` (before 2020-12) is `prefixItems`, and then `additionalItems` is the new `items`.

    `converted` holds the subschemas already converted under their old keywords; `schema` is the result.
    """
    if "prefixItems" in schema and "additionalItems" in converted:
        schema["items"] = converted["additionalItems"]
    schema.pop("additionalItems", None)  # beside a single `items` schema it applied to nothing


def _nullable(schema: dict[str, object]) -> dict[str, object]:
    """OpenAPI 3.0's `nullable: true`: null is allowed too, also where an `allOf`/`oneOf`/`anyOf` beside it would
    refuse it (Plaid's nullable address whose allOf part is an object): what the document means, as clients read it."""
    if schema.pop("nullable", False) is not True:
        return schema
    kind = schema.get("type")
    if any(key in schema for key in ("allOf", "oneOf", "anyOf")):
        return {"anyOf": [{"type": "null"}, schema]}
    if isinstance(kind, str):
        schema["type"] = [kind, "null"]
        if isinstance(enum := schema.get("enum"), list) and None not in enum:
            schema["enum"] = [*enum, None]
    elif isinstance(kind, list):
        if "null" not in kind:
            schema["type"] = [*kind, "null"]
    else:
        return {"anyOf": [{"type": "null"}, schema]}
    return schema
