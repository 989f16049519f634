"""--watch: notice when the scenario files of a folder change; the caller reloads them.

Polls file stamps (mtime, size) every 0.3 s rather than using inotify: a scenarios folder holds a
handful of files, and polling also sees edits on Docker bind mounts, where inotify events often
never arrive (Docker Desktop on macOS and Windows).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path

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


async def watch(folder: Path, on_change: Callable[[], object], interval: float = INTERVAL) -> None:
    """Call `on_change()` each time the files of `folder` change, until cancelled."""
    last = stamps(folder)
    while True:
        await asyncio.sleep(interval)
        now = stamps(folder)
        if now != last:
            last = now
            try:
                on_change()
            except Exception:  # never let a reload take the server down
                log.exception("plantstub: reloading scenarios failed")
