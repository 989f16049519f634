"""Run an app on a socket: JSON answers even for requests aiohttp cannot parse; start and stop."""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from plantstub.contract.outgoing import error_body

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


class _JsonErrorServer(web.Server):
    def __call__(self) -> RequestHandler:
        return JsonErrorRequestHandler(self, loop=self._loop, **self._kwargs)


class StubRunner(web.AppRunner):
    """An AppRunner whose connections answer parse errors in JSON."""

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        # aiohttp offers no public hook for the per-connection handler; the subclass adds no state.
        server.__class__ = _JsonErrorServer
        return server


def url_for(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


async def start(app: web.Application, host: str, port: int) -> tuple[StubRunner, str]:
    """Start serving `app`; returns the runner (call `cleanup()` to stop) and the URL with the real port."""
    runner = StubRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True, backlog=1024)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    real_port = runner.addresses[0][1]
    return runner, url_for(host, real_port)
