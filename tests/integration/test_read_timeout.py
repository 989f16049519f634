"""--read-timeout: a request must arrive in full within it, an idle connection is closed after it, and
neither holds other clients out; clients reconnect after the close without a failed request."""

from __future__ import annotations

import asyncio
import json
import socket
import time
import urllib.request

import aiohttp
import pytest
import requests

from plantstub import Stub
from plantstub.errors import ConfigError
from tests.helpers import HANG, address, write

HEAD = b"POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nContent-Type: application/json\r\n"
BODY = b'{"id": 1, "name": "Fern"}'
HALF_SENT = [  # half a request line, a head without its end, a body shorter than its Content-Length
    b"POST /pla",
    HEAD,
    HEAD + b"Content-Length: 100\r\n\r\n" + BODY,
]


def connect(url: str) -> socket.socket:
    host, port = address(url)
    return socket.create_connection((host, int(port)), timeout=10)


def read_all(conn: socket.socket) -> bytes:
    received = b""
    while chunk := conn.recv(65536):
        received += chunk
    return received


def read_answer(conn: socket.socket) -> bytes:
    """One answer on a connection kept open: its head and the body its Content-Length announces."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += conn.recv(65536)
    head, _, body = received.partition(b"\r\n\r\n")
    size = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")))
    while len(body) < size:
        body += conn.recv(65536)
    return head + b"\r\n\r\n" + body


def json_body(answer: bytes) -> dict:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"Content-Type: application/json" in head, head
    return json.loads(body)


def health(url: str, timeout: float = 5) -> int:
    with urllib.request.urlopen(url + "/__plantstub/health", timeout=timeout) as response:
        return int(response.status)


def calls(url: str) -> list[dict]:
    with urllib.request.urlopen(url + "/__plantstub/calls", timeout=5) as response:
        return json.load(response)


@pytest.fixture
def stub():
    with Stub(read_timeout=0.25) as running:
        yield running


@pytest.mark.parametrize("sent", HALF_SENT, ids=["request-line", "head", "body"])
def test_a_half_sent_request_gets_a_408_and_is_recorded(stub, sent):
    started = time.monotonic()  # before the stub's clock starts: a busy machine can only make the 408 later
    with connect(stub.url) as conn:
        conn.sendall(sent)
        answer = read_all(conn)
    assert time.monotonic() - started > 0.2  # not before --read-timeout
    assert answer.startswith((b"HTTP/1.1 408 ", b"HTTP/1.0 408 "))
    message = "request: not received in full within 0.25 s (--read-timeout)"
    assert json_body(answer) == {"error": 408, "message": message}
    [call] = calls(stub.url)
    path = "/pla" if sent == HALF_SENT[0] else "/plants"
    assert (call["method"], call["path"], call["response"]["status"], call["errors"]) == ("POST", path, 408, [message])


@pytest.mark.parametrize("sent", HALF_SENT, ids=["request-line", "head", "body"])
def test_a_half_sent_request_behind_a_whole_one_in_the_same_write_gets_a_408(stub, sent):
    """The first is answered; the second's time starts with its first byte, though no read of its own brought it."""
    whole = HEAD + b"Content-Length: %d\r\n\r\n" % len(BODY) + BODY
    with connect(stub.url) as conn:
        conn.sendall(whole + sent)
        answer = read_all(conn)
    first, _, second = answer.partition(b"HTTP/1.1 408 ")
    assert first.startswith(b"HTTP/1.1 200 "), answer
    message = "request: not received in full within 0.25 s (--read-timeout)"
    assert json_body(b"HTTP/1.1 408 " + second) == {"error": 408, "message": message}
    assert [call["response"]["status"] for call in calls(stub.url)] == [200, 408]


def test_the_whole_request_counts_not_each_pause(stub):
    """A body trickled steadily, a byte every 0.05 s, is still not received in full within 0.25 s."""
    with connect(stub.url) as conn:
        conn.sendall(HEAD + b"Content-Length: %d\r\n\r\n" % len(BODY))
        answer = b""
        for byte in BODY:
            try:
                conn.sendall(bytes([byte]))
            except OSError:  # closed after the 408
                break
            time.sleep(0.05)
        answer = read_all(conn)
    assert json_body(answer)["error"] == 408


def test_a_connection_that_sends_nothing_is_closed(stub):
    started = time.monotonic()  # before the stub's clock starts: a busy machine can only make the close later
    with connect(stub.url) as conn:
        assert read_all(conn) == b""
    assert time.monotonic() - started > 0.2  # not before --read-timeout
    assert calls(stub.url) == []  # no request, no call


def opened(session: requests.Session, url: str) -> int:
    """How many connections a requests Session opened to `url` so far."""
    pools = session.get_adapter(url).poolmanager.pools
    return sum(pools[key].num_connections for key in pools.keys())  # noqa: SIM118 - urllib3 refuses iter(pools)


def test_requests_on_one_connection_keep_it_open_past_the_timeout():
    """Each request starts its own time: five requests 0.5 s apart (2.5 s) on one keep-alive connection, against a
    --read-timeout of 2 s (a busy machine may stretch a pause: the margin is 1.5 s)."""
    with Stub(read_timeout=2) as stub, requests.Session() as session:
        for i in range(5):
            response = session.post(stub.url + "/plants", json={"id": i, "name": "Fern"}, headers={"Authorization": "Bearer t"})
            assert response.status_code == 200
            time.sleep(0.5)
        assert opened(session, stub.url) == 1
        assert len(calls(stub.url)) == 5


