"""OpenAPI 3.2's `in: querystring` parameter: the whole query string as one value of its media type, checked as one.

`application/x-www-form-urlencoded` is read as a form body is (each name typed by its property's schema, a name
whose schema is an array a list), JSON is parsed from the percent-decoded text, any other type is that text.
Problems are located under `query` (`query.limit: 'x' is not of type 'integer'`).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import unquote

from plantstub._json import BodyError, decode_json, essence, is_json
from plantstub.contract.compiled import Checks
from plantstub.contract.forms import FormFields
from plantstub.contract.model import Parameter
from plantstub.contract.schema import SchemaCheck, Violation
from plantstub.incoming import IncomingRequest

_URLENCODED = "application/x-www-form-urlencoded"


class QuerystringCheck:
    """One `in: querystring` parameter, compiled: how the query string is read, and its schema's check."""

    where = "query"

    def __init__(self, param: Parameter, checks: Checks | None = None) -> None:
        self.param = param
        self.form = FormFields(param.schema) if essence(param.media) == _URLENCODED else None
        self.check: SchemaCheck | None = None
        if param.schema is not None:
            where = f"parameter {param.name} (querystring)"
            self.check = (checks.check(param.schema, where=where) if checks is not None
                          else SchemaCheck(param.schema, where, checked=True))

    def violations(self, request: IncomingRequest, path_params: Mapping[str, str],
                   cookies: Mapping[str, str]) -> list[Violation]:
        text = request.raw_query
        if not text:
            return [Violation(self.where, "required query string is missing")] if self.param.required else []
        value: object
        try:
            if self.form is not None:
                value = self.form.urlencoded(text.encode("utf-8"))
            elif is_json(self.param.media):
                value = decode_json(unquote(text).encode("utf-8"))
            else:
                value = unquote(text)
        except BodyError as exc:
            return [Violation(self.where, f"{exc} ({self.param.media})")]
        return [] if self.check is None else self.check.errors(value, self.where)
