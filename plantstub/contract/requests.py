"""Request checks built once per operation: security, parameters, body. Every violation, not the first."""

from __future__ import annotations

import base64
import binascii

from plantstub._json import BodyError, decode_json, is_json, match_media
from plantstub.contract.compiled import Checks
from plantstub.contract.forms import FormFields
from plantstub.contract.media import TextBody
from plantstub.contract.model import Operation, SecurityScheme
from plantstub.contract.params import ParameterCheck
from plantstub.contract.querystring import QuerystringCheck
from plantstub.contract.schema import LARGE, SchemaCheck, Violation
from plantstub.contract.streams import StreamCheck, is_stream
from plantstub.incoming import IncomingRequest


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
def _compiled(schema: dict | bool | None, where: str, checks: Checks | None) -> SchemaCheck | None:
    """The check of one schema of the operation: from the spec's `checks` when given."""
    if schema is None:
        return None
    if checks is not None:
        return checks.check(schema, where=where)
    return SchemaCheck(schema, where, checked=True)


_URLENCODED = "application/x-www-form-urlencoded"
_FORMS = (_URLENCODED, "multipart/form-data")
_ANY_FORM = FormFields(True)  # a form media type declared without a schema: its fields as text


class RequestCheck:
    """Everything needed to validate requests to one operation, compiled once at start."""

    def __init__(self, op: Operation, checks: Checks | None = None) -> None:
        """`checks`: the spec's compiled schemas (contract/compiled.py); else each schema is compiled here."""
        self.op = op
        # What an exploded form object spread over the query leaves alone: the other query names, API keys included.
        in_query = [p.name for p in op.parameters if p.location == "query"] + [
            s.param for alt in op.security for s in alt if s.type == "apiKey" and s.location == "query"]
        self.params: list[ParameterCheck | QuerystringCheck] = [
            ParameterCheck(p, f"{op.label} parameter {p.name}", frozenset(in_query) - {p.name}, checks)
            if p.location != "querystring" else QuerystringCheck(p, checks)
            for p in op.parameters
        ]
        self.uses_cookies = any(p.location == "cookie" for p in op.parameters) or any(
            s.location == "cookie" for alt in op.security for s in alt
        )
        only = op.security[0][0] if len(op.security) == 1 and len(op.security[0]) == 1 else None
        self.bearer_only = only is not None and (
            (only.type == "http" and only.scheme == "bearer") or only.type in ("oauth2", "openIdConnect")
        )
        self.bodies: dict[str, SchemaCheck | None] = {}
        self._media_for: dict[str, str | None] = {}
        # A form body's fields arrive as text: each is read by the JSON types its property names (not needed
        # for a JSON body, whose folded schema can take milliseconds to make: done only where a form may come).
        self.forms: dict[str, FormFields] = {}
        self.streams: dict[str, StreamCheck] = {}  # OpenAPI 3.2: a sequential media type's items, each checked
        self.texts: dict[str, TextBody] = {}  # XML, YAML, a number as text: read into the value the schema checks
        for name, media in (op.body or {}).items():
            if is_stream(media):
                item = _compiled(media.item_schema, f"{op.label} requestBody {name} itemSchema", checks)
                self.streams[name.lower()] = StreamCheck(name, item, _compiled(media.schema, name, checks))
            elif media.schema is not None and not is_json(name):
                self.forms[name.lower()] = FormFields(media.schema)
                text = TextBody(name, media.schema)
                if text.holds_values:
                    self.texts[name.lower()] = text
            self.bodies[name.lower()] = _compiled(media.schema, f"{op.label} requestBody {name}", checks)

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
        """The declared body media type a request's Content-Type is read as, if any."""
        try:
            return self._media_for[content_type]
        except KeyError:
            pass
        found = match_media(content_type, self.bodies)
        if len(self._media_for) < 256:  # clients send few distinct types; a hostile one cannot grow it
            self._media_for[content_type] = found
        return found

    def body_violations(self, request: IncomingRequest) -> tuple[list[Violation], object]:
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
        if self.streams and media in self.streams:
            return self.streams[media].violations(raw)
        if is_json(content_type):
            try:
                value = decode_json(raw)
            except BodyError as exc:
                return [Violation("body", str(exc))], None
        elif content_type in _FORMS:
            form = self.forms.get(media) or _ANY_FORM
            try:
                if content_type == _URLENCODED:
                    value = form.urlencoded(raw)
                else:
                    value = form.multipart(raw, request.headers.get("Content-Type") or "")
            except BodyError as exc:
                return [Violation("body", str(exc))], None
        elif media in self.texts:
            try:
                value = self.texts[media].read(raw)
            except BodyError as exc:
                return [Violation("body", str(exc))], None
        else:
            return [], None  # binary and other media: accepted as sent
        if check is None:
            return [], value
        return check.errors(value, "body", len(raw) <= LARGE), value

    def violations(self, request: IncomingRequest, path_params: dict[str, str]) -> tuple[list[Violation], object]:
        """All violations of `request` against the operation, and the parsed body (None if none)."""
        cookies = request.cookies() if self.uses_cookies else {}
        found = self.security_violations(request, cookies)
        for param in self.params:
            found.extend(param.violations(request, path_params, cookies))
        body_found, body = self.body_violations(request)
        found.extend(body_found)
        return found, body
