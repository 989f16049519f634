"""A loaded Spec as JSON-typed data and back (contract/spec_cache.py stores it).

Bundled schemas share objects: every bundle of a document holds the one `$defs` mapping, and a schema met at
several places is one object. Both are written once and shared again when read back, so a cached spec takes
the memory of a loaded one, and what is compiled once per object (contract/shared.py) still is.
"""

from __future__ import annotations

from collections.abc import Sized
from typing import Any

from plantstub._json import MISSING
from plantstub._memo import IdentityMemo
from plantstub.contract.model import MediaType, Operation, Parameter, Response, SecurityScheme, Spec, Webhook
from plantstub.contract.property_map import PropertyMap

FORMAT = 6  # raised whenever what encode() writes changes (or what bundling makes of a schema)


class Corrupt(ValueError):
    """Data that encode() did not write."""


class _Writer:
    """Each distinct schema object (and each distinct `$defs` mapping) once, named by its index."""

    def __init__(self) -> None:
        self.schemas: list[tuple[dict[str, object], int | None]] = []  # (schema without its `$defs`, its `$defs`' index)
        self.defs: list[dict[str, object]] = []
        self.seen: IdentityMemo[int] = IdentityMemo()  # schema -> its index
        self.seen_defs: IdentityMemo[int] = IdentityMemo()

    def schema(self, schema: dict | bool | None) -> int | bool | None:
        if not isinstance(schema, dict):
            return schema  # True, False or None
        at = self.seen.get(schema)
        if at is None:
            defs, body = schema.get("$defs"), schema
            which = None
            if isinstance(defs, dict):
                which = self.seen_defs.get(defs)
                if which is None:
                    which = self.seen_defs.put(defs, len(self.defs))
                    self.defs.append(defs)
                body = {k: v for k, v in schema.items() if k != "$defs"}
            at = self.seen.put(schema, len(self.schemas))
            self.schemas.append((body, which))  # written as a JSON array, as a list was
        return at

    def media(self, media: MediaType) -> list[object]:
        example = [] if media.example is MISSING else [media.example]
        return [media.name, self.schema(media.schema), example, media.examples, self.schema(media.item_schema)]

    def operation(self, op: Operation) -> dict[str, object]:
        return {
            "method": op.method, "path": op.path, "id": op.operation_id,
            "parameters": [[p.name, p.location, p.required, self.schema(p.schema), p.explode, p.style, p.media]
                           for p in op.parameters],
            "body_required": op.body_required,
            "body": None if op.body is None else [self.media(m) for m in op.body.values()],
            "responses": [[r.status, r.description, [self.media(m) for m in r.content.values()],
                           {name: self.schema(s) for name, s in r.headers.items()}, list(r.required_headers)]
                          for r in op.responses.values()],
            "security": [[[s.name, s.type, s.scheme, s.location, s.param] for s in alt] for alt in op.security],
            "callbacks": [self.webhook(w) for w in op.callbacks],
        }

    def webhook(self, hook: Webhook) -> list[object]:
        return [hook.name, self.operation(hook.operation), hook.expression]


def encode(spec: Spec) -> dict[str, object]:
    """`spec` as JSON-typed data (lists, mappings, text, numbers); decode() gives it back."""
    writer = _Writer()
    operations = [writer.operation(op) for op in spec.operations]
    webhooks = [writer.webhook(hook) for hook in spec.webhooks]
    # The shared validator's property map, its places named by index (None: walked again when read back).
    mapped = None if spec.property_map is None else spec.property_map.to_json(writer.schema)
    return {
        "source": spec.source, "openapi": spec.openapi, "title": spec.title, "version": spec.version,
        "warnings": list(spec.warnings), "annotated": sorted(spec.annotated),
        "defs": writer.defs, "schemas": writer.schemas, "operations": operations, "webhooks": webhooks,
        "property_map": mapped,
    }


# Reading back, each field is read as encode() wrote it, unchecked (see media() below): the data is Any here.
class _Reader:
    def __init__(self, defs: object, schemas: object) -> None:
        if not isinstance(defs, list) or not isinstance(schemas, list):
            raise Corrupt("no schemas")
        self.schemas: list[dict[str, object]] = []
        for body, which in schemas:
            if not isinstance(body, dict):
                raise Corrupt("a schema that is not a mapping")
            if which is not None:
                body["$defs"] = _mapping(defs[_index(which, defs)])
            self.schemas.append(body)

    def schema(self, value: object) -> dict | bool | None:
        if type(value) is int and value >= 0:  # the usual case first (a big spec reads 100,000 of them)
            return self.schemas[value]  # IndexError past the end
        if value is None or value is True or value is False:
            return value
        raise Corrupt("a schema index out of range")

    # What an entry holds was written by encode(): its hash, checked before, says so (spec_cache.py). Types are
    # not checked again field by field (a fifth of the time to read a spec back); a shape encode() never writes
    # raises KeyError, TypeError, ValueError or IndexError.
    def media(self, raw: Any) -> MediaType:
        name, schema, example, examples, items = raw
        return MediaType(name, self.schema(schema), example[0] if example else MISSING, _mapping(examples),
                         self.schema(items))

    def operation(self, raw: Any) -> Operation:
        body = raw["body"]
        return Operation(
            method=_text(raw["method"]), path=_text(raw["path"]), operation_id=raw["id"],
            parameters=tuple(Parameter(n, loc, req, self.schema(s), ex, st, md)
                             for n, loc, req, s, ex, st, md in raw["parameters"]),
            body_required=raw["body_required"],
            body=None if body is None else {m.name: m for m in map(self.media, body)},
            responses={status: Response(status, text, {m.name: m for m in map(self.media, content)},
                                        {k: self.schema(v) for k, v in headers.items()}, tuple(map(_text, required)))
                       for status, text, content, headers, required in raw["responses"]},
            security=tuple(tuple(SecurityScheme(*scheme) for scheme in alt) for alt in raw["security"]),
            callbacks=tuple(map(self.webhook, raw["callbacks"])),
        )

    def webhook(self, raw: Any) -> Webhook:
        name, operation, expression = raw
        return Webhook(_text(name), self.operation(operation), _text(expression))


def decode(data: Any) -> Spec:
    """The Spec encode() wrote as `data`; Corrupt (a ValueError), KeyError, TypeError or IndexError if it did not."""
    reader = _Reader(data["defs"], data["schemas"])
    return Spec(
        source=_text(data["source"]), openapi=_text(data["openapi"]), title=_text(data["title"]),
        version=_text(data["version"]),
        operations=tuple(map(reader.operation, data["operations"])),
        warnings=tuple(map(_text, data["warnings"])),
        webhooks=tuple(map(reader.webhook, data["webhooks"])),
        annotated=frozenset(map(_text, data["annotated"])),
        property_map=None if data["property_map"] is None else PropertyMap.from_json(data["property_map"], reader.schemas),
    )


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise Corrupt(f"expected text, found {type(value).__name__}")
    return value


def _mapping(value: object) -> dict[str, object]:
    if not isinstance(value, dict):
        raise Corrupt(f"expected a mapping, found {type(value).__name__}")
    return value


def _index(value: object, into: Sized) -> int:
    if type(value) is not int or not 0 <= value < len(into):
        raise Corrupt("a schema index out of range")
    return value
