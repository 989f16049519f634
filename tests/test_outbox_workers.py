"""The outbox's workers send each delivery in their own task (issue 26): a session that ends cancels its deliveries in
flight, and the worker that was sending one goes on with the next session's."""

from __future__ import annotations

import asyncio

from plantstub.webhooks.deliveries import DeliveryLog
from plantstub.webhooks.outbox import Outbox
from plantstub.webhooks.sender import Sender, job
from tests.helpers import HANG


async def test_an_ended_sessions_delivery_in_flight_is_cancelled_and_its_worker_goes_on():
    arrived: list[bytes] = []
    finished, hanging = asyncio.Event(), asyncio.Event()
    handlers: list[asyncio.Task[None]] = []

    async def receive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handlers.append(asyncio.current_task())  # type: ignore[arg-type]
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            arrived.append(head.split(b"\r\n", 1)[0])
            if b"/hang" in head:  # never answers in time: the delivery is in flight when its session ends
                hanging.set()
                await asyncio.wait_for(finished.wait(), HANG)
            else:
                writer.write(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(receive, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    outbox = Outbox(workers=1)  # one worker: the second delivery can only go out through it
    ended_log, going_log = DeliveryLog(), DeliveryLog()
    ended, going = Sender(ended_log, outbox), Sender(going_log, outbox)
    try:
        ended.submit(job(ended_log, "newPlant", f"http://127.0.0.1:{port}/hang", b"{}", None))
        await asyncio.wait_for(hanging.wait(), HANG)  # it reached the receiver: in flight
        assert len(ended.flying) == 1
        assert ended.abandon() == 1  # the session ends: its delivery in flight is cancelled
        going.submit(job(going_log, "newPlant", f"http://127.0.0.1:{port}/next", b"{}", None))
        deadline = asyncio.get_running_loop().time() + HANG
        while not going_log.kept() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        assert [sent.status for sent in going_log.kept()] == [204]
        assert ended_log.kept() == []  # cancelled, not recorded
        assert not ended.flying and not going.flying
    finally:
        finished.set()
        await outbox.close()
        await asyncio.gather(*handlers, return_exceptions=True)
        server.close()
        await server.wait_closed()
    assert arrived == [b"POST /hang HTTP/1.1", b"POST /next HTTP/1.1"]
