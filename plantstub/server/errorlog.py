"""Errors of the stub's connections and event loop written once in a while instead of once per client: a flood of bad
clients writes a few lines, not one each."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger("plantstub")


class ErrorLog:
    """Errors of one kind written at most once per `interval` seconds: the first at once, then one line per
    interval saying how many more came, so a flood of bad clients writes a few lines, not one each."""

    def __init__(self, loop: asyncio.AbstractEventLoop, interval: float = 10.0) -> None:
        self._loop = loop
        self._interval = interval
        self._more: dict[str, int] = {}  # kinds in their quiet interval, and how many came in it

    def allow(self, kind: str, text: str) -> bool:
        """Whether an error of `kind` is to be written now; if not, it is counted for the summary."""
        if kind in self._more:
            self._more[kind] += 1
            return False
        self._more[kind] = 0
        self._loop.call_later(self._interval, self._summary, kind, text)
        return True

    def report(self, kind: str, text: str, exc_info: BaseException | None = None) -> None:
        if self.allow(kind, text):
            log.error("plantstub: %s", text, exc_info=exc_info)

    def _summary(self, kind: str, text: str) -> None:
        more = self._more.pop(kind, 0)
        if more:  # still coming: say how many, and stay quiet one more interval
            self._more[kind] = 0
            self._loop.call_later(self._interval, self._summary, kind, text)
            log.error("plantstub: %d more in the last %g s: %s", more, self._interval, text)

    def loop_handler(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """The event loop's exception handler: asyncio reports each refused accept here, with a traceback,
        thousands a second once the open-file limit is reached."""
        exc = context.get("exception")
        message = str(context.get("message") or "error in the event loop")
        if isinstance(exc, OSError) and "accept" in message:
            self.report("accept", f"cannot accept connections: {exc.strerror or exc} (the open-file limit, "
                                  "ulimit -n, is too low for this many connections; --read-timeout closes "
                                  "stalled ones)")
        elif isinstance(exc, OSError):  # a client's socket went wrong: one line, no traceback
            self.report(message, f"{message}: {exc.strerror or exc}")
        elif self.allow(message, message):
            loop.default_exception_handler(context)

