"""Deliveries to a subscribed http:// receiver on kept connections (issue 26): what is sent, and receivers that
answer in the odd ways HTTP allows (closing after each answer, chunked bodies, HTTP/1.0)."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import pytest

from plantstub import Stub
from plantstub._version import __version__
from plantstub.webhooks import receivers
from tests.helpers import HANG, call, wait_until

NEW_PLANT = {"id": 7, "name": "Fern", "tag": "green"}


class RawReceiver:
    """A receiver reading raw requests on 127.0.0.1: counts connections, keeps each request's head and body."""

    def __init__(self, answer: bytes | Callable[[int, int], bytes | None], close_after: bool = False,
                 trickle: bool = False, together: bool = False, split: int = 0) -> None:
        self.answer = answer  # or, per (connection, request) counted from 1, the answer (None: close unanswered)
        self.close_after = close_after
        self.trickle = trickle  # each answer written a byte at a time
        self.together = together  # the answers to requests that came in one piece written in one piece
        self.split = split  # what is written goes in two pieces, the last `split` bytes a moment after the rest
        self.heads: list[str] = []
        self.bodies: list[bytes] = []
        self.connections = 0
        self.closed_by_us = 0  # connections the stub closed (the receiver read their end)
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
            threading.Thread(target=self._serve, args=(conn, self.connections), daemon=True).start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        try:
            self._answer(conn, number)
        except ConnectionResetError:  # the stub stopping closed its end with bytes unread there (a reset): closed
            self.closed_by_us += 1

    def _answer(self, conn: socket.socket, number: int) -> None:
        buf, out = b"", b""
        with conn:
            for request in range(1, 1000):
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        self.closed_by_us += 1
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                while len(buf) < length:
                    buf += conn.recv(65536)
                self.heads.append(head.decode())
                self.bodies.append(buf[:length])
                buf = buf[length:]
                answer = self.answer(number, request) if callable(self.answer) else self.answer
                if answer is None:
                    return
                if self.together and b"\r\n\r\n" in buf:  # another request came with this one: answered with it
                    out += answer
                    continue
                out, answer = b"", out + answer
                if self.trickle:
                    for i in range(len(answer)):
                        conn.sendall(answer[i:i + 1])
                        time.sleep(0.001)  # each byte its own read, mostly
                elif 0 < self.split < len(answer):
                    conn.sendall(answer[:-self.split])
                    time.sleep(0.05)  # read apart, mostly
                    conn.sendall(answer[-self.split:])
                else:
                    conn.sendall(answer)
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
                stub.wait_for_deliveries(n + 1, timeout=HANG)  # one at a time: a kept connection is reused
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


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def two_deliveries(receiver: RawReceiver) -> list:
    """Two plants created one after the other, each delivery awaited before the next (so a kept connection is
    offered again); the deliveries as recorded."""
    with Stub(spec="plant-store-full", webhook=[receiver.url]) as stub:
        for n in range(2):
            assert call(stub.url, "POST", "/plants", {**NEW_PLANT, "id": n})[0] == 200
            stub.wait_for_deliveries(n + 1, timeout=10)
        return stub.deliveries


def test_a_kept_connection_closed_unanswered_counts_as_an_attempt() -> None:
    """The receiver answers a connection's first request and closes on its second unanswered: that delivery is
    sent again as a second attempt, counted, never silently twice as one."""
    receiver = RawReceiver(lambda conn, request: OK if request == 1 else None)
    try:
        got = two_deliveries(receiver)
        assert [(d.attempts, d.status, d.valid) for d in got] == [(1, 200, True), (2, 200, True)]
        assert len(receiver.bodies) == 3  # the second delivery reached it twice: once per attempt counted
    finally:
        receiver.close()


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 2\xc2\xb20 OK\r\nContent-Length: 0\r\n\r\n",  # a superscript digit in the status
    b"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
    b"SIP/2.0 200 OK\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 70_000 + b"\r\n\r\n",
])
def test_an_answer_that_is_not_http_is_said_so(answer: bytes) -> None:
    receiver = RawReceiver(answer, close_after=True)
    try:
        with Stub(spec="plant-store-full", webhook=[receiver.url]) as stub:
            assert call(stub.url, "POST", "/plants", NEW_PLANT)[0] == 200
            [delivery] = stub.wait_for_deliveries(1, timeout=10)
        assert (delivery.attempts, delivery.status, delivery.valid) == (3, None, False)
        assert delivery.error is not None and delivery.error.startswith("the receiver's answer could not be read: ")
    finally:
        receiver.close()


