"""One request path, however the bytes arrive: a request sent whole and one sent in pieces get the same bytes and the
same recorded call, for each kind of request (sessions, CORS, 204, refusals, dot segments, escapes, `//`, the absolute
form, the admin API); answers keep the order asked on a kept connection; a connection kept busy is never closed as
idle; a delayed call whose client leaves is recorded as never answered."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from plantstub.config import build_settings
from plantstub.server.runner import Running, start
from plantstub.server.runtime import load
from plantstub.server.table import Sessions

AUTH = "Authorization: Bearer t\r\nContent-Type: application/json\r\n"
VALID = b'{"id": 7, "name": "Fern", "tag": "indoor"}'
ORIGIN = "Origin: http://app.example\r\n"
CASES = {
    "valid": ("POST /plants", AUTH, VALID),
    "invalid": ("POST /plants", AUTH, b'{"id": "x", "tag": 3}'),
    "no token": ("POST /plants", "Content-Type: application/json\r\n", VALID),
    "not JSON": ("POST /plants", AUTH, b"{nope"),
    "no path": ("GET /nowhere", AUTH, b""),
    "not allowed": ("PATCH /plants", AUTH, b""),
    "a query": ("GET /plants?limit=2&limit=3", AUTH, b""),
    "prefer": ("GET /plants", AUTH + "Prefer: code=500\r\n", b""),
    "dot segments": ("POST /x/../plants", AUTH, VALID),
    "percent-escapes": ("DELETE /plants/%33", AUTH, b""),
    "a doubled slash": ("POST //plants", AUTH, VALID),
    "a doubled slash, a query": ("GET //plants?limit=2", AUTH, b""),  # a base URL + "/plants?..." (issue 39)
    "a doubled slash, admin": ("GET //__plantstub/scenarios", "", b""),
    "a doubled slash, session": ("POST //__session/s4/plants", AUTH, VALID),
    "absolute form": ("POST http://127.0.0.1/plants", AUTH, VALID),
    "admin": ("GET /__plantstub/scenarios", "", b""),
    "no content (204)": ("DELETE /plants/3", AUTH, b""),
    "session by header": ("POST /plants", AUTH + "X-Plantstub-Session: s1\r\n", VALID),
    "session by prefix": ("POST /__session/s2/plants", AUTH, VALID),
    "cors": ("POST /plants", AUTH + ORIGIN, VALID),
    "cors, no content": ("DELETE /plants/3", AUTH + ORIGIN, b""),
    "cors, session by header": ("POST /plants", AUTH + ORIGIN + "X-Plantstub-Session: s3\r\n", VALID),
}
_DATE = re.compile(rb"\r\nDate: [^\r]*\r\n")


async def _served(**options: Any) -> tuple[Running, int]:
    running = await start(Sessions(load(build_settings(options))), "127.0.0.1", 0)
    return running, int(running.url.rpartition(":")[2])


def _request(line: str, headers: str, body: bytes) -> bytes:
    return f"{line} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}Content-Length: {len(body)}\r\n\r\n".encode() + body


async def _answer(reader: asyncio.StreamReader) -> bytes:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    length = re.search(rb"\r\nContent-Length: (\d+)\r\n", head)
    rest = b"" if length is None else await asyncio.wait_for(reader.readexactly(int(length[1])), 5)
    return _DATE.sub(b"\r\nDate: -\r\n", head + rest)


async def _exchange(port: int, data: bytes, pieces: int) -> bytes:
    """`data` sent at once (pieces=1) or in two writes, the second after the stub has read the first."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        if pieces == 1:
            writer.write(data)
        else:
            cut = data.index(b"\r\n") + 2  # mid-head: no whole request in the first read
            writer.write(data[:cut])
            await writer.drain()
            await asyncio.sleep(0.05)
            writer.write(data[cut:])
        return await _answer(reader)
    finally:
        writer.close()


def _calls(running: Running) -> list[dict[str, Any]]:
    """The calls of every session, as the admin API shows them, less their time."""
    sessions = running.sessions
    found = [sessions.default, *(live.session for _, live, _ in sessions.listing())]
    return [{k: v for k, v in call.to_dict().items() if k != "time"} for s in found for call in s.journal.snapshot()]


@pytest.mark.parametrize("case", CASES)
async def test_a_request_at_once_and_in_pieces_get_the_same_bytes_and_the_same_call(case):
    line, headers, body = CASES[case]
    results = []
    for pieces in (2, 1, 2, 1):  # in pieces first: a session's first request opens it then
        running, port = await _served(spec="plant-store-full", cors="cors" in case)
        try:
            answers = [await _exchange(port, _request(line, headers, body), pieces) for _ in range(2)]
            results.append((answers, _calls(running)))
        finally:
            await running.stop()
    assert results[0] == results[1] == results[2] == results[3]
    answers, calls = results[0]
    assert answers[0].startswith(b"HTTP/1.1 ")
    assert len(calls) == (0 if "admin" in case else 2)
    assert ("Access-Control-Allow-Origin: http://app.example" in answers[0].decode()) == ("cors" in case)


async def test_answers_on_one_connection_keep_the_order_asked_when_the_first_is_delayed(tmp_path: Path):
    (tmp_path / "slow-one.yaml").write_text(
        "rules:\n  - match: {path: /plants, body: {name: Sloth}}\n"
        "    reply: {status: 200, body: {name: Sloth}, delay_ms: 300}\n")
    running, port = await _served(scenarios=tmp_path, scenario="slow-one")
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(_request("POST /plants", AUTH, b'{"id": 1, "name": "Sloth"}'))
        await writer.drain()
        await asyncio.sleep(0.05)  # the first is waiting out its delay when the second arrives
        writer.write(_request("POST /plants", AUTH, VALID))
        first, second = await _answer(reader), await _answer(reader)
        writer.close()
    finally:
        await running.stop()
    assert first.endswith(b'{"name":"Sloth"}')
    assert second.endswith(b'{"name":"Fern","tag":"indoor"}')


async def test_a_connection_busy_with_requests_is_not_closed_as_idle():
    """--read-timeout counts idle time between requests, not a connection's age: one in use for longer stays open."""
    running, port = await _served(read_timeout=2)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        data = _request("POST /plants", AUTH, VALID)
        writer.write(data[:20])  # the first in pieces
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(data[20:])
        answers = [await _answer(reader)]
        for _ in range(12):  # 12 x 0.3 s: far past 2 s in all, never idle nearly that long
            await asyncio.sleep(0.3)
            writer.write(data)
            answers.append(await _answer(reader))
        writer.close()
    finally:
        await running.stop()
    assert len(answers) == 13
    assert all(answer.startswith(b"HTTP/1.1 200 OK\r\n") for answer in answers)


async def test_a_delayed_call_whose_client_leaves_at_once_is_recorded_as_never_answered(tmp_path: Path):
    (tmp_path / "slow-one.yaml").write_text(
        "rules:\n  - match: {path: /plants}\n    reply: {status: 200, body: {name: Sloth}, delay_ms: 300}\n")
    running, port = await _served(scenarios=tmp_path, scenario="slow-one")
    try:
        for _ in range(5):  # sent and closed in one go: the close may come before the call is decided
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(_request("POST /plants", AUTH, VALID))
            writer.close()
        for _ in range(100):
            calls = _calls(running)
            if len(calls) == 5 and all(call["response"] is not None for call in calls):
                break
            await asyncio.sleep(0.05)
    finally:
        await running.stop()
    assert [call["response"]["status"] for call in calls] == [499] * 5
    assert all("no answer went out" in call["response"]["body"]["message"] for call in calls)
