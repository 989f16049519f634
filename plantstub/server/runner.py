"""Run the stub on a socket with aiohttp's low-level server; start and stop."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from plantstub.server.app import lean_handler, start_watch, stop_watch
from plantstub.server.connection import Connection, ErrorLog
from plantstub.server.pipeline import make_refusal
from plantstub.server.table import Sessions


class _LeanServer(web.Server):
    """aiohttp's low-level server: no Application, no router, no middlewares between a request and
    the pipeline; each connection is a `Connection` (read timeout, JSON answers to what cannot be
    parsed), bodies are bounded by --max-body."""

    def __init__(self, sessions: Sessions, errors: ErrorLog) -> None:
        handler, self._quick = lean_handler(sessions)
        super().__init__(handler, request_factory=self._request, access_log=None)
        settings = sessions.runtime.settings
        self._max_body = settings.max_body
        self._read_timeout = settings.read_timeout
        self._refuse = make_refusal(sessions.default)
        self._errors = errors

    def _request(self, message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> web.BaseRequest:
        return web.BaseRequest(message, payload, protocol, writer, task, self._loop, client_max_size=self._max_body)

    def __call__(self) -> RequestHandler:
        return Connection(self, loop=self._loop, read_timeout=self._read_timeout, refuse=self._refuse,
                          errors=self._errors, quick=self._quick, **self._kwargs)


def url_for(host: str, port: int, scheme: str = "http") -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}:{port}"


class Running:
    """A stub listening on a socket; `stop()` ends it and closes what it holds (the journal file)."""

    def __init__(self, sessions: Sessions, runner: web.ServerRunner, url: str, watch: asyncio.Task[None] | None,
                 handler: Any = None, tls: bool = False) -> None:
        self.sessions = sessions
        self.url = url
        self._runner = runner
        self._watch = watch
        self._handler = handler  # the event loop's exception handler before start
        self._tls = tls
        self.unsent = 0  # webhook deliveries not sent: pending when the grace at stop ended, or at a session's end

    async def stop(self) -> None:
        """Stop listening, then give pending deliveries their grace (GRACE seconds) and close what the stub holds."""
        await stop_watch(self._watch)
        server = self._runner.server
        # A TLS connection's close waits for the client's close_notify, which a kept-alive client never sends: the
        # stub stopping waits for nobody, and leaves no socket open behind it.
        held = [h.transport for h in server.connections if h.transport is not None] if self._tls and server else []
        try:
            await self._runner.cleanup()
            for transport in held:
                transport.abort()
        finally:
            asyncio.get_running_loop().set_exception_handler(self._handler)
            self.unsent = await self.sessions.close()


async def start(sessions: Sessions, host: str, port: int, context: ssl.SSLContext | None = None) -> Running:
    """Serve the stub of `sessions` on host:port (0: a free port), HTTPS with `context`; the URL carries the real
    port."""
    loop = asyncio.get_running_loop()
    errors = ErrorLog(loop)
    server = _LeanServer(sessions, errors)
    runner = web.ServerRunner(server, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True, backlog=1024, ssl_context=context)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    real_port = runner.addresses[0][1]
    sessions.outbox.own.listen(runner.addresses)  # a callback a request names never comes back here
    # A flood of connections beyond the open-file limit makes asyncio log each refused accept with a
    # traceback (18 MB in 12 s): a few lines instead.
    before = loop.get_exception_handler()
    loop.set_exception_handler(errors.loop_handler)
    return Running(sessions, runner, url_for(host, real_port, "https" if context else "http"), start_watch(sessions), before,
                   tls=context is not None)
