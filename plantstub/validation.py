"""Request checks built once per operation: security, parameters, body. Every violation, not the first."""

from __future__ import annotations

import base64
import binascii
import re
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import parse_qs

from .incoming import BodyError, IncomingRequest, decode_json, is_json_type
from .schema_check import MAX_MESSAGE, SchemaCheck, Violation, jsonschema_rs, location_path  # noqa: F401 - re-exported
from .spec import Operation, Parameter, SecurityScheme

_JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


# -- parameters -----------------------------------------------------------------------------
def _types(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return set()
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return set(kind)
    found: set[str] = set()
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(key) or []:
            found |= _types(sub)
    if "$ref" in schema and "$defs" in schema:
        found |= _types(schema["$defs"].get(schema["$ref"].rsplit("/", 1)[-1]))
    return found


def _scalar(text: str, types: set[str]) -> Any:
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
        self.types = _types(param.schema)
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
            return _ABSENT
        if "array" in self.types:
            items = self.param.schema.get("items", {}) if isinstance(self.param.schema, dict) else {}
            if len(values) == 1 and not (p.location == "query" and p.explode):
                values = values[0].split(",") if values[0] else []
            return [_scalar(v, _types(items)) for v in values]
        return _scalar(values[0], self.types)

    def violations(self, request: IncomingRequest, path_params: dict[str, str], cookies: dict[str, str]) -> list[Violation]:
        value = self.value(request, path_params, cookies)
        if value is _ABSENT:
            return [Violation(self.where, "required parameter is missing")] if self.param.required else []
        if self.check is None:
            return []
        return self.check.errors(value, self.where)


_ABSENT = object()


# -- security --------------------------------------------------------------------------------
def _scheme_problem(scheme: SecurityScheme, request: IncomingRequest, cookies: dict[str, str]) -> str | None:
    if scheme.type == "apiKey":
        if scheme.location == "query":
            present = bool((request.query.get(scheme.param) or [""])[0])
            where = f"query.{scheme.param}"
        elif scheme.location == "cookie":
            present, where = bool(cookies.get(scheme.param)), f"cookies.{scheme.param}"
        else:
            present, where = bool(request.headers.get(scheme.param)), f"headers.{scheme.param}"
        return None if present else f"{where}: missing API key ({scheme.name})"
    if scheme.type == "mutualTLS":
        return None  # a stub cannot see client certificates
    auth = request.headers.get("Authorization") or ""
    word, _, credential = auth.strip().partition(" ")
    credential = credential.strip()
    expected = "Basic" if scheme.type == "http" and scheme.scheme == "basic" else "Bearer"
    if scheme.type == "http" and scheme.scheme not in ("bearer", "basic"):
        expected = scheme.scheme.capitalize() or "Bearer"
    if not auth:
        return f"headers.Authorization: missing; expected '{expected} <credentials>' ({scheme.name})"
    if word.lower() != expected.lower() or not credential:
        return f"headers.Authorization: expected '{expected} <credentials>' ({scheme.name})"
    if expected == "Basic":
        try:
            if b":" not in base64.b64decode(credential, validate=True):
                return "headers.Authorization: Basic credentials must be base64 of 'user:password'"
        except (binascii.Error, ValueError):
            return "headers.Authorization: Basic credentials are not valid base64"
    return None


def challenge(op: Operation) -> str:
    """The WWW-Authenticate value for a 401 on `op`."""
    words = []
    for alternative in op.security:
        for scheme in alternative:
            if scheme.type == "http" and scheme.scheme == "basic":
                word = 'Basic realm="plantstub"'
            elif scheme.type in ("http", "oauth2", "openIdConnect"):
                word = "Bearer" if scheme.type != "http" else (scheme.scheme.capitalize() or "Bearer")
            else:
                continue
            if word not in words:
                words.append(word)
    return ", ".join(words) or "Bearer"


# -- whole request ---------------------------------------------------------------------------
class RequestCheck:
    """Everything needed to validate requests to one operation, compiled once at start."""

    def __init__(self, op: Operation, accelerate: bool = True) -> None:
        self.op = op
        self.params = [
            ParameterCheck(p, f"{op.label} parameter {p.name}", accelerate) for p in op.parameters
        ]
        self.uses_cookies = any(p.location == "cookie" for p in op.parameters) or any(
            s.location == "cookie" for alt in op.security for s in alt
        )
        only = op.security[0] if len(op.security) == 1 and len(op.security[0]) == 1 else ()
        self.bearer_only = bool(only) and (
            (only[0].type == "http" and only[0].scheme == "bearer") or only[0].type in ("oauth2", "openIdConnect")
        )
        self.bodies: dict[str, SchemaCheck | None] = {}
        for name, media in (op.body or {}).items():
            self.bodies[name.lower()] = (
                SchemaCheck(media.schema, f"{op.label} requestBody {name}", accelerate=accelerate, checked=True)
                if media.schema is not None
                else None
            )

    def security_violations(self, request: IncomingRequest, cookies: dict[str, str]) -> list[Violation]:
        if not self.op.security:
            return []
        if self.bearer_only:  # the common case, checked without building any message
            word, _, credential = (request.headers.get("Authorization") or "").strip().partition(" ")
            if word.lower() == "bearer" and credential.strip():
                return []
        problems: list[str] = []
        for alternative in self.op.security:
            found = [p for p in (_scheme_problem(s, request, cookies) for s in alternative) if p]
            if not found:
                return []
            problems.extend(p for p in found if p not in problems)
        where, _, message = problems[0].partition(": ")
        if len(problems) > 1:
            message = " or ".join(problems)
            where = "security"
        return [Violation(where, message, 401)]

    def media_for(self, content_type: str) -> str | None:
        if content_type in self.bodies:
            return content_type
        # Wildcards (application/*+json, text/*, */*): the longest pattern that fits is the most specific.
        fitting = [name for name in self.bodies if "*" in name and fnmatchcase(content_type, name)]
        return max(fitting, key=len) if fitting else None

    def body_violations(self, request: IncomingRequest) -> tuple[list[Violation], Any]:
        if not self.bodies:
            return [], None
        raw = request.raw
        if not raw:
            if self.op.body_required:
                expected = ", ".join(self.bodies)
                return [Violation("body", f"a request body is required ({expected})")], None
            return [], None
        content_type = request.content_type
        media = self.media_for(content_type)
        if media is None:
            got = repr(content_type) if content_type else "missing"
            return [Violation("headers.Content-Type", f"{got} is not accepted; expected {', '.join(self.bodies)}")], None
        check = self.bodies[media]
        if is_json_type(content_type):
            try:
                value = decode_json(raw)
            except BodyError as exc:
                return [Violation("body", str(exc))], None
        elif content_type == "application/x-www-form-urlencoded":
            try:
                fields = parse_qs(raw.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
            except UnicodeDecodeError as exc:
                return [Violation("body", f"not valid UTF-8 ({exc.reason} at byte {exc.start})")], None
            props = check.schema.get("properties", {}) if check and isinstance(check.schema, dict) else {}
            value = {
                name: (_scalar(vals[0], _types(props.get(name))) if len(vals) == 1 else vals)
                for name, vals in fields.items()
            }
        else:
            return [], None  # binary and other media: accepted as sent
        if check is None:
            return [], value
        return check.errors(value, "body"), value

    def violations(self, request: IncomingRequest, path_params: dict[str, str]) -> tuple[list[Violation], Any]:
        """All violations of `request` against the operation, and the parsed body (None if none)."""
        cookies = request.cookies() if self.uses_cookies else {}
        found = self.security_violations(request, cookies)
        for param in self.params:
            found.extend(param.violations(request, path_params, cookies))
        body_found, body = self.body_violations(request)
        found.extend(body_found)
        return found, body