@pytest.mark.parametrize("length", [b"\xc2\xb9", b"9" * 5000])
def test_a_content_length_past_reading_keeps_the_status_and_drops_the_connection(length: bytes) -> None:
    receiver = RawReceiver(b"HTTP/1.1 200 OK\r\nContent-Length: " + length + b"\r\n\r\n")
    try:
        got = two_deliveries(receiver)
        assert [(d.attempts, d.status, d.valid) for d in got] == [(1, 200, True)] * 2
        assert receiver.connections == 2  # a length not believed: the connection is not used again
    finally:
        receiver.close()


def test_an_idle_kept_connection_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(receivers, "IDLE_SECONDS", 0.2)
    receiver = RawReceiver(OK)
    try:
        with Stub(spec="plant-store-full", webhook=[receiver.url]) as stub:
            assert call(stub.url, "POST", "/plants", NEW_PLANT)[0] == 200
            stub.wait_for_deliveries(1, timeout=10)
            wait_until(lambda: receiver.closed_by_us == 1)
    finally:
        receiver.close()


def _pipelined_posts(url: str, first: int, count: int) -> None:
    """`count` plant creations written in one piece on one connection (so the stub decides them in one turn of its
    loop); each answer read."""
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 80
    requests = b""
    for n in range(first, first + count):
        body = b'{"id":%d,"name":"Fern","tag":"green"}' % n
        requests += (b"POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer t\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    with socket.create_connection((host, port), timeout=10) as conn:
        conn.sendall(requests)
        got = b""
        while got.count(b"HTTP/1.1 200 ") < count:
            data = conn.recv(65536)
            assert data, "the stub closed the connection"
            got += data


def test_deliveries_decided_together_go_pipelined_on_the_kept_connection() -> None:
    """Once a receiver kept its connection after an answer, the deliveries decided in one turn of the stub's loop are
    written on it together, without waiting for each answer: one connection, every delivery answered in order."""
    receiver = RawReceiver(OK)
    try:
        with Stub(spec="plant-store-full", webhook=[receiver.url]) as stub:
            assert call(stub.url, "POST", "/plants", {**NEW_PLANT, "id": 0})[0] == 200
            stub.wait_for_deliveries(1, timeout=10)
            _pipelined_posts(stub.url, 1, receivers.DEPTH)
            got = stub.wait_for_deliveries(receivers.DEPTH + 1, timeout=10)
        assert [(d.seq, d.attempts, d.status, d.error, d.valid) for d in got] == [
            (n, 1, 200, None, True) for n in range(1, receivers.DEPTH + 2)]
        assert receiver.bodies == [b'{"id":%d,"name":"Fern","tag":"green"}' % n for n in range(receivers.DEPTH + 1)]
        assert receiver.connections == 1
    finally:
        receiver.close()


def test_once_several_connections_are_kept_the_deliveries_decided_together_go_on_one() -> None:
    """A first burst opens a connection a delivery (none is known to be kept yet); once they are kept, the deliveries
    decided together go pipelined on one of them (one write, their answers read together), not one on each, and no
    connection more is opened while one has room (at most `receivers.DEPTH` unanswered on it)."""
    on: list[int] = []  # the connection each request came on, in the order they came

    def answer(connection: int, request: int) -> bytes:
        on.append(connection)
        if request == 1:
            time.sleep(0.3)  # the first answers come late: the burst's deliveries each found no kept connection
        return OK

    receiver = RawReceiver(answer)
    try:
        with Stub(spec="plant-store-full", webhook=[receiver.url]) as stub:
            _pipelined_posts(stub.url, 1, 4)
            stub.wait_for_deliveries(4, timeout=HANG)
            opened = receiver.connections
            _pipelined_posts(stub.url, 5, receivers.DEPTH)
            got = stub.wait_for_deliveries(4 + receivers.DEPTH, timeout=HANG)
        assert opened == 4
        assert receiver.connections == 4
        assert len(set(on[4:])) == 1
        assert [(d.attempts, d.status, d.valid) for d in got] == [(1, 200, True)] * (4 + receivers.DEPTH)
    finally:
        receiver.close()


def test_pipelined_deliveries_a_receiver_drops_are_each_tried_again() -> None:
    """A receiver that answers one request and closes the connection with more written on it: each delivery it did not
    answer counts that attempt as failed and is sent again; none is lost, none is sent twice as one attempt."""
    receiver = RawReceiver(lambda conn, request: OK if request == 1 else None)
    try:
        with Stub(spec="plant-store-full", webhook=[receiver.url]) as stub:
            assert call(stub.url, "POST", "/plants", {**NEW_PLANT, "id": 0})[0] == 200
            stub.wait_for_deliveries(1, timeout=10)
            _pipelined_posts(stub.url, 1, 5)
            got = stub.wait_for_deliveries(6, timeout=15)
        assert [(d.attempts, d.status, d.valid) for d in got] == [(1, 200, True)] + [(2, 200, True)] * 5
        sent = [b'{"id":%d,"name":"Fern","tag":"green"}' % n for n in range(1, 6)]
        assert sorted(receiver.bodies[-5:]) == sorted(sent)  # each sent again, once
    finally:
        receiver.close()


def _as_before(got: list, bodies: list[bytes], count: int) -> None:
    """The log and the receiver saw what they saw before issue 41's client: every delivery answered once, in order."""
    assert [(d.seq, d.name, d.attempts, d.status, d.error, d.valid) for d in got] == [
        (n, "/plant/webhook", 1, 200, None, True) for n in range(1, count + 1)]
    assert bodies == [b'{"id":%d,"name":"Fern","tag":"green"}' % n for n in range(count)]


def test_answers_cut_anywhere_complete_their_deliveries_in_order() -> None:
    """Answers that come a byte at a time (a head cut anywhere, its body apart from it) are read whole: each delivery
    is recorded once with its answer, on the one kept connection."""
    receiver = RawReceiver(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Note: cut\r\n\r\nok", trickle=True)
    try:
        with Stub(spec="plant-store-full", webhook=[receiver.url]) as stub:
            for n in range(3):
                assert call(stub.url, "POST", "/plants", {**NEW_PLANT, "id": n})[0] == 200
                stub.wait_for_deliveries(n + 1, timeout=HANG)
            _pipelined_posts(stub.url, 3, 5)  # and pipelined, their answers trickling in one after the other
            got = stub.wait_for_deliveries(8, timeout=HANG)
        _as_before(got, receiver.bodies, 8)
        assert receiver.connections == 1
    finally:
        receiver.close()


def test_answers_that_come_together_complete_each_of_their_deliveries() -> None:
    """A receiver that answers pipelined requests in one piece (several answers, bodies and all, in one read):
    each answer completes its own delivery, in order, and the admin API lists them as before."""
    receiver = RawReceiver(OK, together=True)
    try:
        with Stub(spec="plant-store-full", webhook=[receiver.url]) as stub:
            assert call(stub.url, "POST", "/plants", {**NEW_PLANT, "id": 0})[0] == 200
            stub.wait_for_deliveries(1, timeout=HANG)
            _pipelined_posts(stub.url, 1, receivers.DEPTH)
            got = stub.wait_for_deliveries(receivers.DEPTH + 1, timeout=HANG)
            listed = call(stub.url, "GET", "/__plantstub/deliveries")[1]
        _as_before(got, receiver.bodies, receivers.DEPTH + 1)
        assert receiver.connections == 1
        assert isinstance(listed, list) and [sorted(d) for d in listed] == [
            ["attempts", "body", "error", "name", "seq", "status", "time", "url", "valid"]] * (receivers.DEPTH + 1)
        assert [(d["seq"], d["url"], d["body"], d["status"], d["attempts"]) for d in listed] == [
            (n + 1, receiver.url, {**NEW_PLANT, "id": n}, 200, 1) for n in range(receivers.DEPTH + 1)]
    finally:
        receiver.close()


@pytest.mark.parametrize("split", [1, 3, len(OK) - 2, len(OK) + 5])
def test_answers_that_come_together_with_the_last_cut_complete_each_of_their_deliveries(split: int) -> None:
    """Whole answers read together, then the rest of the last one (its body, its head's end, or more) in a read of its
    own: each answer completes its own delivery, in order, on the one kept connection."""
    receiver = RawReceiver(OK, together=True, split=split)
    try:
        with Stub(spec="plant-store-full", webhook=[receiver.url]) as stub:
            assert call(stub.url, "POST", "/plants", {**NEW_PLANT, "id": 0})[0] == 200
            stub.wait_for_deliveries(1, timeout=HANG)
            _pipelined_posts(stub.url, 1, 6)
            got = stub.wait_for_deliveries(7, timeout=HANG)
        _as_before(got, receiver.bodies, 7)
        assert receiver.connections == 1
    finally:
        receiver.close()


_STAMPED = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux: each read says when its bytes reached the socket (ns)


def _stamped_read(sock: socket.socket) -> tuple[bytes, int]:
    """What one read gets, and when the kernel received it (0 at the end of the stream)."""
    data, extra, _, _ = sock.recvmsg(65536, socket.CMSG_SPACE(16))
    for level, kind, raw in extra:
        if level == socket.SOL_SOCKET and kind == _STAMPED:
            seconds, nanoseconds = struct.unpack("qq", raw[:16])
            return data, seconds * 10**9 + nanoseconds
    assert not data, "a read with bytes and no time stamp"
    return data, 0


def test_a_delivery_goes_out_after_the_answer_that_set_it_off() -> None:
    """The stub writes a turn of its loop's answers together at the end of the turn (server/batch.py); the deliveries
    those calls set off still go after them. Each call comes on a new connection (whose answer waits for the turn's
    end) once the receiver's connection is kept, and the kernel's time stamps of the two reads tell which came
    first."""
    listening = socket.create_server(("127.0.0.1", 0))
    listening.setsockopt(socket.SOL_SOCKET, _STAMPED, 1)
    delivered: list[int] = []

    def receive() -> None:
        conn, _ = listening.accept()
        with conn:
            while True:
                data, at = _stamped_read(conn)
                if not data:
                    return
                delivered.append(at)
                conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")

    threading.Thread(target=receive, daemon=True).start()
    receiver_url = f"http://127.0.0.1:{listening.getsockname()[1]}/hook"
    answered: list[int] = []
    try:
        with Stub(spec="plant-store-full", webhook=[receiver_url]) as stub:
            port = int(stub.url.rstrip("/").rsplit(":", 1)[1])
            for n in range(4):
                with socket.create_connection(("127.0.0.1", port), timeout=HANG) as client:
                    client.setsockopt(socket.SOL_SOCKET, _STAMPED, 1)
                    body = b'{"id":%d,"name":"Fern","tag":"green"}' % n
                    client.sendall(b"POST /plants HTTP/1.1\r\nHost: stub\r\nContent-Type: application/json\r\n"
                                   b"Authorization: Bearer t\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                    data, at = _stamped_read(client)
                    assert data.startswith(b"HTTP/1.1 200 ")
                    answered.append(at)
                    stub.wait_for_deliveries(n + 1, timeout=10)
        assert len(delivered) == 4
        assert all(answer < delivery for answer, delivery in zip(answered, delivered, strict=True)), (
            answered, delivered)
    finally:
        listening.close()
