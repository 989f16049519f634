"""The sweep's own reading of an OpenAPI 3.x document, independent of plantstub's code.

Files, `$ref`s, operations, and the check every value sent and every answer must pass (jsonschema,
Draft 2020-12, on schemas rewritten from OpenAPI 3.0 as below); `sweep_values.py` makes values,
`sweep_http.py` builds requests and judges answers. Approximations, on purpose kept simple:
- 3.0 schemas: `nullable: true` adds "null" to `type` (and to `enum`); without `type`, the schema
  becomes `anyOf: [null, itself]`. Boolean `exclusiveMinimum`/`exclusiveMaximum` take the value of
  `minimum`/`maximum`. A `$ref`'s siblings are dropped. 3.1 schemas are read as 2020-12 whatever
  `jsonSchemaDialect` or `$schema` say.
- `readOnly` properties are not required in requests, `writeOnly` ones not in answers (only where
  the property is written inline, not behind a `$ref`). `format` is not checked.
- A pattern Python's `re` cannot compile counts as matching (jsonschema uses `re`).
- YAML is read by the 1.2 core schema (only true/false are booleans, keys are strings).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlparse

import jsonschema
import referencing
import referencing.jsonschema
import yaml

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
IGNORED_HEADERS = {"accept", "content-type", "authorization"}


class NoValue(Exception):
    """No value can be made for a schema."""


_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Yaml12(_BASE):  # type: ignore[misc,valid-type]
    """PyYAML read by the YAML 1.2 core schema, mapping keys as strings."""

    def construct_mapping(self, node: Any, deep: bool = False) -> dict:
        return {str(k) if not isinstance(k, str) else k: v for k, v in super().construct_mapping(node, deep).items()}


Yaml12.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in rs if tag.rsplit(":", 1)[-1] not in ("bool", "int", "float", "timestamp")]
    for first, rs in _BASE.yaml_implicit_resolvers.items()
}
for _tag, _rx, _first in (
    ("bool", r"true|True|TRUE|false|False|FALSE", "tTfF"),
    ("int", r"[-+]?[0-9]+", "-+0123456789"),
    ("float", r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
     "-+0123456789."),
):
    Yaml12.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", re.compile(f"^(?:{_rx})$"), list(_first))
Yaml12.add_constructor("tag:yaml.org,2002:int", lambda loader, node: int(loader.construct_scalar(node)))


def read_file(path: Path) -> Any:
    text = path.read_text(encoding="utf-8-sig")
    return json.loads(text) if path.suffix == ".json" else yaml.load(text, Loader=Yaml12)


def convert(node: Any, v30: bool, flavor: str, memo: dict[int, Any]) -> Any:
    """`node` rewritten as 2020-12 (see the module's notes); shared nodes stay shared."""
    if id(node) in memo:
        return memo[id(node)]
    if isinstance(node, list):
        items: list = []
        memo[id(node)] = items
        items.extend(convert(x, v30, flavor, memo) for x in node)
        return items
    if not isinstance(node, dict):
        return node
    out: dict = {}
    memo[id(node)] = out
    if v30 and isinstance(node.get("$ref"), str):
        out["$ref"] = node["$ref"]
        return out
    for key, value in node.items():
        out[key] = convert(value, v30, flavor, memo)
    if v30:
        for flag, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if out.get(flag) is True and isinstance(out.get(bound), int | float):
                out[flag] = out.pop(bound)
            elif isinstance(out.get(flag), bool):
                del out[flag]
        if out.get("nullable") is True:
            if isinstance(out.get("type"), str):
                out["type"] = [out["type"], "null"]
                if isinstance(out.get("enum"), list) and None not in out["enum"]:
                    out["enum"] = [*out["enum"], None]
            elif "type" not in out:
                inner = {k: v for k, v in out.items() if k != "nullable"}
                out.clear()
                out["anyOf"] = [{"type": "null"}, inner]
    props, required = out.get("properties"), out.get("required")
    if isinstance(props, dict) and isinstance(required, list):
        skip = "readOnly" if flavor == "request" else "writeOnly"
        out["required"] = [r for r in required if not (isinstance(props.get(r), dict) and props[r].get(skip) is True)]
    return out


def mapping(node: Any, key: str) -> dict:
    """`node[key]` when both are mappings, else an empty one."""
    value = node.get(key) if isinstance(node, dict) else None
    return value if isinstance(value, dict) else {}


def pointer_get(doc: Any, pointer: str) -> Any:
    for part in pointer.split("/")[1:] if pointer else []:
        part = unquote(part).replace("~1", "/").replace("~0", "~")
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def esc(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


class Document:
    """One OpenAPI document and the files it refers to, raw and as schemas of each flavor."""

    def __init__(self, path: Path) -> None:
        self.uri = path.resolve().as_uri()
        self.raw: dict[str, Any] = {}
        self.root = self.file(self.uri)
        self.v30 = str(self.root.get("openapi", "")).startswith("3.0")
        self.flavors: dict[str, dict[str, Any]] = {"request": {}, "response": {}}
        self.registries: dict[str, referencing.Registry] = {}
        self.unchecked: list[str] = []

    def file(self, uri: str) -> Any:
        if uri not in self.raw:
            if urlparse(uri).scheme != "file":
                raise NoValue(f"not a local file: {uri}")
            self.raw[uri] = read_file(Path(unquote(urlparse(uri).path)))
        return self.raw[uri]

    def converted(self, uri: str, flavor: str) -> Any:
        files = self.flavors[flavor]
        if uri not in files:
            files[uri] = convert(self.file(uri), self.v30, flavor, {})
        return files[uri]

    def deref(self, node: Any, uri: str, ptr: str, flavor: str | None = None) -> tuple[Any, str, str]:
        """Follow `$ref`s: the target, its file and pointer (raw, or of a schema flavor)."""
        for _ in range(50):
            if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
                return node, uri, ptr
            target = urljoin(uri, node["$ref"])
            uri, frag = urldefrag(target)
            ptr = frag
            whole = self.converted(uri, flavor) if flavor else self.file(uri)
            try:
                node = pointer_get(whole, frag)
            except (KeyError, IndexError, ValueError, TypeError):
                raise NoValue(f"$ref {target} not found") from None
        raise NoValue("$ref chain too long")

    def registry(self, flavor: str) -> referencing.Registry:
        """The schemas of every file of the document, as rewritten for `flavor`, read when first referred to."""
        if flavor not in self.registries:
            spec = referencing.jsonschema.DRAFT202012

            def retrieve(uri: str) -> referencing.Resource:
                return spec.create_resource(self.converted(uri, flavor))  # a failure becomes Unretrievable

            self.registries[flavor] = referencing.Registry(retrieve=retrieve)  # type: ignore[call-arg]
        return self.registries[flavor]

    def errors(self, value: Any, uri: str, ptr: str, flavor: str) -> str | None:
        """Why `value` breaks the schema at uri#ptr; None when valid, or when it cannot be checked
        (the reason is then added to `self.unchecked`)."""
        try:
            validator = jsonschema.Draft202012Validator({"$ref": f"{uri}#{ptr}"}, registry=self.registry(flavor))
            best = jsonschema.exceptions.best_match(validator.iter_errors(value))
        except Exception as exc:  # a pattern `re` refuses, an unresolvable $ref, a loop: not checkable
            self.unchecked.append(f"{type(exc).__name__}: {exc}"[:200])
            return None
        if best is None:
            return None
        where = "/".join(str(p) for p in best.absolute_path)
        return f"{where or '(root)'}: {best.message[:300]}"

    def operations(self) -> list[tuple[str, str, dict, str, str, list]]:
        """(method, path, operation, file, pointer, path-level parameters), sorted by path then method."""
        out = []
        paths = self.root.get("paths") or {}
        for path in sorted(paths):
            try:
                item, uri, ptr = self.deref(paths[path], self.uri, f"/paths/{esc(path)}")
            except NoValue:
                continue
            if not isinstance(item, dict):
                continue
            common = item.get("parameters") or []
            for method in METHODS:
                if isinstance(item.get(method), dict):
                    out.append((method, path, item[method], uri, f"{ptr}/{method}", [(p, uri, f"{ptr}/parameters/{i}")
                                for i, p in enumerate(common)]))
        return out
