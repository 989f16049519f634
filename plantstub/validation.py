"""Request checks built once per operation: security, parameters, body. Every violation, not the first."""

from __future__ import annotations

import base64
import binascii
import re
from fnmatch import fnmatchcase
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

import jsonschema
from jsonschema.exceptions import SchemaError

from .errors import SpecError
from .incoming import BodyError, IncomingRequest, decode_json, is_json_type
from .spec import Operation, Parameter, SecurityScheme

try:  # the accelerator answers yes/no; jsonschema still defines behaviour and writes messages
    import jsonschema_rs
except ImportError:  # pragma: no cover - exercised where no wheel exists
    jsonschema_rs = None

MAX_MESSAGE = 240
_JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


@dataclass(frozen=True, slots=True)
class Violation:
    """One contract break: where (`body.id`), what, and the status it earns (400, or 401 for security)."""

    where: str
    message: str
    status: int = 400

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def location_path(root: str, parts: Any) -> str:
    """`body` + [items, 0, name] -> `body.items[0].name`: one notation for every message."""
    text = root
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


# -- formats --------------------------------------------------------------------------------
_DATE_TIME = re.compile(
    r"\A\d{4}-\d{2}-\d{2}[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z"
)
_TIME = re.compile(r"\A(\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z")
_HOSTNAME = re.compile(r"\A(?=.{1,253}\Z)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?\Z")
_URI = re.compile(r"\A[A-Za-z][A-Za-z0-9+.-]*:[^\s]*\Z")

FORMATS = jsonschema.FormatChecker()


@FORMATS.checks("date-time")
def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    m = _DATE_TIME.match(value)
    if not m:
        return False
    try:
        datetime.fromisoformat(value[:10])
    except ValueError:
        return False
    return int(m.group(1)) < 24 and int(m.group(2)) < 60 and int(m.group(3)) < 61


@FORMATS.checks("time")
def _is_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    m = _TIME.match(value)
    return bool(m) and int(m.group(1)) < 24 and int(m.group(2)) < 60 and int(m.group(3)) < 61


@FORMATS.checks("hostname")
def _is_hostname(value: object) -> bool:
    return not isinstance(value, str) or bool(_HOSTNAME.match(value))


@FORMATS.checks("uri")
def _is_uri(value: object) -> bool:
    return not isinstance(value, str) or bool(_URI.match(value))


def _short(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


_DATA_KEYWORDS = ("enum", "const", "default", "example", "examples")  # values, not subschemas


class _Recursive(Exception):
    pass


def inline_refs(schema: Any) -> Any:
    """The bundled schema with its local `$defs` references written in place, when none is recursive.

    Same meaning and messages; jsonschema's message path then skips $ref resolution (about 2x faster).
    A recursive schema is returned as it is.
    """
    if not isinstance(schema, dict) or not isinstance(schema.get("$defs"), dict):
        return schema
    defs = schema["$defs"]

    def walk(node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(item, stack) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
            name = ref[8:]
            if name in stack:
                raise _Recursive
            target = walk(defs[name], (*stack, name))
            rest = {k: walk(v, stack) for k, v in node.items() if k != "$ref"}
            return {"allOf": [target], **rest} if rest else target
        return {k: (v if k in _DATA_KEYWORDS else walk(v, stack)) for k, v in node.items() if k != "$defs"}

    try:
        return walk(schema, ())
    except _Recursive:
        return schema


class SchemaCheck:
    """One compiled schema: a fast yes/no (jsonschema-rs when present) and jsonschema's messages."""

    def __init__(self, schema: dict | bool, where: str, *, accelerate: bool = True, checked: bool = False) -> None:
        # load_spec() checks every schema against the metaschema once; others are checked here.
        if not checked:
            try:
                jsonschema.Draft202012Validator.check_schema(schema)
            except SchemaError as exc:
                raise SpecError(f"{where}: the schema is not valid JSON Schema: {exc.message}") from None
        self.schema = schema
        self.slow = jsonschema.Draft202012Validator(inline_refs(schema), format_checker=FORMATS)
        self.fast = None
        if accelerate and jsonschema_rs is not None:
            try:
                self.fast = jsonschema_rs.Draft202012Validator(schema, validate_formats=True)
            except Exception:  # noqa: BLE001 - e.g. a regex dialect it rejects: jsonschema still works
                self.fast = None

    def errors(self, instance: Any, root: str) -> list[Violation]:
        if self.fast is not None and self.fast.is_valid(instance):
            return []
        try:
            found = sorted(self.slow.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
            # allOf branches can report the same problem twice; say it once.
            unique = dict.fromkeys(Violation(location_path(root, e.absolute_path), _short(e.message)) for e in found)
            return list(unique)
        except RecursionError:
            return [Violation(root, "nested too deeply to check")]

    def is_valid(self, instance: Any) -> bool:
        return not self.errors(instance, "")


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
