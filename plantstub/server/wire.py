"""An answer as bytes on plantstub's own connections (server/connection.py): the status line, the headers, the body,
and whether the connection ends after it; a reply's faults on the socket. The usual answer (HTTP/1.1 kept alive, a
JSON body, no header of the reply's own) has its head made once per status, type and --cors origin and goes out in
one write; every other answer has its head built whole."""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
import time
from collections.abc import Iterable
from email.utils import formatdate
from http import HTTPStatus

from aiohttp.http import SERVER_SOFTWARE, HttpVersion11, RawRequestMessage

from plantstub._json import NO_BODY
from plantstub.contract.outgoing import Outgoing, error_reply
from plantstub.scenarios.model import Fault
from plantstub.server.answer import Answer, Streamed
from plantstub.server.cors import allow_origin
from plantstub.server.response import FORBIDDEN, internal_error, sent_headers

log = logging.getLogger("plantstub")
_REASONS = {status.value: status.phrase for status in HTTPStatus}
# Headers the writer sets itself: a reply's own are left out (the framing is ours to say).
_FRAMING = frozenset({"content-length", "transfer-encoding", "connection", "date", "server"})
_NO_BODY_STATUS = frozenset({204, 304})
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
MALFORMED = b'{"name": "Fern", "tag": '  # the malformed_body fault: valid HTTP, broken JSON
# (status, Content-Type, --cors origin) -> the usual answer's head up to Content-Length's value, made once
_heads: dict[tuple[int, str | None, str | None], bytes] = {}
_MOST_HEADS = 1024  # heads kept; a client sending ever new origins gets its heads made each time


class _Tail:
    """The second the tail was made for, and Date and Server with the blank line that ends a head."""

    second = -1
    data = b""


class BadHeader(ValueError):
    """A header of an answer holds what would break the head (a line break, a control character)."""


def _date_server() -> bytes:
    """Date and Server and the blank line that ends the head; the date made once a second."""
    second = int(time.time())
    if _Tail.second != second:  # the Date header as RFC 9110 writes it (IMF-fixdate)
        date = formatdate(second, usegmt=True)
        _Tail.second, _Tail.data = second, f"\r\nDate: {date}\r\nServer: {SERVER_SOFTWARE}\r\n\r\n".encode()
    return _Tail.data


def _status_line(status: int) -> str:
    return f"HTTP/1.1 {status} {_REASONS.get(status, '')}\r\n"


def usual(out: Outgoing, origin: str | None) -> bytes | None:
    """The usual answer as bytes, its head made once (None when `out` is not the usual kind)."""
    if out.headers or out.body is NO_BODY or out.content_type is None or out.status in _NO_BODY_STATUS:
        return None
    key = (out.status, out.content_type, origin)
    head = _heads.get(key)
    if head is None:  # made once per status, type and origin
        headers = {"Content-Type": out.content_type}
        pairs = headers.items() if origin is None else allow_origin(origin, headers)
        text = _status_line(out.status) + "".join(f"{name}: {value}\r\n" for name, value in pairs)
        if FORBIDDEN.search(text[:-2].replace("\r\n", "")) is not None:
            return None
        head = (text + "Content-Length: ").encode("latin-1", "replace")
        if len(_heads) < _MOST_HEADS:
            _heads[key] = head
    payload = out.payload
    return b"%s%d%s%s" % (head, len(payload), _date_server(), payload)


CHUNKED = -1  # head()'s length of a body sent in chunks
TO_CLOSE = -2  # head()'s length of a body that ends when the connection closes (to an HTTP/1.0 client)


