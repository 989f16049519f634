"""plantstub's own connections, on both of aiohttp's parsers: many requests on one kept-alive connection and pipelined
in one write cut anywhere get the same answers and records; a client that reads nothing is read no further; an aiohttp
whose parser plantstub was not proven on is served through aiohttp's own server, said once on stderr; a client that
half-closes (or sends TLS's close_notify) after its requests gets every answer."""

from __future__ import annotations

import contextlib
import json
import random
import re
import socket
import ssl
import threading
import time

import aiohttp
import pytest

from plantstub import Stub
from plantstub.server import parser
from tests.helpers import ServeProcess, address, call, wait_until

N = 1000
PARSERS = [pytest.param({}, id="c-parser"), pytest.param({"AIOHTTP_NO_EXTENSIONS": "1"}, id="python-parser")]
_DATE = re.compile(rb"\r\nDate: [^\r]*")


def _requests(n: int) -> list[bytes]:
    """n requests of five kinds in turn: a valid create, an invalid one, a chunked create, a query on a path with
    another method (405), and one in a session by prefix."""
    made = []
    for i in range(n):
        kind = i % 5
        if kind == 0:
            body = json.dumps({"id": i, "name": f"plant-{i}"}).encode()
            made.append(b"POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nContent-Type: "
                        b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        elif kind == 1:
            body = json.dumps({"id": str(i)}).encode()
            made.append(b"POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nContent-Type: "
                        b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        elif kind == 2:
            body = json.dumps({"id": i, "name": f"chunked-{i}", "tag": "t"}).encode()
            half = len(body) // 2
            made.append(b"POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nContent-Type: "
                        b"application/json\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n"
                        % (half, body[:half], len(body) - half, body[half:]))
        elif kind == 3:
            made.append(b"GET /plants?limit=%d&x=%%20y HTTP/1.1\r\nHost: x\r\n\r\n" % i)
        else:
            body = json.dumps({"id": i, "name": f"session-{i}"}).encode()
            made.append(b"POST /__session/s1/plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nContent-Type: "
                        b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    return made


def _answers(sock: socket.socket, n: int) -> list[bytes]:
    """n answers read off `sock` (each with a Content-Length), their Date header left out."""
    found: list[bytes] = []
    data = b""
    sock.settimeout(60)
    while len(found) < n:
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            length = int(re.search(rb"Content-Length: (\d+)", data[:end]).group(1))
            if len(data) >= end + 4 + length:
                found.append(_DATE.sub(b"", data[:end + 4 + length]))
                data = data[end + 4 + length:]
                continue
        more = sock.recv(65536)
        assert more, f"the connection closed after {len(found)} answers"
        data += more
    return found


def _calls(url: str, prefix: str = "") -> list[dict]:
    status, calls = call(url, "GET", f"{prefix}/__plantstub/calls")
    assert status == 200
    return [{k: v for k, v in c.items() if k not in ("seq", "time")} for c in calls]


@pytest.mark.parametrize("env", PARSERS)
def test_a_thousand_requests_one_at_a_time_and_pipelined_cut_anywhere_get_the_same_answers_and_calls(env):
    requests = _requests(N)
    one_by_one = ServeProcess("--port", "0", env=env)
    pipelined = ServeProcess("--port", "0", env=env)
    try:
        host, port = address(one_by_one.url)
        with socket.create_connection((host, int(port))) as sock:
            first = []
            for request in requests:
                sock.sendall(request)
                first.extend(_answers(sock, 1))
        host, port = address(pipelined.url)
        glued = b"".join(requests)
        cuts = sorted(random.Random(36).sample(range(1, len(glued)), 400))
        with socket.create_connection((host, int(port))) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            read: list[bytes] = []
            reader = threading.Thread(target=lambda: read.extend(_answers(sock, N)))
            reader.start()
            for start, end in zip([0, *cuts], [*cuts, len(glued)], strict=True):
                sock.sendall(glued[start:end])
            reader.join(120)
        assert len(read) == N and read == first
        statuses = [int(answer.split(b" ", 2)[1]) for answer in first]
        assert statuses == [[200, 400, 200, 405, 200][i % 5] for i in range(N)]
        assert b'{"name":"plant-0"}' in first[0] and b'{"name":"session-4"}' in first[4]
        for url in (one_by_one.url, pipelined.url):
            calls = _calls(url)
            assert [(c["method"], c["path"], c["response"]["status"]) for c in calls] == [
                (("POST", "/plants", 200), ("POST", "/plants", 400), ("POST", "/plants", 200),
                 ("GET", "/plants", 405))[i % 5] for i in range(N) if i % 5 != 4]
            assert calls[3]["query"] == {"limit": "3", "x": " y"}
            assert len(_calls(url, "/__session/s1")) == N // 5
        assert _calls(one_by_one.url) == _calls(pipelined.url)
        assert _calls(one_by_one.url, "/__session/s1") == _calls(pipelined.url, "/__session/s1")
    finally:
        one_by_one.stop()
        pipelined.stop()


def _recorded(url: str) -> int:
    return call(url, "GET", "/__plantstub/health")[1]["journal"]["recorded"]


@pytest.mark.parametrize("env", PARSERS)
def test_a_client_that_reads_nothing_is_read_no_further_until_it_reads(env):
    served = ServeProcess("--port", "0", env=env)
    try:
        body = json.dumps({"id": 1, "name": "x" * 60_000}).encode()
        request = (b"POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        host, port = address(served.url)
        with socket.create_connection((host, int(port))) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            sender = threading.Thread(target=lambda: sock.sendall(request * 300), daemon=True)
            sender.start()
            seen = [-1, _recorded(served.url)]
            deadline = time.monotonic() + 60
            while seen[-1] != seen[-2] and time.monotonic() < deadline:  # until answering stops
                time.sleep(0.5)
                seen.append(_recorded(served.url))
            assert seen[-1] < 300, "every answer was made while the client read none"
            answers = _answers(sock, 300)  # the client reads: the rest is read and answered
            sender.join(60)
        assert len(answers) == 300 and all(a.startswith(b"HTTP/1.1 200 ") for a in answers)
        wait_until(lambda: _recorded(served.url) == 300)
    finally:
        served.stop()


def _refused(reason: str, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    """A Stub whose aiohttp parser is not proven still answers, through aiohttp's own server, saying so once."""
    assert parser.self_test() is not None
    with Stub() as stub:
        status, body = call(stub.url, "POST", "/plants", {"id": 1, "name": "Fern"}, {"Authorization": "Bearer t"})
        assert (status, body) == (200, {"name": "Fern"})
        status, body = call(stub.url, "POST", "/plants", {"id": "x", "name": "Fern"}, {"Authorization": "Bearer t"})
        assert status == 400 and body["message"] == "body.id: 'x' is not of type 'integer'"
        assert len(stub.calls) == 2
    lines = [line for line in capfd.readouterr().err.splitlines() if line.startswith("plantstub:")]
    assert len(lines) == 1 and re.fullmatch(f"plantstub: {reason}; serving through aiohttp's own server instead",
                                            lines[0]), lines


def test_an_aiohttp_release_not_proven_is_served_through_aiohttps_own_server(monkeypatch, capfd):
    monkeypatch.setattr(aiohttp, "__version__", "4.0.0a1")
    _refused(re.escape("aiohttp 4.0.0a1 is outside the releases plantstub's connections were proven on (3.11.15 to "
                       "before 3.15.0)"), monkeypatch, capfd)


def test_a_parser_that_changed_is_served_through_aiohttps_own_server(monkeypatch, capfd):
    class Changed:  # aiohttp's development branch: another constructor
        def __init__(self, protocol, loop, limit, timer, max_line_size, extra) -> None:
            raise AssertionError("not reached")

    monkeypatch.setattr(parser, "HttpRequestParser", Changed)
    _refused(re.escape(f"aiohttp {aiohttp.__version__}'s request parser cannot be used on its own (TypeError: ")
             + ".*" + re.escape(")"), monkeypatch, capfd)


def _create(name: str, n: int, expect: bool = False) -> tuple[bytes, bytes]:
    """A valid create's head and body (`expect`: the head asks for a go-ahead before the body)."""
    body = json.dumps({"id": n, "name": name}).encode()
    return (b"POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nContent-Type: application/json\r\n"
            b"%sContent-Length: %d\r\n\r\n" % (b"Expect: 100-continue\r\n" if expect else b"", len(body))), body


def test_answers_written_together_keep_each_clients_order_and_come_before_a_go_ahead():
    """Answers made in one turn of the loop are written at its end (issue 41): a 100 Continue never overtakes an
    answer made before it, and many clients at once, pipelining, each get their own answers in order."""
    served = ServeProcess("--port", "0")
    try:
        host, port = address(served.url)
        with socket.create_connection((host, port)) as sock:
            head, body = _create("first", 1)
            later, rest = _create("second", 2, expect=True)
            sock.sendall(head + body + later)  # an answer made, then a head waiting for its go-ahead, in one read
            sock.settimeout(60)
            got = b""
            while b"HTTP/1.1 100 Continue\r\n\r\n" not in got:
                more = sock.recv(65536)
                assert more, got
                got += more
            assert got.startswith(b"HTTP/1.1 200 ") and got.index(b'{"name":"first"}') < got.index(b" 100 Continue")
            sock.sendall(rest)
            tail = got.split(b"HTTP/1.1 100 Continue\r\n\r\n", 1)[1]
            while b'{"name":"second"}' not in tail:
                more = sock.recv(65536)
                assert more, tail
                tail += more
            assert tail.startswith(b"HTTP/1.1 200 ")

        wrong: list[str] = []

        def client(c: int) -> None:
            with socket.create_connection((host, port)) as conn:
                for turn in range(10):
                    names = [f"c{c}-{turn}-{k}" for k in range(4)]
                    conn.sendall(b"".join(b"".join(_create(name, k)) for k, name in enumerate(names)))
                    answers = _answers(conn, 4)
                    if [json.loads(a.split(b"\r\n\r\n", 1)[1])["name"] for a in answers] != names:
                        wrong.append(f"client {c}, turn {turn}: {answers}")

        clients = [threading.Thread(target=client, args=(c,)) for c in range(16)]
        for thread in clients:
            thread.start()
        for thread in clients:
            thread.join(120)
        assert not wrong, wrong[:3]
        assert _recorded(served.url) == 2 + 16 * 10 * 4
    finally:
        served.stop()


def _until_closed(sock: socket.socket) -> bytes:
    got = b""
    sock.settimeout(60)
    while more := sock.recv(65536):
        got += more
    return got


@pytest.mark.parametrize("env", PARSERS)
def test_a_client_that_sends_its_requests_then_half_closes_gets_every_answer(env):
    """Pipelined creates (each served once its body is read) and then the client's half-close (shutdown(SHUT_WR), as
    `nc -N` does) in the same turn of the loop: every answer still comes before the stub's close (issue 41's held
    answers went to a closing socket)."""
    served = ServeProcess("--port", "0", env=env)
    try:
        host, port = address(served.url)
        for attempt in range(5):
            with socket.create_connection((host, int(port))) as sock:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.sendall(b"".join(b"".join(_create(f"p{attempt}-{k}", k)) for k in range(20)))
                sock.shutdown(socket.SHUT_WR)
                got = _until_closed(sock)
            assert got.count(b"HTTP/1.1 200 ") == 20, f"attempt {attempt}: {got.count(b'HTTP/1.1 ')} answers"
    finally:
        served.stop()


class _Tls:
    """A TLS client on a socket whose bytes the test sends itself (what goes in one write is up to it)."""

    ASK = b"GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n"

    def __init__(self, sock: socket.socket, context: ssl.SSLContext) -> None:
        self.sock, self.incoming, self.outgoing = sock, ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = context.wrap_bio(self.incoming, self.outgoing)
        sock.settimeout(60)
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                sock.sendall(self.outgoing.read())
                self.incoming.write(sock.recv(65536))

    def answered(self) -> None:
        """One call, its answer read: the connection is the stub's, past its TLS door."""
        self.tls.write(self.ASK)
        self.sock.sendall(self.outgoing.read())
        got = b""
        while b"HTTP/1.1 404 " not in got:
            try:
                got += self.tls.read(65536)
            except ssl.SSLWantReadError:
                self.incoming.write(self.sock.recv(65536))


def test_tls_requests_and_the_clients_close_notify_in_one_read_get_every_answer():
    """Over HTTPS, requests followed by the client's close_notify in one read: their answers go out before TLS shuts
    down (held to the end of the turn, they were dropped: the transport was shutting down by then)."""
    context = _trusting()
    with Stub(tls=True) as stub:
        host, port = address(stub.url)
        with socket.create_connection((host, port)) as one, socket.create_connection((host, port)) as other:
            client = _Tls(one, context)
            client.answered()
            _Tls(other, context).answered()  # the last answered is another client's: this one's answers are held
            got = _ten_then_close_notify(client, one)
        assert got.count(b"HTTP/1.1 404 ") == 10, got


def test_tls_requests_and_the_clients_close_notify_in_the_handshakes_last_read_get_every_answer():
    """Over HTTPS, the client's Finished, its requests and its close_notify in one read: the requests are answered
    before TLS shuts down (they waited for the handshake's hand-over, which came after the shutdown had begun)."""
    with Stub(tls=True) as stub:
        with socket.create_connection(address(stub.url)) as sock:
            client = _Tls(sock, _trusting())  # its Finished not sent yet: it goes with the requests
            got = _ten_then_close_notify(client, sock)
        assert got.count(b"HTTP/1.1 404 ") == 10, got


def _trusting() -> ssl.SSLContext:
    """A client's TLS context that takes the stub's own certificate."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _ten_then_close_notify(client: _Tls, sock: socket.socket) -> bytes:
    """Ten requests and the client's close_notify (with what TLS still had to send) in one write: the answers."""
    client.tls.write(client.ASK * 10)
    with contextlib.suppress(ssl.SSLWantReadError):
        client.tls.unwrap()
    sock.sendall(client.outgoing.read())
    return _tls_answers(client, sock)


def _tls_answers(client: _Tls, sock: socket.socket) -> bytes:
    client.incoming.write(_until_closed(sock))
    got = b""
    with contextlib.suppress(ssl.SSLError):
        while more := client.tls.read(65536):
            got += more
    return got


def test_tls_requests_then_the_clients_half_close_get_every_answer():
    """Over HTTPS, a half-close with no close_notify (shutdown(SHUT_WR) on a TLS socket) after requests: those that
    came with the handshake's end, and creates served once their bodies are read, all get their answers (held to the
    end of the turn, they were dropped: TLS had begun shutting down when the end of the client was read)."""
    context = _trusting()
    with Stub(tls=True) as stub:
        host, port = address(stub.url)
        with socket.create_connection((host, port)) as sock:
            client = _Tls(sock, context)  # its Finished not sent yet: it goes with the requests
            client.tls.write(client.ASK * 10)
            sock.sendall(client.outgoing.read())
            sock.shutdown(socket.SHUT_WR)
            assert _tls_answers(client, sock).count(b"HTTP/1.1 404 ") == 10
        for attempt in range(3):
            with socket.create_connection((host, port)) as one, socket.create_connection((host, port)) as other:
                client = _Tls(one, context)
                client.answered()
                _Tls(other, context).answered()  # the last answered is another client's: this one's answers are held
                client.tls.write(b"".join(b"".join(_create(f"p{attempt}-{k}", k)) for k in range(20)))
                one.sendall(client.outgoing.read())
                one.shutdown(socket.SHUT_WR)
                got = _tls_answers(client, one)
            assert got.count(b"HTTP/1.1 200 ") == 20, f"attempt {attempt}: {got.count(b'HTTP/1.1 ')} answers"
