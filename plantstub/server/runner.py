"""Run the stub on a socket: plantstub's own connections (server/connection.py) on aiohttp's parser, or, when that
parser is not one plantstub was proven on (server/parser.py), aiohttp's own low-level server; start and stop."""

from __future__ import annotations

import asyncio
import ssl
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

from plantstub.server.batch import Batch
from plantstub.server.connection import Connection
from plantstub.server.errorlog import ErrorLog
from plantstub.server.front import Front
from plantstub.server.parser import self_test
from plantstub.server.reload import start_watch, stop_watch
from plantstub.server.table import Sessions
from plantstub.server.tls_door import TlsDoor

SHUTDOWN = 1.0  # seconds the answers being made get to go out when the stub stops


def url_for(host: str, port: int, scheme: str = "http") -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}:{port}"


class Listener:
    """The stub's listening socket: makes a Connection for each client and keeps them, to close them at stop."""

    def __init__(self, front: Front, loop: asyncio.AbstractEventLoop, scheme: str) -> None:
        settings = front.sessions.runtime.settings
        self.front = front
        self.loop = loop
        self.batch = Batch(loop, on=scheme == "http")  # a turn's answers, written together at its end
        self.scheme = scheme
        self.read_timeout = settings.read_timeout
        self.connections: set[Connection] = set()
        self.doors: set[TlsDoor] = set()

    def __call__(self) -> Connection:
        return Connection(self)

    def door(self, context: ssl.SSLContext) -> TlsDoor:
        """The protocol of a new connection to an HTTPS stub: its first byte looked at before TLS starts."""
        return TlsDoor(self, context, self.front, self.read_timeout, self.doors)

    async def shutdown(self, timeout: float) -> None:
        """Give the answers being made `timeout` seconds, then cut them; close every connection (at once for TLS, whose
        close would wait for the client's close_notify, which a kept-alive client never sends)."""
        for door in list(self.doors):
            door.abort()
        for connection in list(self.connections):
            connection.stopping = True
        busy = [c.busy for c in self.connections if c.busy is not None]
        if busy:
            await asyncio.wait(busy, timeout=timeout)
        for task in busy:
            task.cancel()
        if busy:
            await asyncio.wait(busy, timeout=timeout)
        for connection in list(self.connections):
            connection.close(abort=self.scheme == "https")
        for _ in range(int(timeout / 0.05)):  # a client that reads nothing keeps its answer in the buffer: cut then
            if not self.connections:
                break
            await asyncio.sleep(0.05)
        for connection in list(self.connections):
            connection.close(abort=True)


class Running:
    """A stub listening on a socket; `stop()` ends it and closes what it holds (the journal file)."""

    def __init__(self, sessions: Sessions, url: str, stop: Any, watch: asyncio.Task[None] | None,
                 handler: Any = None) -> None:
        self.sessions = sessions
        self.url = url
        self._stop = stop
        self._watch = watch
        self._handler = handler  # the event loop's exception handler before start
        self.unsent = 0  # webhook deliveries not sent: pending when the grace at stop ended, or at a session's end

    async def stop(self) -> None:
        """Stop listening, then give pending deliveries their grace (GRACE seconds) and close what the stub holds."""
        await stop_watch(self._watch)
        try:
            await self._stop()
        finally:
            asyncio.get_running_loop().set_exception_handler(self._handler)
            self.unsent = await self.sessions.close()


async def start(sessions: Sessions, host: str, port: int, context: ssl.SSLContext | None = None) -> Running:
    """Serve the stub of `sessions` on host:port (0: a free port), HTTPS with `context`; the URL carries the real
    port."""
    loop = asyncio.get_running_loop()
    errors = ErrorLog(loop)
    front = Front(sessions)
    scheme = "https" if context else "http"
    refused = self_test()
    if refused is None:
        listener = Listener(front, loop, scheme)
        # HTTPS: the first byte is looked at before TLS starts (plain HTTP gets a 400 saying so), and the handshake
        # counts within --read-timeout: a client that sends nothing holds no socket longer.
        make: Callable[[], asyncio.Protocol] = listener if context is None else partial(listener.door, context)
        server = await loop.create_server(make, host, port, reuse_address=True, backlog=1024)
        sessions.outbox.defer = listener.batch.defer  # a turn's deliveries go after its answers
        addresses = [sock.getsockname() for sock in server.sockets]

        async def stop() -> None:
            server.close()
            await listener.shutdown(SHUTDOWN)
            await server.wait_closed()
    else:
        print(f"plantstub: {refused}; serving through aiohttp's own server instead", file=sys.stderr, flush=True)
        from aiohttp import web  # only then: a stub on its own connections never imports aiohttp.web

        from plantstub.server.app import aiohttp_handler

        runner = web.ServerRunner(web.Server(aiohttp_handler(front, go_ahead=True), access_log=None),
                                  handle_signals=False, shutdown_timeout=SHUTDOWN)
        await runner.setup()
        site = web.TCPSite(runner, host, port, reuse_address=True, backlog=1024, ssl_context=context)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        addresses = list(runner.addresses)
        stop = runner.cleanup
    sessions.outbox.own.listen(addresses)  # a callback a request names never comes back here
    forwarder = sessions.runtime.forwarder
    if forwarder is not None:
        try:
            await forwarder.check_not_itself(sessions.outbox.own)  # --proxy naming this stub: refused, not a loop
        except BaseException:
            await stop()
            raise
    # A flood of connections beyond the open-file limit makes asyncio log each refused accept with a
    # traceback (18 MB in 12 s): a few lines instead.
    before = loop.get_exception_handler()
    loop.set_exception_handler(errors.loop_handler)
    return Running(sessions, url_for(host, addresses[0][1], scheme), stop, start_watch(sessions), before)
