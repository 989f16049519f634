"""--watch under either transport: the scenarios folder reloaded when its files change, in a task of the running
loop; apart from server/app.py, so that a stub on its own connections never imports `aiohttp.web`."""

from __future__ import annotations

import asyncio
import contextlib
import sys

from plantstub.scenarios.watch import off_loop, watch
from plantstub.server.table import Sessions


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


async def stop_watch(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
