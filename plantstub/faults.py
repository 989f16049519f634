"""Faults a rule can ask for: drop the connection, close it silently, or send a broken body."""

from __future__ import annotations

import asyncio
import socket
import struct
from dataclasses import dataclass

from aiohttp import web

from .replies import Outgoing

FAULTS = ("connection_reset", "empty_reply", "malformed_body")


@dataclass(frozen=True, slots=True)
class Fault:
    kind: str


async def send_fault(request: web.Request, fault: Fault, out: Outgoing | None) -> web.StreamResponse:
    """Misbehave as asked. The call is still recorded by the caller's `finally`."""
    transport = request.transport
    if fault.kind == "malformed_body":
        status = out.status if out is not None else 200
        # Valid HTTP, broken JSON: the client's parser, not its socket, must cope.
        return web.Response(status=status, body=b'{"name": "Fern", "tag": ', content_type="application/json")
    if transport is not None:
        if fault.kind == "connection_reset":
            sock = transport.get_extra_info("socket")
            if sock is not None:
                # SO_LINGER 0: close() sends RST instead of FIN, so the client sees ECONNRESET.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        else:  # empty_reply: FIN without a byte of response
            transport.close()
    # Nothing may be written now; cancelling ends this connection's handler quietly.
    raise asyncio.CancelledError
