"""Deliveries to a subscribed http:// receiver on kept connections (issue 26): what is sent, and receivers that
answer in the odd ways HTTP allows (closing after each answer, chunked bodies, HTTP/1.0)."""

from __future__ import annotations

import socket
import threading

import pytest

from plantstub import Stub
from plantstub._version import __version__
from tests.helpers import call

NEW_PLANT = {"id": 7, "name": "Fern", "tag": "green"}


class RawReceiver:
    """A receiver reading raw requests on 127.0.0.1: counts connections, keeps each request's head and body."""

    def __init__(self, answer: bytes, close_after: bool) -> None:
        self.answer = answer
        self.close_after = close_after
        self.heads: list[str] = []
        self.bodies: list[bytes] = []
        self.connections = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        with conn:
            for _ in range(1000):
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                while len(buf) < length:
                    buf += conn.recv(65536)
                self.heads.append(head.decode())
                self.bodies.append(buf[:length])
                buf = buf[length:]
                conn.sendall(self.answer)
                if self.close_after:
                    return

    def close(self) -> None:
        self.sock.close()


@pytest.mark.parametrize(("answer", "close_after", "most"), [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", False, 1),  # kept alive: one connection
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", True, 5),  # closed without a word after each answer
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", False, 5),
    (b"HTTP/1.0 200 OK\r\n\r\nok", True, 5),
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", False, 1),
])
def test_deliveries_reach_a_raw_receiver_however_it_answers(answer: bytes, close_after: bool, most: int) -> None:
    receiver = RawReceiver(answer, close_after)
    try:
        with Stub(spec="plant-store-full", webhook=[receiver.url]) as stub:
            for n in range(5):
                assert call(stub.url, "POST", "/plants", {**NEW_PLANT, "id": n})[0] == 200
                stub.wait_for_deliveries(n + 1)  # one at a time: a kept connection is reused
            got = stub.deliveries
        assert [(d.attempts, d.status, d.error, d.valid) for d in got] == [(1, 200, None, True)] * 5
        assert receiver.bodies == [b'{"id":%d,"name":"Fern","tag":"green"}' % n for n in range(5)]
        assert receiver.connections <= most
        lines = receiver.heads[0].split("\r\n")
        assert lines[0] == "POST /hook HTTP/1.1"
        headers = dict(line.split(": ", 1) for line in lines[1:])
        assert headers == {"Host": receiver.url.split("/")[2], "User-Agent": f"plantstub/{__version__}",
                           "Accept": "*/*", "Accept-Encoding": "gzip, deflate", "Content-Type": "application/json",
                           "X-Plantstub-Webhook": "/plant/webhook", "Content-Length": str(len(receiver.bodies[0]))}
    finally:
        receiver.close()


def test_a_receiver_that_answers_nothing_is_recorded_as_such() -> None:
    receiver = RawReceiver(b"", True)  # reads the request, closes without an answer
    try:
        with Stub(spec="plant-store-full", webhook=[receiver.url]) as stub:
            assert call(stub.url, "POST", "/plants", NEW_PLANT)[0] == 200
            [delivery] = stub.wait_for_deliveries(1, timeout=10)
        assert (delivery.attempts, delivery.status, delivery.valid) == (3, None, False)
        assert delivery.error == "the receiver could not be reached (ServerDisconnectedError)"
    finally:
        receiver.close()
