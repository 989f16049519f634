"""What the spec says the API sends: its `webhooks` (3.1) and operations' `callbacks`, read at load;
callback URLs as runtime expressions; which operations' answers send which webhook by default."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import quote

from plantstub._fields import ByFields
from plantstub._json import MISSING, is_json, shown
from plantstub.contract.model import Operation, Spec, Webhook
from plantstub.errors import SpecError


class _Reader(Protocol):
    """What contract/load.py's loader offers to read Path Items (kept as a protocol: load.py imports this module)."""

    warnings: list[str]

    def deref(self, node: object, base: str, where: str) -> tuple[object, str]: ...

    def methods(self, item: dict[str, object], where: str) -> list[tuple[str, object, str]]: ...

    def operation(self, method: str, template: str, node: object, shared: list, global_security: object, base: str,
                  where: str) -> Operation: ...


def _path_item(reader: _Reader, name: str, item: object, base: str, where: str, expression: str = "") -> list[Webhook]:
    item, base = reader.deref(item, base, where)
    if not isinstance(item, dict):
        raise SpecError(f"{where}: expected a Path Item mapping, found {type(item).__name__} {shown(item)}")
    # What the API sends carries no credential the consumer's receiver checks: security is not applied.
    return [
        Webhook(name, reader.operation(method, name, node, [], None, base, here), expression)
        for method, node, here in reader.methods(item, where)
    ]


def read_webhooks(reader: _Reader, doc: dict, base: str) -> tuple[Webhook, ...]:
    """The document's `webhooks` (OpenAPI 3.1): name -> Path Item, one Webhook per method."""
    raw = doc.get("webhooks")
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise SpecError(f"webhooks: expected a mapping of names to Path Items, found {type(raw).__name__}")
    found: list[Webhook] = []
    for name, item in raw.items():
        if not str(name).startswith("x-"):
            found.extend(_path_item(reader, str(name), item, base, f"webhooks.{name}"))
    return tuple(found)


def read_callbacks(reader: _Reader, raw: object, base: str, where: str) -> tuple[Webhook, ...]:
    """An operation's `callbacks`: name -> {URL expression: Path Item}. A callback whose URL does not come
    from the triggering request is set aside with a warning: plantstub never sends to a URL a spec names."""
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise SpecError(f"{where}: expected a mapping of callback names, found {type(raw).__name__}")
    found: list[Webhook] = []
    for name, callback in raw.items():
        here = f"{where}.{name}"
        callback, callback_base = reader.deref(callback, base, here)
        if not isinstance(callback, dict):
            raise SpecError(f"{here}: expected a mapping of URL expressions to Path Items, found {type(callback).__name__}")
        for expression, item in callback.items():
            expression = str(expression)
            if expression.startswith("x-"):
                continue
            problem = url_problem(expression)
            if problem is not None:
                reader.warnings.append(f"{here}: {shown(expression)} is not sent: {problem}")
                continue
            found.extend(_path_item(reader, str(name), item, callback_base, f"{here}.{expression}", expression))
    return tuple(found)


# -- runtime expressions (OpenAPI 3.x, "Runtime Expressions") -------------------------------------
_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_SOURCE = re.compile(r"\$request\.(header\.[!#$%&'*+\-.^_`|~0-9A-Za-z]+|query\.[^{}]+|path\.[^{}]+|body(#[^{}]*)?)\Z")
_OTHER = ("$url", "$method", "$statusCode")


def _expression_problem(text: str) -> str | None:
    if text in _OTHER or _SOURCE.match(text):
        return None
    if text.startswith("$response."):
        return f"{text}: plantstub resolves callback URLs from the request only"
    return f"{text} is not a runtime expression ($url, $method, $request.header.NAME, $request.query.NAME, " \
           "$request.path.NAME, $request.body#/POINTER)"


def url_problem(template: str) -> str | None:
    """Why a callback URL template cannot be sent, or None: its scheme and host must come from the request."""
    for text in _EXPRESSION.findall(template):
        problem = _expression_problem(text)
        if problem is not None:
            return problem
    first = _EXPRESSION.match(template)
    if first is None or not first.group(1).startswith("$request."):
        return "its URL does not start with a value of the triggering request (such as {$request.body#/callbackUrl})"
    return None


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class RequestValues(ByFields):
    """The triggering request, as runtime expressions read it."""

    url: str
    method: str
    headers: Mapping[str, str]
    query: Mapping[str, list[str]]
    path: Mapping[str, object]
    body: object


def _pointer(value: object, pointer: str) -> object:
    """RFC 6901: `value` at `pointer` ('' is the whole), MISSING when there is nothing there."""
    if pointer == "":
        return value
    if not pointer.startswith("/"):
        return MISSING
    for step in pointer[1:].split("/"):
        step = step.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and step in value:
            value = value[step]
        elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        else:
            return MISSING
    return value


def evaluate(text: str, request: RequestValues) -> object:
    """One runtime expression's value for `request`; MISSING when the request has no such value."""
    if text == "$url":
        return request.url
    if text == "$method":
        return request.method
    source = text.removeprefix("$request.")
    if source.startswith("header."):
        return request.headers.get(source[7:], MISSING)
    if source.startswith("query."):
        values = request.query.get(source[6:])
        return values[0] if values else MISSING
    if source.startswith("path."):
        return request.path.get(source[5:], MISSING)
    if source.startswith("body"):
        from urllib.parse import unquote

        return _pointer(request.body, unquote(source[5:]))
    return MISSING


def resolve_url(template: str, request: RequestValues) -> tuple[str, str | None]:
    """The callback URL for `request`, or ("", why not). The leading value is the URL's start, as sent; a
    later value is a part of it, percent-encoded."""
    parts: list[str] = []
    at = 0
    for match in _EXPRESSION.finditer(template):
        parts.append(template[at:match.start()])
        value = evaluate(match.group(1), request)
        if value is MISSING or isinstance(value, (dict, list)) or value is None:
            what = "missing from" if value is MISSING else "not a text value in"
            return "", f"{match.group(1)} is {what} the request"
        text = value if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
        parts.append(text if match.start() == 0 else quote(text, safe=""))
        at = match.end()
    parts.append(template[at:])
    return "".join(parts), None


# -- which answers send which webhook ---------------------------------------------------------------
def json_body_schema(op: Operation) -> dict | bool | None:
    """The schema of an operation's JSON request body, None when it has none."""
    for name, media in (op.body or {}).items():
        if is_json(name) and media.schema is not None:
            return media.schema
    return None


def default_triggers(spec: Spec) -> dict[Operation, tuple[Webhook, ...]]:
    """POST operations whose request body has the same schema (the same $ref target, or an equal bundled
    schema) as a webhook's request body: a 2xx answer to one sends those webhooks with the created record."""
    found: dict[Operation, tuple[Webhook, ...]] = {}
    hooks = [(hook, schema) for hook in spec.webhooks if (schema := json_body_schema(hook.operation)) is not None]
    if not hooks:
        return found
    for op in spec.operations:
        if op.method != "POST":
            continue
        mine = json_body_schema(op)
        if mine is None:
            continue
        same = tuple(hook for hook, schema in hooks if schema is mine or schema == mine)
        if same:
            found[op] = same
    return found


def webhook_names(spec: Spec) -> list[str]:
    """The names a subscription may give, in document order."""
    return list(dict.fromkeys(hook.name for hook in spec.webhooks))
