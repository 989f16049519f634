"""create_app(): the aiohttp Application, whose one catch-all handler runs the request pipeline
(server/pipeline.py) of the default session, the sidecar sessions' and the admin API."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from aiohttp import web

from plantstub.config import Settings, build_settings
from plantstub.contract.model import Spec
from plantstub.scenarios.watch import off_loop, watch
from plantstub.server.admin import ADMIN_PREFIX, AdminRoutes
from plantstub.server.connection import Quick
from plantstub.server.cors import with_cors
from plantstub.server.pipeline import Pipeline
from plantstub.server.runtime import load
from plantstub.server.session import Session
from plantstub.server.sessions import SessionRouter
from plantstub.server.table import Sessions

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
SESSIONS_KEY = web.AppKey("sessions", Sessions)
WATCH_TASK = web.AppKey("watch_task", asyncio.Task)


def create_app(settings: Settings | None = None, **options: Any) -> web.Application:
    """Build the stub as an aiohttp Application (for pytest-aiohttp's `aiohttp_server` and friends).

    :param settings: a complete Settings; when omitted, built from `options` and PLANTSTUB_* variables.
    :param options: Settings fields, e.g. `spec="api.yaml"`, `scenarios="scenarios/"`, `max_body=1024`;
        `spec` may also be an already loaded Spec.
    """
    loaded = options.pop("spec") if isinstance(options.get("spec"), Spec) else None
    if settings is None:
        settings = build_settings(options)
    sessions = Sessions(load(settings, loaded))
    app = web.Application(client_max_size=settings.max_body)
    app[SESSIONS_KEY] = sessions
    # One catch-all route: the pipeline routes by the spec, and the admin API has its own small router.
    app.router.add_route("*", "/{tail:.*}", make_handler(sessions.default, sessions))
    app.on_cleanup.append(_close(sessions))
    app.on_startup.append(_start_watch)  # start_watch() decides whether there is anything to watch
    app.on_cleanup.append(_stop_watch)
    return app


async def _start_watch(app: web.Application) -> None:
    task = start_watch(app[SESSIONS_KEY])
    if task is not None:
        app[WATCH_TASK] = task


def start_watch(sessions: Sessions) -> asyncio.Task[None] | None:
    """--watch: reload the scenarios folder when its files change, in a task of the running loop.

    The folder loads in a thread; the result is swapped in on the loop, so requests keep being answered
    during a reload and never see half of one."""
    snapshot = sessions.runtime.folder.snapshot
    if not sessions.runtime.settings.watch or snapshot is None:
        return None

    async def reload(changed: list[str]) -> None:
        loaded = await off_loop(sessions.load_folder)
        for line in sessions.install(loaded):
            print(f"plantstub: {line}", file=sys.stderr, flush=True)

    return asyncio.get_running_loop().create_task(watch(snapshot, reload))


async def _stop_watch(app: web.Application) -> None:
    await stop_watch(app.get(WATCH_TASK))


async def stop_watch(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _close(sessions: Sessions) -> Callable[[web.Application], Awaitable[None]]:
    async def close(app: web.Application) -> None:
        await sessions.close()

    return close


def make_handler(session: Session, sessions: Sessions | None = None, lean: bool = False) -> Handler:
    """The request pipeline of `session` as one aiohttp handler (for an Application's route or a low-level
    Server); with `sessions` (the default session's), also the sidecar sessions' and their admin routes. `lean`:
    for server/runner.py's low-level server, whose common answers are written without aiohttp's Response."""
    return _handler(session, sessions, lean)[0]


def lean_handler(sessions: Sessions) -> tuple[Handler, Quick]:
    """The low-level server's handler (make_handler's, lean) and the router's `quick`, which answers a whole request
    of the usual kind from the connection itself (server/connection.py)."""
    handler, router = _handler(sessions.default, sessions, True)
    assert router is not None  # with sessions: routed
    return handler, router.quick


def _handler(session: Session, sessions: Sessions | None, lean: bool) -> tuple[Handler, SessionRouter | None]:
    runtime = session.runtime
    admin = AdminRoutes(session, sessions)
    handle = Pipeline(runtime, session, admin, lean).handle
    # --cors: preflights answered and answers readable by pages of any origin (the admin API excepted)
    served = with_cors(handle, runtime.router, ADMIN_PREFIX) if runtime.settings.cors else handle
    if sessions is None:  # a sidecar session's own pipeline
        return served, None
    router = SessionRouter(sessions, partial(make_handler, lean=lean))  # before CORS: a session's answers get its own
    for method, name, route in router.admin_routes():
        admin.add(method, name, route)
    return router.wrap(served, lean), router
