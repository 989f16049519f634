"""--watch: notice when the content of a folder's scenario files changes; the caller reloads them.

Polls every 0.3 s rather than using inotify: polling also sees edits on Docker bind mounts, where
inotify events often never arrive (Docker Desktop on macOS and Windows). A file is read and hashed
when its stamp (mtime, ctime, size, inode) changes, and also while that stamp is recent: an edit
within a timestamp's granularity of the last one (1-2 s on some filesystems) may keep every part of
it, so such "racily clean" files are checked by content, as git does. A file whose stamp changed but
whose content did not (`touch`) is no change. Scans and reloads run in threads: a slow disk or a
slow load never holds the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import stat
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from plantstub.scenarios.load import SUFFIXES

INTERVAL = 0.3
RACY_NS = 3_000_000_000  # timestamps up to 2 s coarse (FAT; 1 s on HFS+ and some mounts), plus a poll
log = logging.getLogger("plantstub")
T = TypeVar("T")
Stamp = tuple[int, int, int, int]  # mtime_ns, ctime_ns, size, inode


def _digest(path: str) -> bytes | None:
    try:
        with open(path, "rb") as file:
            return hashlib.blake2b(file.read(), digest_size=16).digest()
    except OSError:
        return None  # unreadable: a change if it was readable before; the reload says why


class FolderSnapshot:
    """What the scenario files of a folder held at the last scan: a stamp and a content hash per file."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.files: dict[str, tuple[Stamp, bytes | None]] = {}
        self.hashed = 0  # files read at the last scan (for measurements)

    def _stamps(self) -> dict[str, tuple[str | None, Stamp]]:
        """Each scenario file's stamp, and its path when it may be read: a regular file, not a link out
        of the folder (the load refuses those; their content is no business of ours, nor is a FIFO's)."""
        found: dict[str, tuple[str | None, Stamp]] = {}
        try:
            entries = list(os.scandir(self.folder))
            root = os.path.realpath(self.folder) + os.sep
        except OSError:
            return found  # gone or unreadable: every file counts as removed; the reload says why
        for entry in entries:
            if entry.name.startswith(".") or not entry.name.endswith(SUFFIXES):
                continue  # as scenario_files() does: editors' hidden swap and lock files are no change
            try:
                info = os.stat(entry.path)
                inside = not entry.is_symlink() or os.path.realpath(entry.path).startswith(root)
            except OSError:
                continue
            if not stat.S_ISDIR(info.st_mode):
                readable = stat.S_ISREG(info.st_mode) and inside
                stamp = (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino)
                found[entry.name] = (entry.path if readable else None, stamp)
        return found

    def scan(self) -> list[str]:
        """Look again; the names of the files added, removed or whose content changed since the last scan."""
        now = time.time_ns()
        current: dict[str, tuple[Stamp, bytes | None]] = {}
        self.hashed = 0
        for name, (path, stamp) in self._stamps().items():
            before = self.files.get(name)
            if before is not None and before[0] == stamp and now - max(stamp[0], stamp[1]) > RACY_NS:
                current[name] = before  # settled: the stamp speaks for the content
                continue
            current[name] = (stamp, repr(stamp).encode() if path is None else _digest(path))
            self.hashed += path is not None
        changed = sorted(
            name for name in current.keys() | self.files.keys()
            if name not in current or name not in self.files or current[name][1] != self.files[name][1]
        )
        self.files = current
        return changed


async def off_loop(work: Callable[[], T]) -> T:
    """Run `work()` in a daemon thread and await its result: the loop keeps serving meanwhile, and a
    stop does not wait for it (asyncio.to_thread's executor is joined at exit; a load may take seconds)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settled(result: T) -> None:
        if not future.done():  # else cancelled meanwhile
            future.set_result(result)

    def failed(error: BaseException) -> None:
        if not future.done():
            future.set_exception(error)

    def run() -> None:
        try:
            result = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task, raised there
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is waiting any more
                loop.call_soon_threadsafe(failed, exc)
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settled, result)

    threading.Thread(target=run, name="plantstub-watch", daemon=True).start()
    return await future


async def watch(
    snapshot: FolderSnapshot, on_change: Callable[[list[str]], Awaitable[object]], interval: float = INTERVAL
) -> None:
    """Await `on_change(names)` each time files of the snapshot's folder change, until cancelled.

    One at a time: a change made during a reload is seen by the next scan (compared with the scan
    before that reload), so the last content always ends up loaded.
    """
    while True:
        await asyncio.sleep(interval)
        try:
            changed = await off_loop(snapshot.scan)
            if changed:
                await on_change(changed)
        except Exception:  # never let a reload take the server down
            log.exception("plantstub: reloading scenarios failed")
