"""Deliveries after a reset (issue 24): numbered from 1 again, and a delivery still being sent when the reset came
neither enters the new epoch's list nor counts as pending in it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from plantstub import Stub
from tests.helpers import HANG, call, wait_until

NEW_PLANT = {"id": 7, "name": "Fern"}


class Holding:
    """A receiver on 127.0.0.1 that holds its first request until `release` is set (at most 10 s); `held` is set
    when that request has come, `answered` once the answer to it is written."""

    def __init__(self) -> None:
        self.held, self.release, self.answered = threading.Event(), threading.Event(), threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                first = not outer.held.is_set()
                if first:
                    outer.held.set()
                    outer.release.wait(10)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                if first:
                    outer.answered.set()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()


@pytest.fixture
def holding() -> Iterator[Holding]:
    receiver = Holding()
    yield receiver
    receiver.release.set()
    receiver.server.shutdown()
    receiver.server.server_close()


def test_a_late_delivery_stays_in_the_epoch_it_was_decided_in(holding: Holding) -> None:
    with Stub(spec="plant-store-full", webhook=[holding.url]) as stub:
        call(stub.url, "POST", "/plants", NEW_PLANT)
        assert holding.held.wait(10)  # delivery #1 of the first test is being sent
        stub.reset()  # the next test starts here
        assert stub.pending_deliveries() == 0  # the first test's delivery is not this one's to wait for
        assert call(stub.url, "GET", "/__plantstub/health")[1]["webhooks"]["pending"] == 0  # type: ignore[index]
        call(stub.url, "POST", "/plants", {**NEW_PLANT, "id": 8})
        assert [(d.seq, d.body["id"]) for d in stub.wait_for_deliveries(1, timeout=HANG)] == [(1, 8)]  # numbered from 1 again
        holding.release.set()
        assert holding.answered.wait(10)
        sender = stub._live().webhooks.sender
        wait_until(lambda: not sender.flying)  # the late delivery's answer has reached the stub, and is done
        assert [(d.seq, d.body["id"]) for d in stub.deliveries] == [(1, 8)]
        status, listed = call(stub.url, "GET", "/__plantstub/deliveries")
        assert status == 200 and [(d["seq"], d["body"]["id"]) for d in listed] == [(1, 8)]  # type: ignore[index, union-attr]