def test_a_slow_reply_is_not_cut(tmp_path):
    write(tmp_path, "slow.yaml", "rules:\n  - match: {path: /plants}\n    reply: {status: 200, body: {name: Slow}, delay_ms: 600}\n")
    with Stub(scenarios=tmp_path, scenario="slow", read_timeout=0.25) as stub:
        response = requests.post(stub.url + "/plants", json={"id": 1, "name": "Fern"}, headers={"Authorization": "Bearer t"})
        assert (response.status_code, response.json()) == (200, {"name": "Slow"})


def test_an_idle_keep_alive_connection_is_closed(stub):
    with connect(stub.url) as conn:
        started = time.monotonic()  # before the stub's idle clock starts: a busy machine only makes the close later
        conn.sendall(b"GET /__plantstub/health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_answer(conn).startswith(b"HTTP/1.1 200 OK")  # kept alive, then idle
        assert read_all(conn) == b""
    assert time.monotonic() - started > 0.2  # not before --read-timeout


def test_clients_reconnect_after_an_idle_close(stub):
    """The stub closes a pooled keep-alive connection after 0.25 s idle: requests, and aiohttp's client with a
    longer keep-alive of its own, see the close and open a new connection; no request fails."""
    with requests.Session() as session:
        assert session.get(stub.url + "/__plantstub/health", timeout=5).status_code == 200
        time.sleep(1.5)  # closed by now, 0.25 s idle (a busy machine may be late: the margin is 1.25 s); urllib3 reconnects
        assert session.get(stub.url + "/__plantstub/health", timeout=5).status_code == 200

    async def with_aiohttp() -> tuple[list[int], int]:
        statuses, opened = [], 0

        async def count(*_: object) -> None:
            nonlocal opened
            opened += 1

        trace = aiohttp.TraceConfig()
        trace.on_connection_create_end.append(count)
        connector = aiohttp.TCPConnector(keepalive_timeout=60)
        async with aiohttp.ClientSession(connector=connector, trace_configs=[trace]) as session:
            for pause in (1.5, 0):
                async with session.post(stub.url + "/plants", json={"id": 1, "name": "F"},
                                        headers={"Authorization": "Bearer t"}) as response:
                    statuses.append(response.status)
                await asyncio.sleep(pause)
        return statuses, opened

    assert asyncio.run(with_aiohttp()) == ([200, 200], 2)


def test_a_body_over_max_body_is_refused_at_once_without_expect():
    with Stub(max_body=1000) as stub, connect(stub.url) as conn:
        conn.sendall(HEAD + b"Content-Length: 5000000\r\n\r\n")  # and no body yet, nor Expect: 100-continue
        answer = read_answer(conn)  # at once: a stub that waited for the body would answer 408 after --read-timeout
        assert answer.startswith(b"HTTP/1.1 413 ")
        assert json_body(answer) == {"error": 413, "message": "body: larger than the limit of 1000 bytes (--max-body)"}
        [call] = calls(stub.url)
        assert call["response"]["status"] == 413


@pytest.mark.parametrize("value", ["0", "-1", "abc", "nan", "90000"])
def test_read_timeout_must_be_a_positive_number_of_seconds(value):
    with pytest.raises(ConfigError) as caught:
        Stub(read_timeout=value)
    assert str(caught.value) == (
        f"read_timeout={value!r}: not a number of seconds (expected a number above 0, at most 86400)")


def _nothing_yet(conn: socket.socket) -> bool:
    """Whether nothing has arrived on `conn` yet (nor has it been closed)."""
    timeout = conn.gettimeout()
    conn.settimeout(0)  # a look, no wait
    try:
        conn.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return True
    finally:
        conn.settimeout(timeout)
    return False


def test_half_sent_requests_are_answered_408_while_others_are_served(serve):
    stub = serve("--port", "0", "--read-timeout", "2")
    stalled = []
    try:
        for i in range(60):
            conn = connect(stub.url)
            conn.sendall(HALF_SENT[i % 3])
            stalled.append(conn)
        assert health(stub.url) == 200
        # Meanwhile: when health is answered, none of the 60 has had its 408 yet (a stub held up by them would
        # have answered them first). The margin is the 2 s of --read-timeout.
        assert [_nothing_yet(conn) for conn in stalled] == [True] * 60
        for conn in stalled:
            conn.settimeout(HANG)
            assert json_body(read_all(conn)) == {
                "error": 408, "message": "request: not received in full within 2 s (--read-timeout)"}
        assert health(stub.url) == 200
        assert sum(call["response"]["status"] == 408 for call in calls(stub.url)) == 60
    finally:
        for conn in stalled:
            conn.close()
    stub.stop()
    assert stub.stderr == ""


def test_half_sent_connections_beyond_the_open_file_limit_do_not_lock_clients_out(serve):
    """200 half-sent requests against a stub allowed 128 open files: a client is answered once the
    stalled ones time out, and the refused accepts write a few lines, not one (with a traceback) each."""
    stub = serve("--port", "0", env={"PLANTSTUB_READ_TIMEOUT": "1"}, open_files=128)  # the variable, this time
    stalled = []
    try:
        for i in range(200):
            conn = connect(stub.url)
            conn.sendall(HALF_SENT[i % 3])
            stalled.append(conn)
        assert health(stub.url, timeout=HANG) == 200  # waits in the listen queue until the stalled ones are closed
        timed_out = 0
        for conn in stalled:
            conn.settimeout(10)
            answer = read_all(conn)
            timed_out += answer == b"" or json_body(answer)["error"] == 408
        assert timed_out == len(stalled)
        assert health(stub.url) == 200
    finally:
        for conn in stalled:
            conn.close()
    stub.stop()
    lines = stub.stderr.splitlines()
    assert 1 <= len(lines) < 10, stub.stderr[:2000]
    assert lines[0].startswith("plantstub: cannot accept connections: ")
    assert "Traceback" not in stub.stderr
