"""Turn an OpenAPI schema into one self-contained JSON Schema 2020-12 document.

$refs (local, sibling files, recursive) become entries of `$defs`; OpenAPI 3.0 quirks
(`nullable`, boolean `exclusiveMinimum`, ignored `$ref` siblings) are rewritten to mean the
same in 2020-12; `format: int32/int64` become integer bounds, so every validator enforces them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urldefrag, urljoin

INT_BOUNDS = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_ONE = (
    "items", "additionalProperties", "additionalItems", "not", "if", "then", "else", "contains",
    "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema",
)
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")

Lookup = Callable[[str, str, str], "tuple[Any, str]"]


def bundle_schema(node: Any, base: str, lookup: Lookup, *, legacy: bool, where: str) -> dict | bool:
    """Bundle `node` (found at document URI `base`) into a self-contained 2020-12 schema."""
    return _Bundler(lookup, legacy, where).bundle(node, base)


class _Bundler:
    def __init__(self, lookup: Lookup, legacy: bool, where: str) -> None:
        self.lookup = lookup
        self.legacy = legacy
        self.where = where
        self.defs: dict[str, Any] = {}
        self.keys: dict[str, str] = {}  # absolute target URI -> key in $defs

    def bundle(self, node: Any, base: str) -> dict | bool:
        root = self.convert(node, base)
        if self.defs:
            if isinstance(root, bool):
                root = {} if root else {"not": {}}
            root = dict(root)
            root["$defs"] = {**root.get("$defs", {}), **self.defs}
        return root

    def ref(self, ref: str, base: str) -> str:
        target = urljoin(base, ref)
        if target not in self.keys:
            key = self.new_key(target)
            self.keys[target] = key
            self.defs[key] = True  # placeholder: a recursive schema refers to its own key
            contents, target_base = self.lookup(target, self.where, ref)
            self.defs[key] = self.convert(contents, target_base)
        return "#/$defs/" + self.keys[target]

    def new_key(self, target: str) -> str:
        uri, fragment = urldefrag(target)
        name = fragment.rsplit("/", 1)[-1] or uri.rsplit("/", 1)[-1]
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "schema"
        key, n = name, 1
        while key in self.defs:
            n += 1
            key = f"{name}_{n}"
        return key

    def convert(self, node: Any, base: str) -> Any:
        if not isinstance(node, dict):
            return node
        if "$ref" in node and isinstance(node["$ref"], str):
            pointer = self.ref(node["$ref"], base)
            if self.legacy or len(node) == 1:
                return {"$ref": pointer}  # OpenAPI 3.0 ignores a $ref's siblings
            rest = self.convert({k: v for k, v in node.items() if k != "$ref"}, base)
            return {"$ref": pointer, **rest}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "items" and isinstance(value, list):  # draft-4 tuple form in 3.0
                out["prefixItems"] = [self.convert(sub, base) for sub in value]
            elif key in _SCHEMA_MAPS and isinstance(value, dict):
                out[key] = {name: self.convert(sub, base) for name, sub in value.items()}
            elif key in _SCHEMA_ONE:
                out[key] = self.convert(value, base)
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                out[key] = [self.convert(sub, base) for sub in value]
            else:
                out[key] = value
        if self.legacy:
            out = _from_openapi30(out)
        bounds = INT_BOUNDS.get(out.get("format")) if isinstance(out.get("format"), str) else None
        if bounds:
            low, high = bounds
            if not isinstance(out.get("minimum"), (int, float)) or out["minimum"] < low:
                out["minimum"] = low
            if not isinstance(out.get("maximum"), (int, float)) or out["maximum"] > high:
                out["maximum"] = high
        return out


def _from_openapi30(schema: dict[str, Any]) -> dict[str, Any]:
    """Rewrite OpenAPI 3.0 schema keywords to their 2020-12 meaning."""
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if isinstance(schema.get(exclusive), bool):
            flag = schema.pop(exclusive)
            if flag and bound in schema:
                schema[exclusive] = schema.pop(bound)
    if schema.pop("nullable", False) is True:
        kind = schema.get("type")
        if isinstance(kind, str):
            schema["type"] = [kind, "null"]
            if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
                schema["enum"] = [*schema["enum"], None]
        elif isinstance(kind, list):
            if "null" not in kind:
                schema["type"] = [*kind, "null"]
        else:
            return {"anyOf": [{"type": "null"}, schema]}
    return schema
