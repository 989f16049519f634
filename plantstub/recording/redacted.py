"""A call as the files made for people to keep or share show it (a HAR export, the pytest HTML report): every secret
the redaction rule finds (plantstub/redaction.py) replaced by REDACTED, and the messages about it scrubbed of the values
taken out and of URLs' query strings."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from multidict import CIMultiDict

from plantstub._json import essence
from plantstub.recording.call import Call
from plantstub.redaction import Redactor

_FORM = "application/x-www-form-urlencoded"


def _body(redactor: Redactor, body: object, content_type: str | None) -> object:
    if isinstance(body, str) and essence(content_type) == _FORM:  # a form's fields, as a query's
        return urlencode(redactor.pairs(parse_qsl(body, keep_blank_values=True)))
    return redactor.value(body)


def redact_call(call: Call) -> tuple[Call, Redactor]:
    """`call` with its secrets redacted (query, headers, body, the answer's headers and body, the messages), and the
    Redactor that took them out (its `scrub` cleans any other text about this call)."""
    redactor = Redactor()
    headers = CIMultiDict(redactor.pairs(call.headers.items()))  # a repeated header stays repeated
    query = redactor.mapping(call.query)
    body = _body(redactor, call.body, call.headers.get("Content-Type"))
    response = call.response
    if response is not None:
        answer_headers = response.get("headers") or {}
        content_type = next((str(v) for k, v in answer_headers.items() if str(k).lower() == "content-type"), None)
        response = {**response, "headers": redactor.mapping(answer_headers),
                    "body": _body(redactor, response.get("body"), content_type)}
    scrub = redactor.scrub
    if redactor.found:  # a value taken out anywhere is taken out of the texts of both bodies too
        body = redactor.hide_in(body)
        if response is not None:
            response["body"] = redactor.hide_in(response["body"])
    upstream = call.upstream
    if upstream is not None:
        upstream = {**upstream, "url": scrub(str(upstream.get("url"))) if upstream.get("url") else upstream.get("url"),
                    "errors": [scrub(str(e)) for e in upstream.get("errors") or ()]}
    answered_by = call.answered_by
    if answered_by is not None and answered_by.get("kind") == "proxy" and upstream is not None:  # upstream's verdict
        answered_by = {**answered_by, "url": upstream["url"], "errors": list(upstream["errors"])}
    return call._replace(query=query, headers=headers, body=body, response=response, upstream=upstream,
                         errors=tuple(map(scrub, call.errors)), stub_errors=tuple(map(scrub, call.stub_errors)),
                         answered_by=answered_by), redactor
