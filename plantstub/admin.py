"""The admin API under /__plantstub/: thin adapters over Control. The route table comes first."""

from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING, Any

from aiohttp import web

from . import __version__
from .journal import Call, dumps_call
from .matching import path_pattern

if TYPE_CHECKING:
    from .control import Control

ADMIN_PREFIX = "/__plantstub/"
log = logging.getLogger("plantstub")
CALL_FILTERS = ("method", "path", "status", "valid", "scenario", "rule", "since", "limit")


def _routes(admin: _Admin) -> list[tuple[str, str, Any]]:
    return [
        ("GET", "health", admin.health),
        ("GET", "scenarios", admin.scenarios),
        ("PUT", "scenario", admin.put_scenario),
        ("GET", "calls", admin.calls),
        ("DELETE", "calls", admin.delete_calls),
        ("POST", "reset", admin.reset),
        ("GET", "coverage", admin.coverage),
    ]


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"error": status, "message": message}, status=status, headers=headers)


class _Admin:
    def __init__(self, control: Control) -> None:
        self.control = control

    async def health(self, request: web.Request) -> web.Response:
        spec = self.control.spec
        return web.json_response({
            "status": "ok",
            "version": __version__,
            "spec": {"title": spec.title, "version": spec.version, "operations": len(spec.operations)},
            "active": self.control.active,
        })

    async def scenarios(self, request: web.Request) -> web.Response:
        c = self.control
        return web.json_response({
            "active": c.active,
            "folder": str(c.scenarios_dir) if c.scenarios_dir else None,
            "scenarios": [
                {"name": s.name, "description": s.description, "file": s.file, "rules": len(s.rules),
                 "validate_requests": s.validate_requests, "builtin": c.builtins.get(s.name) is s}
                for s in sorted(c.scenarios.values(), key=lambda s: s.name)
            ],
            "errors": [str(e) for e in c.load_errors],
            "builtins_left_out": c.unfit_builtins,  # built-ins that do not fit this spec, and why
        })

    async def put_scenario(self, request: web.Request) -> web.Response:
        try:
            data = json.loads(await request.read() or b"null")
        except web.HTTPRequestEntityTooLarge:
            return _error(413, f"body: larger than the limit of {self.control.settings.max_body} bytes (--max-body)")
        except (ValueError, RecursionError):
            return _error(400, 'body: not valid JSON; send {"name": "SCENARIO"} or {"name": null}')
        if not isinstance(data, dict) or "name" not in data or not isinstance(data["name"], (str, type(None))):
            return _error(400, 'body: expected {"name": "SCENARIO"} (or {"name": null} for none)')
        from .control import UnknownScenario

        try:
            self.control.use(data["name"])
        except UnknownScenario as exc:
            return _error(404, f"body.name: {exc}")
        return web.json_response({"active": self.control.active})

    def _filtered(self, request: web.Request) -> list[Call] | web.Response:
        q = request.query
        unknown = sorted(set(q) - set(CALL_FILTERS))
        if unknown:
            return _error(400, f"query.{unknown[0]}: unknown filter (known: {', '.join(CALL_FILTERS)})")
        numbers: dict[str, int] = {}
        for name in ("status", "since", "limit"):
            if name in q:
                if not re.fullmatch(r"-?[0-9]{1,18}", q[name]):
                    return _error(400, f"query.{name}: {q[name]!r} is not an integer")
                numbers[name] = int(q[name])
        if "valid" in q and q["valid"] not in ("true", "false"):
            return _error(400, f"query.valid: {q['valid']!r} is not true or false")
        calls = self.control.journal.snapshot()
        if "method" in q:
            calls = [c for c in calls if c.method == q["method"].upper()]
        if "path" in q:
            pattern = path_pattern(q["path"])
            calls = [c for c in calls if pattern.match(c.path)]
        if "status" in numbers:
            calls = [c for c in calls if c.status == numbers["status"]]
        if "valid" in q:
            calls = [c for c in calls if c.valid == (q["valid"] == "true")]
        for name in ("scenario", "rule"):
            if name in q:
                calls = [c for c in calls if getattr(c, name) == q[name]]
        if "since" in numbers:
            calls = [c for c in calls if c.seq > numbers["since"]]
        if "limit" in numbers:
            calls = calls[-numbers["limit"]:] if numbers["limit"] > 0 else []
        return calls

    async def calls(self, request: web.Request) -> web.Response:
        found = self._filtered(request)
        if isinstance(found, web.Response):
            return found
        journal = self.control.journal
        headers = {"X-Plantstub-Recorded": str(journal.recorded), "X-Plantstub-Dropped": str(journal.dropped)}
        text = "[" + ",".join(dumps_call(c) for c in found) + "]"
        return web.Response(text=text, content_type="application/json", headers=headers)

    async def delete_calls(self, request: web.Request) -> web.Response:
        count = len(self.control.journal.snapshot())
        self.control.journal.clear()
        self.control.coverage.clear()
        return web.json_response({"deleted": count})

    async def reset(self, request: web.Request) -> web.Response:
        self.control.reset()
        return web.json_response({"reset": True, "active": self.control.active})

    async def coverage(self, request: web.Request) -> web.Response:
        return web.json_response(self.control.coverage_report())


def _logged(handler: Any) -> Any:
    """An admin handler whose unexpected errors are logged with their traceback and answered in JSON."""

    async def guarded(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPException:
            raise
        except Exception as exc:
            log.exception("plantstub: internal error on admin route %s %s", request.method, request.path)
            return _error(500, f"plantstub internal error (a bug in plantstub): {type(exc).__name__}: {exc}")

    return guarded


def add_admin_routes(app: web.Application, control: Control) -> None:
    admin = _Admin(control)
    for method, name, handler in _routes(admin):
        handler = _logged(handler)
        if method == "GET":
            app.router.add_get(ADMIN_PREFIX + name, handler)  # HEAD too, for probes
        else:
            app.router.add_route(method, ADMIN_PREFIX + name, handler)


def admin_not_found(request: web.Request) -> web.Response:
    """An admin path or method that does not exist: JSON, never aiohttp's text page."""
    allowed = sorted(
        {route.method for res in request.app.router.resources() if res.canonical == request.path for route in res}
    )
    if allowed:
        allow = ", ".join(allowed)
        return _error(405, f"method: {request.method} is not allowed on {request.path} (allowed: {allow})",
                      {"Allow": allow})
    return _error(404, f"path: {request.path} is not an admin route (see GET {ADMIN_PREFIX}health)")
