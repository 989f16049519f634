"""The admin API under /__plantstub/: thin adapters over Control. The route table comes first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from . import __version__
from .replies import error_reply

if TYPE_CHECKING:
    from .control import Control

ADMIN_PREFIX = "/__plantstub/"


def _routes(control: Control) -> list[tuple[str, str, object]]:
    async def health(request: web.Request) -> web.Response:
        spec = control.spec
        return web.json_response(
            {"status": "ok", "version": __version__, "spec": {"title": spec.title, "version": spec.version,
                                                              "operations": len(spec.operations)}}
        )

    return [
        ("GET", "health", health),
    ]


def add_admin_routes(app: web.Application, control: Control) -> None:
    for method, name, handler in _routes(control):
        app.router.add_route(method, ADMIN_PREFIX + name, handler)  # type: ignore[arg-type]


def admin_not_found(request: web.Request) -> web.Response:
    """An admin path or method that does not exist: JSON, never aiohttp's text page."""
    resource = request.app.router.resources()
    allowed = sorted(
        {route.method for res in resource if res.canonical == request.path for route in res}
    )
    if allowed:
        allow = ", ".join(allowed)
        out = error_reply(405, f"method: {request.method} is not allowed on {request.path} (allowed: {allow})")
        return web.json_response(out.body, status=405, headers={"Allow": allow})
    out = error_reply(404, f"path: {request.path} is not an admin route (see GET {ADMIN_PREFIX}health)")
    return web.json_response(out.body, status=404)
