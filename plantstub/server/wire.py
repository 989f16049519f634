"""The common answer on the wire without building aiohttp's Response: the status line and headers prebuilt, written
with the body in one transport write, byte for byte what aiohttp's Response would write (the lean server only).

Taken for an HTTP/1.1 keep-alive request answered with a body, not HEAD, whose headers aiohttp would not touch (no
Content-Length, Date, Server, Connection or Transfer-Encoding of the reply's own, nothing it would refuse); anything
else is answered by aiohttp's Response (server/response.py), as before.
"""

from __future__ import annotations

import re
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.helpers import rfc822_formatted_time
from aiohttp.http import SERVER_SOFTWARE, HttpVersion11
from multidict import CIMultiDict

from plantstub._json import NO_BODY
from plantstub.contract.outgoing import Outgoing
from plantstub.server.response import sent_headers, to_response

_REASONS = {status.value: status.phrase for status in HTTPStatus}  # aiohttp's reason phrases
# Headers aiohttp sets or reads itself: a reply carrying one of its own goes through aiohttp's Response.
_SET_BY_AIOHTTP = frozenset({"content-length", "transfer-encoding", "connection", "date", "server"})
_FORBIDDEN = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # what aiohttp refuses in a header (it raises)
_MOST = 64 * 1024  # a bigger body goes through aiohttp, which waits for the client to read (backpressure)
# (status, Content-Type, a --cors request's Origin or None) -> the head up to Content-Length's value
_heads: dict[tuple[int, str | None, str | None], bytes] = {}
_MOST_HEADS = 1024  # heads kept; a client sending ever new origins gets its heads made each time
_tail: list[Any] = [None, b""]  # the second it was made for, and Date and Server with the blank line


def _plain(headers: dict[str, str]) -> bool:
    """Whether aiohttp would write `headers` as given: no name twice in any case, none it sets itself, nothing it
    refuses."""
    names = [name.lower() for name in headers]
    if len(set(names)) != len(names) or _SET_BY_AIOHTTP.intersection(names):
        return False
    return _FORBIDDEN.search("".join(headers) + "".join(headers.values())) is None


def _date_server() -> bytes:
    """Date and Server, as aiohttp writes them, and the blank line that ends the head."""
    date = rfc822_formatted_time()  # aiohttp's own, made once a second
    if _tail[0] != date:
        _tail[0], _tail[1] = date, f"\r\nDate: {date}\r\nServer: {SERVER_SOFTWARE}\r\n\r\n".encode()
    return _tail[1]


class Written:
    """A reply as aiohttp's handler loop takes it (prepare, write_eof, keep_alive), written in one piece.
    `headers` (CORS adds to them) is aiohttp's case-insensitive mapping, made only when asked for."""

    __slots__ = ("_headers", "_origin", "_out", "_writer", "prepared")
    keep_alive = True

    def __init__(self, out: Outgoing) -> None:
        self._out = out
        self._headers: CIMultiDict[str] | None = None
        self._origin: str | None = None
        self._writer: Any = None
        self.prepared = False

    @property
    def status(self) -> int:
        return self._out.status

    @property
    def headers(self) -> CIMultiDict[str]:
        if self._headers is None:
            headers = self._headers = CIMultiDict(sent_headers(self._out))
            if self._origin is not None:  # allowed already: the same headers, in the same order, as allow() writes
                headers["Access-Control-Allow-Origin"] = self._origin
                headers["Access-Control-Allow-Credentials"] = "true"
                headers["Vary"] = "Origin"
        return self._headers

    def allow(self, origin: str) -> bool:
        """Let a page of `origin` read the usual answer (--cors, server/cors.py), its head made once per origin;
        False when the answer is not the usual one (the caller adds the headers)."""
        if self._headers is not None or self._out.headers or _FORBIDDEN.search(origin) is not None:
            return False
        self._origin = origin
        return True

    def _bytes(self) -> bytes:
        out = self._out
        payload = out.payload
        if self._headers is None and not out.headers:  # the usual answer: its head made once
            key = (out.status, out.content_type, self._origin)
            head = _heads.get(key)
            if head is None:
                if _FORBIDDEN.search(str(out.content_type)) is not None:  # refused, as aiohttp refuses it
                    raise ValueError("Forbidden control character detected in headers.")
                cors = "" if self._origin is None else (  # as cors._allow_origin adds them
                    f"Access-Control-Allow-Origin: {self._origin}\r\nAccess-Control-Allow-Credentials: true\r\n"
                    "Vary: Origin\r\n"
                )
                head = (
                    f"HTTP/1.1 {out.status} {_REASONS.get(out.status, '')}\r\n"
                    f"Content-Type: {out.content_type}\r\n{cors}Content-Length: "
                ).encode()
                if len(_heads) < _MOST_HEADS:
                    _heads[key] = head
            return b"%s%d%s%s" % (head, len(payload), _date_server(), payload)
        lines = "".join(f"{name}: {value}\r\n" for name, value in self.headers.items())
        if _FORBIDDEN.search(lines[:-2].replace("\r\n", "")) is not None:  # a value CORS echoed: as aiohttp does
            raise ValueError("Forbidden control character detected in headers.")
        return b"%s%sContent-Length: %d%s%s" % (
            f"HTTP/1.1 {out.status} {_REASONS.get(out.status, '')}\r\n".encode(),
            lines.encode(),
            len(payload),
            _date_server(),
            payload,
        )

    async def prepare(self, request: web.BaseRequest) -> Any:
        if self.prepared:
            return self._writer
        self.prepared = True
        data = self._bytes()
        transport = request.transport
        if transport is None or transport.is_closing():
            raise ConnectionResetError("Cannot write to closing transport")
        writer = self._writer = request.writer
        writer.output_size += len(data)
        transport.write(data)
        return writer

    async def write_eof(self, data: bytes = b"") -> None:
        await self._writer.drain()  # waits only while the client is not reading


def _usual(out: Outgoing) -> bool:
    """Whether `out` can be written in one piece (to an HTTP/1.1 keep-alive request, not HEAD): a body within
    _MOST, a Content-Type, a status that carries a body, and headers aiohttp would write as given."""
    return (
        out.body is not NO_BODY
        and len(out.payload) <= _MOST
        and out.content_type is not None
        and out.status >= 200
        and out.status not in (204, 304)
        and (not out.headers or _plain(sent_headers(out)))
    )


def answer(out: Outgoing, request: web.BaseRequest) -> web.StreamResponse:
    """`out` for `request`: written in one piece when it can be, else as aiohttp's Response (to_response)."""
    if request.version == HttpVersion11 and request.keep_alive and request.method != "HEAD" and _usual(out):
        return Written(out)  # type: ignore[return-value]  # duck-typed: what aiohttp's handler loop reads
    return to_response(out, request.method == "HEAD")


def at_once(out: Outgoing, origin: str | None) -> bytes | None:
    """`out` as one piece of bytes when it is the usual answer (as `answer()` takes it, the request being an HTTP/1.1
    keep-alive one, not HEAD), with --cors's headers for `origin` when given; None when aiohttp is to write it."""
    if not _usual(out):
        return None
    written = Written(out)
    if origin is not None and not written.allow(origin):
        return None
    try:
        return written._bytes()
    except ValueError:  # what aiohttp refuses in a header: its Response says so, as before
        return None
