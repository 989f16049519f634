"""The lean server writes its common answers in one piece (server/wire.py): byte for byte what aiohttp's Response
writes for the same request, which create_app()'s Application still sends."""

from __future__ import annotations

import asyncio
import re

import pytest

from plantstub.config import build_settings
from plantstub.server.app import create_app
from plantstub.server.runner import start
from plantstub.server.runtime import load
from plantstub.server.table import Sessions

AUTH = "Authorization: Bearer t\r\nContent-Type: application/json\r\n"
VALID = b'{"id": 7, "name": "Fern", "tag": "indoor"}'
REQUESTS = {
    "valid": ("POST /plants HTTP/1.1", AUTH, VALID),
    "invalid": ("POST /plants HTTP/1.1", AUTH, b'{"id": "x", "tag": 3}'),
    "no token": ("POST /plants HTTP/1.1", "Content-Type: application/json\r\n", VALID),
    "no path": ("GET /nowhere HTTP/1.1", AUTH, b""),
    "not allowed": ("PATCH /plants HTTP/1.1", AUTH, b""),
    "head": ("HEAD /plants HTTP/1.1", AUTH, b""),
    "http/1.0": ("POST /plants HTTP/1.0", AUTH, VALID),
    "http/1.0 keep-alive": ("POST /plants HTTP/1.0", AUTH + "Connection: keep-alive\r\n", VALID),
    "closing": ("POST /plants HTTP/1.1", AUTH + "Connection: close\r\n", VALID),
    "unknown scenario": ("POST /plants HTTP/1.1", AUTH + "X-Plantstub-Scenario: nope\r\n", VALID),
    "prefer": ("GET /plants HTTP/1.1", AUTH + "Prefer: code=500\r\n", b""),
    "prefer refused": ("GET /plants HTTP/1.1", AUTH + "Prefer: code=418\r\n", b""),
}
_DATE = re.compile(rb"\r\nDate: [^\r]*\r\n")


async def _exchange(port: int, line: str, headers: str, body: bytes) -> bytes:
    """One request on a fresh connection; the answer, read until its body is complete (Date left out)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"{line}\r\nHost: 127.0.0.1\r\n{headers}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        length = re.search(rb"\r\nContent-Length: (\d+)\r\n", head)
        rest = b"" if length is None or line.startswith("HEAD") else await reader.readexactly(int(length[1]))
        return _DATE.sub(b"\r\nDate: -\r\n", head + rest)
    finally:
        writer.close()


@pytest.mark.parametrize("case", REQUESTS)
async def test_lean_answers_are_aiohttps_to_the_byte(case, aiohttp_server):
    settings = build_settings({})
    running = await start(Sessions(load(settings)), "127.0.0.1", 0)
    application = await aiohttp_server(create_app(settings))
    try:
        port = int(running.url.rpartition(":")[2])
        lean = await _exchange(port, *REQUESTS[case])
        expected = await _exchange(application.port, *REQUESTS[case])
    finally:
        await running.stop()
    assert lean == expected
    assert lean.startswith(b"HTTP/1.")


def test_an_answer_allowed_for_an_origin_writes_the_same_head_when_its_headers_are_read_after():
    """--cors's head made once per origin (Written.allow) and the header mapping read later write the same bytes."""
    from plantstub.contract.outgoing import json_reply
    from plantstub.server.wire import Written

    out = json_reply(200, {"name": "Fern"}, {})
    heads = []
    for read_after in (False, True):
        written = Written(out)
        assert written.allow("http://localhost:3000")
        if read_after:
            assert written.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
        heads.append(written._bytes().split(b"\r\nDate: ")[0])
    assert heads[0] == heads[1]
    assert b"\r\nAccess-Control-Allow-Origin: http://localhost:3000\r\nAccess-Control-Allow-Credentials: true\r\n" \
           b"Vary: Origin\r\nContent-Length: 15" in heads[0]
    assert not Written(out).allow("http://x\r\nSet-Cookie: a=b")  # refused as aiohttp refuses it, on its path
