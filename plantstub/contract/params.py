"""Parameters as OpenAPI declares them: read from path, query, header or cookie, typed by their schema, checked."""

from __future__ import annotations

import re
from typing import Any

from plantstub._json import MISSING
from plantstub.contract.flatten import defs_of, flatten, types_of
from plantstub.contract.model import Parameter
from plantstub.contract.schema import SchemaCheck, Violation
from plantstub.incoming import IncomingRequest

_JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def schema_types(schema: Any, defs: dict[str, Any] | None = None) -> set[str]:
    """The JSON types a schema names, to read a parameter's or form field's text by (empty: read as text)."""
    return types_of(schema, defs_of(schema) if defs is None else defs) or set()


def read_scalar(text: str, types: set[str]) -> Any:
    """Read a parameter string the way its schema types it; leave it alone when it does not fit."""
    if "integer" in types and re.fullmatch(r"[+-]?\d{1,30}", text):
        return int(text)
    if "number" in types and _JSON_NUMBER.fullmatch(text):
        try:
            number = float(text)
            if number == number and abs(number) != float("inf"):
                return int(text) if re.fullmatch(r"[+-]?\d{1,30}", text) else number
        except ValueError:
            pass
    if "boolean" in types and text in ("true", "false"):
        return text == "true"
    if "null" in types and text in ("", "null"):
        return None
    return text


class ParameterCheck:
    def __init__(self, param: Parameter, where: str, accelerate: bool) -> None:
        self.param = param
        self.types = schema_types(param.schema)
        defs = defs_of(param.schema)
        self.item_types: set[str] = set()
        if "array" in self.types:
            array = flatten(param.schema, defs)
            self.item_types = schema_types(array.get("items", {}) if isinstance(array, dict) else {}, defs)
        self.check = SchemaCheck(param.schema, where, accelerate=accelerate, checked=True) if param.schema is not None else None
        label = {"header": "headers", "cookie": "cookies"}.get(param.location, param.location)
        self.where = f"{label}.{param.name}"

    def value(self, request: IncomingRequest, path_params: dict[str, str], cookies: dict[str, str]) -> Any:
        p = self.param
        if p.location == "path":
            raw: Any = path_params.get(p.name)
            values = None if raw is None else [raw]
        elif p.location == "query":
            values = request.query.get(p.name)
        elif p.location == "header":
            raw = request.headers.get(p.name)
            values = None if raw is None else [raw]
        else:
            raw = cookies.get(p.name)
            values = None if raw is None else [raw]
        if values is None:
            return MISSING
        if "array" in self.types:
            if len(values) == 1 and not (p.location == "query" and p.explode):
                values = values[0].split(",") if values[0] else []
            return [read_scalar(v, self.item_types) for v in values]
        return read_scalar(values[0], self.types)

    def violations(self, request: IncomingRequest, path_params: dict[str, str], cookies: dict[str, str]) -> list[Violation]:
        value = self.value(request, path_params, cookies)
        if value is MISSING:
            return [Violation(self.where, "required parameter is missing")] if self.param.required else []
        if self.check is None:
            return []
        return self.check.errors(value, self.where)
