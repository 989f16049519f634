"""Run the stub on a socket with aiohttp's low-level server: JSON answers even for requests aiohttp cannot
parse; start and stop."""

from __future__ import annotations

import asyncio
import logging
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from plantstub.contract.outgoing import error_body
from plantstub.server.app import make_handler, start_watch, stop_watch
from plantstub.server.state import Control

log = logging.getLogger("plantstub")


class JsonErrorRequestHandler(RequestHandler):
    """aiohttp's connection handler, but a broken request line or header gets an Error record, not text."""

    def handle_error(
        self, request: Any, status: int = 500, exc: BaseException | None = None, message: str | None = None
    ) -> web.StreamResponse:
        log.debug("plantstub: unparsable request (%s): %s", status, message or exc)
        if request.writer.output_size > 0:
            raise ConnectionError("response is sent already, cannot send the error")
        if status >= 500:
            text = "plantstub internal error"
        else:
            reason = (message or (str(exc) if exc else "") or HTTPStatus(status).phrase).splitlines()[0]
            text = f"request: cannot be parsed as HTTP/1.1: {reason[:200]}"
        response = web.json_response(error_body(status, text), status=status)
        response.force_close()
        return response


class _LeanServer(web.Server):
    """aiohttp's low-level server: no Application, no router, no middlewares between a request and
    the pipeline; connections answer parse errors in JSON, bodies are bounded by --max-body."""

    def __init__(self, handler: Any, max_body: int) -> None:
        super().__init__(handler, request_factory=self._request, access_log=None)
        self._max_body = max_body

    def _request(self, message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> web.BaseRequest:
        return web.BaseRequest(message, payload, protocol, writer, task, self._loop, client_max_size=self._max_body)

    def __call__(self) -> RequestHandler:
        return JsonErrorRequestHandler(self, loop=self._loop, **self._kwargs)


def url_for(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


class Running:
    """A stub listening on a socket; `stop()` ends it and closes what it holds (the journal file)."""

    def __init__(self, control: Control, runner: web.ServerRunner, url: str, watch: asyncio.Task[None] | None) -> None:
        self.control = control
        self.url = url
        self._runner = runner
        self._watch = watch

    async def stop(self) -> None:
        await stop_watch(self._watch)
        try:
            await self._runner.cleanup()
        finally:
            self.control.close()


async def start(control: Control, host: str, port: int) -> Running:
    """Serve `control`'s stub on host:port (0: a free port); the URL carries the real port."""
    server = _LeanServer(make_handler(control), control.settings.max_body)
    runner = web.ServerRunner(server, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True, backlog=1024)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    real_port = runner.addresses[0][1]
    return Running(control, runner, url_for(host, real_port), start_watch(control))
