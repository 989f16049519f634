"""A big OpenAPI 3.0 document made up in code, shaped like Microsoft Graph's: many entity schemas that extend
each other through `allOf`, refer to each other through properties and collections, `anyOf` nullable
references, collection answers with `value` arrays and `@odata.nextLink`, `$select`/`$top` query parameters.

Used by the big-document tests and by `tests/benchmarks/big_spec.py --synthetic`; the same arguments give the
same document. `prose=True` adds what makes most of Graph's bytes: a sentence or three of description on every
property and operation, and an operation summary (Microsoft Graph beta, 47 MB of YAML, is about 60 % such text).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

SCALARS: tuple[dict[str, Any], ...] = (
    {"type": "string"},
    {"type": "string", "format": "date-time", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$"},
    {"type": "integer", "format": "int32", "maximum": 2147483647, "minimum": -2147483648},
    {"type": "boolean"},
    {"type": "number", "format": "double"},
    {"type": "string", "format": "uuid", "pattern": "^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$"},
    {"type": "string", "enum": ["unknown", "enabled", "disabled", "unknownFutureValue"]},
)


WORDS = ("the", "of", "a", "an", "entity", "property", "value", "that", "is", "read-only", "returned", "only", "on",
         "select", "nullable", "supports", "filter", "eq", "ne", "not", "in", "collection", "user", "group", "device",
         "identifier", "unique", "date", "time", "when", "created", "modified", "owner", "represents", "status")


def _prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def _entity(rng: random.Random, i: int, prose: bool = False) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for j in range(rng.randint(4, 20)):
        kind = rng.random()
        name = f"prop{j}"
        if kind < 0.55 or i == 0:
            props[name] = {**rng.choice(SCALARS), "description": f"The {name} of entity {i}.", "nullable": rng.random() < 0.5}
        elif kind < 0.75:  # a navigation property: a nullable reference, as Graph writes it
            props[name] = {"anyOf": [{"$ref": f"#/components/schemas/entity{rng.randrange(i)}"},
                                     {"type": "object", "nullable": True}], "x-ms-navigationProperty": True}
        elif kind < 0.9:
            props[name] = {"type": "array", "items": {"$ref": f"#/components/schemas/entity{rng.randrange(i)}"}}
        else:
            props[name] = {"type": "array", "items": {"type": "string", "nullable": True}}
        if prose:
            props[name]["description"] = _prose(rng, rng.randint(8, 60))
    own = {"title": f"entity{i}", "type": "object", "properties": props}
    if i > 0 and rng.random() < 0.6:  # most entities extend another one
        return {"allOf": [{"$ref": f"#/components/schemas/entity{rng.randrange(i // 2, i)}"}, own]}
    return own


def big_document(schemas: int = 1000, paths: int = 1000, seed: int = 1, prose: bool = False) -> dict[str, Any]:
    """The document: `schemas` entity schemas (each with a collection response) and `paths` path items
    of three operations each (list, get, update); about 0.7 MB per 100 schemas and 100 paths (2.5 MB with `prose`)."""
    rng = random.Random(seed)
    components: dict[str, Any] = {"schemas": {}, "responses": {}, "parameters": {
        "top": {"name": "$top", "in": "query", "schema": {"type": "integer", "minimum": 0}},
        "select": {"name": "$select", "in": "query", "style": "form", "explode": False,
                   "schema": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}},
    }}
    schemas_out = components["schemas"]
    schemas_out["ODataError"] = {"type": "object", "required": ["error"], "properties": {"error": {
        "type": "object", "required": ["code", "message"],
        "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}}
    for i in range(schemas):
        schemas_out[f"entity{i}"] = _entity(rng, i, prose)
        schemas_out[f"entity{i}CollectionResponse"] = {"title": f"Collection of entity{i}", "type": "object", "properties": {
            "@odata.nextLink": {"type": "string", "nullable": True},
            "value": {"type": "array", "items": {"$ref": f"#/components/schemas/entity{i}"}}}}
    components["responses"]["error"] = {"description": "error", "content": {
        "application/json": {"schema": {"$ref": "#/components/schemas/ODataError"}}}}
    out: dict[str, Any] = {}
    for k in range(paths):
        e = rng.randrange(schemas)
        ref = {"$ref": f"#/components/schemas/entity{e}"}
        out[f"/group{k}/items"] = {"get": {
            "operationId": f"group{k}.list", "parameters": [{"$ref": "#/components/parameters/top"},
                                                            {"$ref": "#/components/parameters/select"}],
            "responses": {"200": {"description": "ok", "content": {"application/json": {
                "schema": {"$ref": f"#/components/schemas/entity{e}CollectionResponse"}}}},
                "4XX": {"$ref": "#/components/responses/error"}}}}
        out[f"/group{k}/items/{{item-id}}"] = {
            "parameters": [{"name": "item-id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "get": {"operationId": f"group{k}.get", "parameters": [{"$ref": "#/components/parameters/select"}],
                    "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": ref}}},
                                  "4XX": {"$ref": "#/components/responses/error"}}},
            "patch": {"operationId": f"group{k}.update",
                      "requestBody": {"required": True, "content": {"application/json": {"schema": ref}}},
                      "responses": {"204": {"description": "done"}, "4XX": {"$ref": "#/components/responses/error"}}},
        }
        if prose:
            for operation in (out[f"/group{k}/items"]["get"], *(out[f"/group{k}/items/{{item-id}}"][m] for m in ("get", "patch"))):
                operation["summary"] = _prose(rng, rng.randint(3, 8))
                operation["description"] = _prose(rng, rng.randint(20, 80))
    return {"openapi": "3.0.4", "info": {"title": "Synthetic Graph-like API", "version": "v1.0"},
            "paths": out, "components": components}


def write_big_document(path: Path, schemas: int = 1000, paths: int = 1000, seed: int = 1, prose: bool = False) -> Path:
    """big_document() written as JSON to `path` (a `.yaml` name gets the same text: JSON is YAML, read slower)."""
    path.write_text(json.dumps(big_document(schemas, paths, seed, prose)), encoding="utf-8")
    return path
