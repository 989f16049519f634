"""--watch: reload scenarios when their files change; a broken edit keeps the last good set serving.

Polls file stamps (mtime, size) every 0.3 s rather than using inotify: a scenarios folder holds a
handful of files, and polling also sees edits on Docker bind mounts, where inotify events often
never arrive (Docker Desktop on macOS and Windows).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from pathlib import Path

from aiohttp import web

from .control import Control

INTERVAL = 0.3
log = logging.getLogger("plantstub")


def stamps(folder: Path) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of each scenario file in `folder`."""
    found = {}
    try:
        entries = list(folder.iterdir())
    except OSError:
        return {}
    for path in entries:
        if path.suffix in (".yaml", ".yml"):
            with contextlib.suppress(OSError):
                info = path.stat()
                found[path.name] = (info.st_mtime_ns, info.st_size)
    return found


def reload(control: Control) -> bool:
    """Load the folder again; install it if it loads cleanly, else publish the errors. True if installed."""
    from .scenario_loader import load_scenarios

    assert control.scenarios_dir is not None
    scenarios, errors = load_scenarios(control.scenarios_dir, control.spec, control.contract)
    if errors:
        control.load_errors = list(errors)
        for error in errors:
            print(f"plantstub: {error}", file=sys.stderr, flush=True)
        print(f"plantstub: kept the last good scenarios ({len(control.scenarios)})", file=sys.stderr, flush=True)
        return False
    control.set_scenarios(scenarios, [])
    print(f"plantstub: reloaded {len(scenarios)} scenario(s) from {control.scenarios_dir}", file=sys.stderr, flush=True)
    return True


async def watch(control: Control, interval: float = INTERVAL) -> None:
    folder = control.scenarios_dir
    if folder is None:
        return
    last = stamps(folder)
    while True:
        await asyncio.sleep(interval)
        now = stamps(folder)
        if now != last:
            last = now
            try:
                reload(control)
            except Exception:  # never let a reload take the server down
                log.exception("plantstub: reloading scenarios failed")


def enable_watch(app: web.Application, control: Control) -> None:
    """Run the watch loop while `app` runs."""

    async def start(app: web.Application) -> None:
        task = asyncio.get_running_loop().create_task(watch(control))
        app[WATCH_TASK] = task

    async def stop(app: web.Application) -> None:
        task = app.get(WATCH_TASK)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    app.on_startup.append(start)
    app.on_cleanup.append(stop)


WATCH_TASK = web.AppKey("watch_task", asyncio.Task)
