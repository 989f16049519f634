"""A request that could not be read: why, in our words, and as far as its request line arrived (what its call records);
answered in its turn on its connection (`Broken`)."""

from __future__ import annotations

import re
from http import HTTPStatus
from typing import NamedTuple

from aiohttp.http import HttpProcessingError
from aiohttp.http_exceptions import ContentEncodingError, LineTooLong

from plantstub.contract.outgoing import Outgoing
from plantstub.server.parser import LINE_LIMIT
from plantstub.server.response import unreadable

HEAD_KEPT = LINE_LIMIT + 2  # bytes of a request's head kept to name one that breaks: a whole request line
TLS_ON_PLAIN = "request: this is TLS (https://) on a plain HTTP port; use http://"
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}")  # an HTTP method as RFC 9110 spells a token
_ENCODING = re.compile(rb"\r?\ncontent-encoding:[ \t]*([^\r\n]*)", re.IGNORECASE)
_ALWAYS_DECODED = frozenset(("gzip", "x-gzip", "deflate"))  # zlib's: what any Python decodes (br, zstd need a package)


class Broken(NamedTuple):
    """A request that could not be parsed or did not arrive in time, answered in its turn: as far as its request line
    was read, and the answer."""

    method: str
    target: str
    out: Outgoing


def unparsable(exc: HttpProcessingError, head: bytes) -> str:
    """Why a request whose head starts with `head` cannot be parsed, in our words."""
    if isinstance(exc, LineTooLong):
        if 0 <= head.find(b"\n", 0, HEAD_KEPT) <= LINE_LIMIT + 1:
            return f"headers: a header is longer than {LINE_LIMIT} bytes"
        return f"request: the request line is longer than {LINE_LIMIT} bytes"
    if head.startswith(b"\x16\x03"):  # a TLS record: a ClientHello
        return TLS_ON_PLAIN
    if isinstance(exc, ContentEncodingError):  # a body the C parser inflates as it parses (deflate), or cannot at all
        found = _ENCODING.search(head)
        encoding = found[1].decode("latin-1").strip() if found else ""
        if encoding.lower() in _ALWAYS_DECODED:
            return unreadable({"Content-Encoding": encoding})
        return (f"body: cannot be read: its Content-Encoding ({encoding[:50] or 'as sent'}) is not one this stub "
                "decodes, or the body does not decode as it says (gzip and deflate are always decoded)")
    reason = (exc.message or str(exc) or HTTPStatus(400).phrase).strip().splitlines()[0]
    return f"request: cannot be parsed as HTTP/1.1: {reason[:200]}"


def request_line(head: bytes) -> tuple[str, str]:
    """The method and target of a request whose head starts with `head`, as far as they arrived; `""` for unknown."""
    method, _, rest = head[:HEAD_KEPT].split(b"\n", 1)[0].rstrip(b"\r").partition(b" ")
    if not _TOKEN.fullmatch(method):
        return "", ""
    return method.decode("ascii"), rest.split(b" ", 1)[0].decode("utf-8", "replace")
