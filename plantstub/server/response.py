"""The words of the answers every transport gives on its own (413, 408, 500, a body it cannot read), and the headers a
call records as sent."""

from __future__ import annotations

import re
from collections.abc import Mapping

from plantstub._json import NO_BODY
from plantstub.contract.outgoing import Outgoing

FORBIDDEN = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # what may not be in a header: it would end the line or the head


def too_large(limit: int) -> str:
    """The 413 message: the body is over --max-body."""
    return f"body: larger than the limit of {limit} bytes (--max-body)"


def not_received(seconds: float) -> str:
    """The 408 message: the request did not arrive in full within --read-timeout."""
    return f"request: not received in full within {seconds:g} s (--read-timeout)"


class ReadTimeout(ConnectionError):
    """What reading a request's body raises once --read-timeout is over; the answer is a 408 and the
    connection closes. A ConnectionError: like a client that left, it is not a plantstub bug."""


def sent_headers(out: Outgoing) -> dict[str, str]:
    """The headers a call records as sent: the reply's own, and Content-Type when there is a body. Never changed by
    whoever gets it: a reply with Content-Type alone gets one dict per type, shared (Record.view copies it)."""
    if out.content_type and out.body is not NO_BODY:
        if out.headers:
            return {**out.headers, "Content-Type": out.content_type}
        only = _TYPE_ONLY.get(out.content_type)
        if only is None:
            only = _TYPE_ONLY[out.content_type] = {"Content-Type": out.content_type}
        return only
    return out.headers


_TYPE_ONLY: dict[str, dict[str, str]] = {}


def internal_error(exc: BaseException | None) -> str:
    """The 500 message of a plantstub bug, in every answer that reports one (the pipeline, the admin API, a
    connection aiohttp could not serve)."""
    said = "plantstub internal error (a bug in plantstub, not in the client)"
    return said if exc is None else f"{said}: {type(exc).__name__}: {exc}"


def unreadable(headers: Mapping[str, str]) -> str:
    """Why a body could not be read: its Content-Encoding, or its chunked framing."""
    encoding = headers.get("Content-Encoding")
    if encoding:
        return f"body: cannot be read: it does not decode as its Content-Encoding ({encoding[:50]}) says"
    return "body: cannot be read: its chunked framing is broken"
