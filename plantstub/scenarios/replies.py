"""A rule's reply made concrete for one request: templates filled, headers made safe, the fault it asks for."""

from __future__ import annotations

import re
from typing import Any

from plantstub._json import JSON, NO_BODY, is_json
from plantstub.contract.outgoing import Outgoing, json_reply
from plantstub.incoming import IncomingRequest
from plantstub.scenarios.model import Fault, Reply, Rule
from plantstub.scenarios.templating import Template, compile_template

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

# Headers HTTP framing owns: a rule that set them would break the response on the wire.
FRAMING_HEADERS = ("content-length", "transfer-encoding", "connection")


# `cache`: id(reply or webhook) -> (it, its templates compiled), kept by the rules' owner. Its entries differ by the
# kind of their object (a reply's holds its headers' templates too), which the request path does not check: Any.
def _compiled(reply: Reply, cache: dict[int, Any]) -> tuple[Template, dict[str, Template]]:
    entry = cache.get(id(reply))
    if entry is None or entry[0] is not reply:
        headers = {
            name: compile_template(value, text=True)
            for name, value in reply.headers.items()
            if name.lower() not in FRAMING_HEADERS
        }
        entry = cache[id(reply)] = (reply, compile_template(reply.body), headers)
    return entry[1], entry[2]


def rule_webhooks(
    rule: Rule, request: IncomingRequest, request_body: object, cache: dict[int, Any]
) -> list[tuple[str, object, int, bool]]:
    """A rule's `webhooks:` for one request, as (name, body, delay_ms, whether the body must still be checked
    against the webhook's schema): templates in bodies filled in; a static body was checked at load."""
    sent = []
    for hook in rule.webhooks or ():
        body, rendered = hook.body, False
        if body is not NO_BODY:
            entry = cache.get(id(hook))
            if entry is None or entry[0] is not hook:
                entry = cache[id(hook)] = (hook, compile_template(body))
            if not entry[1].static:
                body, rendered = entry[1].render(_view(request, request_body)), True
        sent.append((hook.name, body, hook.delay_ms, rendered and not rule.off_contract))
    return sent


def _view(request: IncomingRequest, request_body: object) -> dict[str, object]:
    return {
        "method": request.method,
        "path": request.path,
        "body": request_body,
        "headers": request.headers,
        "query": request.query_first(),
    }


def rule_reply(
    reply: Reply, request: IncomingRequest, request_body: object, cache: dict[int, Any]
) -> tuple[Outgoing, Fault | None]:
    """The Outgoing a rule's reply describes, templates filled from the request; and its Fault, if any."""
    if reply.fault is not None and not reply.fault.sends_status:
        return Outgoing(reply.status, NO_BODY, b"", None), reply.fault
    body_template, header_templates = _compiled(reply, cache)
    view = _view(request, request_body)
    # A request value rendered into a header must not smuggle a line break into the response.
    headers = {name: _CONTROL.sub(" ", str(t.render(view))) for name, t in header_templates.items()}
    body = body_template.render(view) if reply.body is not NO_BODY else NO_BODY
    content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
    headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
    fault = reply.fault
    if body is NO_BODY:
        return Outgoing(reply.status, NO_BODY, b"", None, headers), fault
    if isinstance(body, str) and not is_json(content_type):
        # A string body is sent as that text: how a rule serves something that is not JSON.
        return Outgoing(reply.status, body, body.encode("utf-8"), content_type or "text/plain", headers), fault
    return json_reply(reply.status, body, headers, content_type or JSON), fault