def head(status: int, headers: Iterable[tuple[str, str]], length: int | None, connection: str | None) -> bytes:
    """A head: the status line, `headers` (the framing ones left out), Content-Length `length` (None: no body, as a
    204's; CHUNKED: chunked framing; TO_CLOSE: none, the body ends with the connection), Connection, Date and Server.
    BadHeader when a header holds what would break it."""
    lines = [_status_line(status)]
    for name, value in headers:
        if name.lower() not in _FRAMING:
            lines.append(f"{name}: {value}\r\n")
    text = "".join(lines[1:])
    if FORBIDDEN.search(text.replace("\r\n", "")) is not None:
        raise BadHeader("a header holds a line break or a control character")
    if length == CHUNKED:
        lines.append("Transfer-Encoding: chunked\r\n")
    elif length is not None and length >= 0:
        lines.append(f"Content-Length: {length}\r\n")
    if connection is not None:
        lines.append(f"Connection: {connection}\r\n")
    return "".join(lines).encode("latin-1", "replace")[:-2] + _date_server()


def answer_bytes(out: Outgoing, origin: str | None, head_only: bool, connection: str | None) -> bytes:
    """`out` as bytes; `head_only` for HEAD (its Content-Length still the body's), `connection` the Connection header
    to send (None: none), `origin` --cors's."""
    headers = sent_headers(out)
    pairs = list(headers.items()) if origin is None else allow_origin(origin, headers)
    pairs.extend(out.more)
    bodiless = out.status in _NO_BODY_STATUS or out.status < 200
    payload = b"" if out.body is NO_BODY or bodiless else out.payload
    data = head(out.status, pairs, None if bodiless else len(payload), connection)
    return data if head_only or not payload else data + payload


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked body (`b""`: the last one)."""
    return b"%x\r\n%s\r\n" % (len(data), data) if data else b"0\r\n\r\n"


def _connection(answer: Answer, message: RawRequestMessage | None, stopping: bool) -> str | None:
    """The Connection header of an answer (None: none); "close" when the connection ends after it."""
    if message is None or answer.close or message.should_close or message.upgrade or stopping:
        return "close"
    return None if message.version >= HttpVersion11 else "keep-alive"


def written(answer: Answer, message: RawRequestMessage | None, stopping: bool) -> tuple[bytes | Fault, bool]:
    """`answer` (not a streamed one) as the bytes to write to the client of `message` (None: a request that could
    not be read), and whether the connection ends after them; or the Fault to play on the socket instead."""
    out, fault, origin, _ = answer
    assert out is not None and not isinstance(out, Streamed)  # the connection writes nothing else here
    if fault is not None:
        if fault is not Fault.MALFORMED_BODY:
            return fault, True
        out = Outgoing(out.status, MALFORMED, MALFORMED, "application/json")
    if message is not None and message.version == HttpVersion11 and not message.should_close \
            and not answer.close and not message.upgrade and not stopping:
        connection, head_only = None, message.method == "HEAD"  # kept alive: the usual case
        if not head_only:
            data = usual(out, origin)
            if data is not None:
                return data, False
    else:
        connection, head_only = _connection(answer, message, stopping), message is not None and message.method == "HEAD"
    try:
        return answer_bytes(out, origin, head_only, connection), connection == "close"
    except BadHeader as exc:
        log.error("plantstub: internal error: an answer's header cannot be written: %s", exc)
        return answer_bytes(error_reply(500, internal_error(exc)), None, head_only, connection), connection == "close"


def streamed_head(answer: Answer, out: Streamed, message: RawRequestMessage,
                  stopping: bool) -> tuple[bytes, bool, bool]:
    """A streamed answer's head; whether its body goes in chunks (to an HTTP/1.1 client; an HTTP/1.0 one reads it to
    the close); whether the connection ends after it."""
    chunked = message.version >= HttpVersion11
    connection = _connection(answer, message, stopping) if chunked else "close"
    return head(out.status, out.headers.items(), CHUNKED if chunked else TO_CLOSE, connection), chunked, \
        connection == "close"


def misbehave(transport: asyncio.Transport, fault: Fault) -> None:
    """A reply's fault on the socket: reset (RST, ECONNRESET on the client) or closed without a byte (FIN)."""
    if fault is Fault.CONNECTION_RESET:
        sock = transport.get_extra_info("socket")
        if sock is not None:  # SO_LINGER 0: close() sends RST instead of FIN
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    else:  # empty_reply
        transport.close()
