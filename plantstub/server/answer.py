"""What a transport writes: an `Answer` (an Outgoing, or a `Streamed` admin answer made as it is written, and how to
send it). Each transport has one writer for it: server/wire.py on plantstub's own connections, server/app.py's under
an aiohttp Application."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import NamedTuple

from plantstub.contract.outgoing import Outgoing
from plantstub.scenarios.model import Fault

CHUNK_BYTES = 256 * 1024  # about what one step of a streamed answer writes, made off the event loop


class Streamed(NamedTuple):
    """A JSON answer written as it is made: `first` was made before the head goes (a bug there still gets its JSON
    500), the rest of `pieces` about CHUNK_BYTES at a time, off the event loop."""

    status: int
    headers: dict[str, str]
    first: bytes
    pieces: Iterator[bytes]


class Answer(NamedTuple):
    """An answer ready to write. `out` None: nothing goes out (the client left; the call says so). `fault`: the reply's
    misbehaviour instead of (or, malformed_body, as) the answer; `origin`: --cors's, allowed to read it; `close`: the
    last answer on its connection."""

    out: Outgoing | Streamed | None
    fault: Fault | None = None
    origin: str | None = None
    close: bool = False


def gather(pieces: Iterator[bytes]) -> bytes:
    """The next CHUNK_BYTES or so of `pieces` (b"" when there are no more); run off the event loop."""
    parts: list[bytes] = []
    size = 0
    for piece in pieces:
        parts.append(piece)
        size += len(piece)
        if size >= CHUNK_BYTES:
            break
    return b"".join(parts)


async def streamed(pieces: Iterator[bytes], headers: dict[str, str] | None = None, status: int = 200) -> Streamed:
    """A JSON answer of `pieces`, its first part made now (off the event loop)."""
    first = await asyncio.to_thread(gather, pieces)
    return Streamed(status, {"Content-Type": "application/json", **(headers or {})}, first, pieces)


async def chunks(answer: Streamed) -> AsyncIterator[bytes]:
    """The body of a streamed answer, part by part, each made off the event loop (the GIL let go between them)."""
    chunk = answer.first
    while chunk:
        yield chunk
        chunk = await asyncio.to_thread(gather, answer.pieces)
