"""aiohttp's HTTP/1.1 request parser used on its own: the one module that reaches past aiohttp's documented API.

plantstub owns its connections (server/connection.py) and asks aiohttp only to parse: `HttpRequestParser` (exported
by `aiohttp.http`, the C parser or, with AIOHTTP_NO_EXTENSIONS=1 or no wheel, the pure-Python one) turns bytes into
`RawRequestMessage`s and body readers. What that needs beyond the documented API lives here alone: the parser's
constructor, and `Flow`, the protocol object its body readers pause and resume (aiohttp's own `BaseProtocol`, told
which parser it drives through its private `_parser`).

Proven on aiohttp 3.11.15 (the floor) to 3.14.5, with both parsers (the nox lanes run both). Outside `PROVEN`, or
when the parser does not parse a known request as it should (`self_test`), the stub serves through aiohttp's own
server instead (server/runner.py), with one line on stderr saying why.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp.base_protocol import BaseProtocol
from aiohttp.http import HttpRequestParser, RawRequestMessage

PROVEN = ((3, 11, 15), (3, 15, 0))  # the aiohttp releases this module was proven on: floor included, ceiling not
LINE_LIMIT = 8190  # aiohttp's limit on the request line and on each header (max_line_size, max_field_size)
READ_LIMIT = 2**16  # a body reader holds about twice this before it asks the connection to stop reading


class BrokenBody(Exception):
    """A body whose framing or encoding is broken (a bad chunk, gzip that does not inflate): what the parser sets on
    its body reader. plantstub's own, so that a stub on its own connections never imports `aiohttp.web`."""


def version() -> tuple[int, ...]:
    """aiohttp's version as numbers (`3.14.5` -> (3, 14, 5)); a pre-release counts as its release."""
    return tuple(int(part) for part in re.findall(r"\d+", aiohttp.__version__)[:3])


class Flow(BaseProtocol):
    """What the parser and its body readers pause and resume: the connection's reading. A body reader that holds too
    much pauses it; once read, it resumes it and the parser takes up what it held back (`feed()` with no bytes)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, feed: Callable[[bytes], None]) -> None:
        super().__init__(loop)
        self._feed = feed

    def data_received(self, data: bytes) -> None:  # aiohttp's resume_reading() re-parses what the parser held
        self._feed(data)

    def release(self) -> None:
        """The connection is gone: let go of its parser and of the connection (they point back here)."""
        self._parser = None
        self._feed = _nothing

    def resume_reading(self, *args: bool, **kwargs: bool) -> None:
        """A body reader that read what it had resumes reading (aiohttp >= 3.13: each time); the parser holds
        nothing back unless reading was paused, so there is nothing to take up then."""
        if self._reading_paused:
            super().resume_reading(*args, **kwargs)


def _nothing(data: bytes) -> None:
    """What a released Flow feeds: nothing."""


def request_parser(flow: Flow, loop: asyncio.AbstractEventLoop) -> Any:
    """A parser of requests for one connection, whose body readers are paused and resumed through `flow`."""
    parser = HttpRequestParser(flow, loop, READ_LIMIT, max_line_size=LINE_LIMIT, max_field_size=LINE_LIMIT,
                               payload_exception=BrokenBody)
    flow._parser = parser  # aiohttp >= 3.13: BaseProtocol pauses the parser's decompression through it
    return parser


_KNOWN = (b"POST /a?b=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
          b"PUT /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n"
          b"GET /d HTTP/1.0\r\n\r\n")


def self_test() -> str | None:
    """None when this aiohttp parses as proven; else why not, in one line."""
    at = version()
    shown = aiohttp.__version__
    if not PROVEN[0] <= at < PROVEN[1]:
        low, high = (".".join(map(str, v)) for v in PROVEN)
        return f"aiohttp {shown} is outside the releases plantstub's connections were proven on ({low} to before {high})"
    loop = asyncio.new_event_loop()
    try:
        fed: list[bytes] = []
        flow = Flow(loop, fed.append)
        messages, upgraded, _ = request_parser(flow, loop).feed_data(_KNOWN)
        seen = [(m.method, m.path, m.version[:2], m.should_close, m.chunked, p.is_eof(), p.read_nowait(-1))
                for m, p in messages]
        wanted = [("POST", "/a?b=1", (1, 1), False, False, True, b"{}"),
                  ("PUT", "/c", (1, 1), False, True, True, b"z"),
                  ("GET", "/d", (1, 0), True, False, True, b"")]
        if seen != wanted or upgraded or not all(isinstance(m, RawRequestMessage) for m, _ in messages):
            return f"aiohttp {shown}'s request parser does not parse as plantstub's connections expect"
    except Exception as exc:  # noqa: BLE001 - whatever changed, the stub serves through aiohttp's own server
        return f"aiohttp {shown}'s request parser cannot be used on its own ({type(exc).__name__}: {exc})"
    finally:
        loop.close()
    return None
