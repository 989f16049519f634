"""The journal file: every call appended as one JSON line; a call that cannot be written is counted and
reported, never lost silently; a file moved or deleted (log rotation) is opened again at its path. `-` is standard
output (a log pipeline's stream)."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path

from plantstub.errors import ConfigError

FLUSH_DELAY = 0.1  # batched mode: a call reaches the file within this
STAT_INTERVAL = 0.1  # how often the path is checked for a moved or deleted file
STDOUT = Path("-")  # --journal -: the lines go to standard output
log = logging.getLogger("plantstub")


def _open(path: Path) -> int:
    """Open `path` for appending, created readable by its owner only (calls carry bearer tokens), its missing folders
    made first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)


def _identity(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


class JournalFile:
    """Appends lines to `path`: within FLUSH_DELAY (`flush="batch"`) or before the next call is
    answered (`flush="call"`). `lost` counts calls that did not reach the file; `problem` says why
    while writes fail. `given_as`: how the path was given (`--journal`, `journal`...), for a refusal at start."""

    def __init__(self, path: Path, flush: str = "batch", given_as: str = "--journal") -> None:
        self.path = path
        self.flush_each_call = flush == "call"
        self.written = 0
        self.lost = 0
        self.problem: str | None = None
        self._pending: list[bytes] = []
        self._flush_scheduled = False
        self._torn = False  # a line was cut short by a failed write: the next write ends it first
        self._checked = 0.0
        self._stream = path == STDOUT  # never moved nor rotated: written as it is, never reopened
        try:
            # A copy of standard output's descriptor: closing the journal leaves the process's own open.
            self._fd: int | None = os.dup(1) if self._stream else _open(path)
        except (FileExistsError, NotADirectoryError):  # mkdir, or the open, met a file where a folder goes
            raise ConfigError(f"{given_as}={str(path)!r}: cannot open for writing (a part of its folder is a file, not "
                              "a folder)") from None
        except OSError as exc:
            raise ConfigError(f"{given_as}={str(path)!r}: cannot open for writing ({exc.strerror or exc})") from None
        self._identity = _identity(os.fstat(self._fd))

    def write(self, line: bytes) -> None:
        """Queue one line (ending in a newline); it is written now or within FLUSH_DELAY."""
        self._pending.append(line)
        if self.flush_each_call:
            self.flush()
        elif not self._flush_scheduled:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # not in an event loop: nothing would flush later
                self.flush()
                return
            self._flush_scheduled = True
            loop.call_later(FLUSH_DELAY, self.flush)

    def flush(self) -> None:
        """Write what is queued; on failure count those calls lost and keep going."""
        self._flush_scheduled = False
        if not self._pending:
            return
        lines, self._pending = self._pending, []
        refused = self._reopen_if_moved()
        if refused is not None:
            self._fail(len(lines), refused)
            return
        data = b"".join(lines)
        if self._torn:
            data = b"\n" + data
        fd, done, view = self._fd, 0, memoryview(data)
        assert fd is not None  # _reopen_if_moved() opened it
        try:
            while done < len(data):
                done += os.write(fd, view[done:])
        except OSError as exc:
            complete = self._complete_lines(lines, done - (1 if self._torn else 0))
            if done:
                self._torn = data[done - 1:done] != b"\n"
            self.written += complete
            self._fail(len(lines) - complete, f"cannot write ({exc.strerror or exc})")
            return
        self._torn = False
        self.written += len(lines)
        if self.problem is not None:
            log.warning("plantstub: journal file %s is written again (%d call(s) were lost)", self.path, self.lost)
            self.problem = None

    @staticmethod
    def _complete_lines(lines: list[bytes], written: int) -> int:
        count = 0
        for line in lines:
            written -= len(line)
            if written < 0:
                break
            count += 1
        return count

    def _reopen_if_moved(self) -> str | None:
        """Make sure a file is open at `path` (reopening one that was moved or deleted); else why not."""
        now = time.monotonic()
        if self._stream:
            return None if self._fd is not None else "closed"
        if self._fd is not None and now - self._checked < STAT_INTERVAL:
            return None
        self._checked = now
        try:
            same = self._fd is not None and _identity(os.stat(self.path)) == self._identity
        except FileNotFoundError:
            same = False
        except OSError:
            same = self._fd is not None  # cannot tell (a folder became unreadable): keep the open file
        if same:
            return None
        if self._fd is not None:
            log.warning("plantstub: journal file %s was moved or deleted; writing a new one there", self.path)
            os.close(self._fd)
            self._fd = None
        try:
            self._fd = _open(self.path)
        except OSError as exc:
            return f"cannot open ({exc.strerror or exc})"
        self._identity = _identity(os.fstat(self._fd))
        self._torn = False
        return None

    def _fail(self, count: int, reason: str) -> None:
        self.lost += count
        if self.problem is None:
            log.error("plantstub: journal file %s: %s; calls are being lost", self.path, reason)
        self.problem = reason

    def problems(self) -> list[str]:
        """What health reports while calls are being lost: empty when the last write succeeded."""
        if self.problem is None:
            return []
        return [f"journal file {self.path}: {self.problem}; {self.lost} call(s) not written"]

    def close(self) -> None:
        self.flush()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
