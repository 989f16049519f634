"""What goes back on the wire: an Outgoing as an aiohttp response, or the fault a reply asked for."""

from __future__ import annotations

import asyncio
import socket
import struct

from aiohttp import web

from plantstub._json import NO_BODY
from plantstub.contract.outgoing import Outgoing
from plantstub.scenarios.model import Fault


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


def closing(out: Outgoing) -> web.Response:
    """`out` as the last answer on its connection (the request was not read in full, or not at all)."""
    response = to_response(out, False)
    response.force_close()
    return response


def to_response(out: Outgoing, head: bool) -> web.Response:
    """`out` as an aiohttp response; a HEAD request gets the headers without the body.

    Content-Type goes in as a header, as written: aiohttp's `content_type=` refuses parameters
    (`application/json; charset=utf-8`), which specs and rules may well declare.
    """
    headers = sent_headers(out)
    if out.body is NO_BODY or head:
        return web.Response(status=out.status, headers=headers)
    return web.Response(status=out.status, body=out.payload, headers=headers)


async def send_fault(request: web.BaseRequest, fault: Fault, out: Outgoing | None) -> web.StreamResponse:
    """Misbehave as asked. The call is still recorded by the caller's `finally`."""
    transport = request.transport
    if fault is Fault.MALFORMED_BODY:
        status = out.status if out is not None else 200
        # Valid HTTP, broken JSON: the client's parser, not its socket, must cope.
        return web.Response(status=status, body=b'{"name": "Fern", "tag": ', content_type="application/json")
    if transport is not None:
        if fault is Fault.CONNECTION_RESET:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                # SO_LINGER 0: close() sends RST instead of FIN, so the client sees ECONNRESET.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        else:  # empty_reply: FIN without a byte of response
            transport.close()
    # Nothing may be written now; cancelling ends this connection's handler quietly.
    raise asyncio.CancelledError


def internal_error(exc: BaseException | None) -> str:
    """The 500 message of a plantstub bug, in every answer that reports one (the pipeline, the admin API, a
    connection aiohttp could not serve)."""
    said = "plantstub internal error (a bug in plantstub, not in the client)"
    return said if exc is None else f"{said}: {type(exc).__name__}: {exc}"


def unreadable(request: web.BaseRequest) -> str:
    """Why aiohttp could not read a body: its Content-Encoding, or its chunked framing."""
    encoding = request.headers.get("Content-Encoding")
    if encoding:
        return f"body: cannot be read: it does not decode as its Content-Encoding ({encoding[:50]}) says"
    return "body: cannot be read: its chunked framing is broken"
