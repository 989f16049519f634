"""The answers made in one turn of the event loop, written together at its end (server/connection.py's `Batch`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol


class Held(Protocol):
    """A connection whose answers wait in a Batch."""

    def flush(self) -> None:
        """Write the answers held, now."""


class Batch:
    """The answers made in one turn of the event loop, written together at its end (one callback a turn).

    Written at once, each answer's send (on loopback, the client's receiving and waking too) came between the requests
    served in the same turn: the kernel's work and the stub's evicted each other from the CPU's caches, and the client
    was woken for each answer. Written together, the stub's CPU per answer under 32 connections fell by about a fifth
    and the client's by about half (issue 41). A turn that answered one connection alone is followed by answers written
    at once while that connection alone is answered: one client's calls one after another pay no turn more."""

    __slots__ = ("_alone", "_loop", "_on", "_then", "_waiting")

    def __init__(self, loop: asyncio.AbstractEventLoop, on: bool = True) -> None:
        self._loop = loop
        # Off (each answer written at once, as before) over TLS: Python 3.10's TLS transport starts closing as soon as
        # it reads a client's close_notify, before the turn ends, and the answers held for it would be lost.
        self._on = on
        self._waiting: list[Held] = []
        self._alone: Held | None = None  # the one connection the last turn answered: its answers go at once
        self._then: list[Callable[[], None]] = []  # what waits for this turn's answers to be written (defer())

    def defer(self, then: Callable[[], None]) -> bool:
        """Call `then` once this turn's answers are written, and True; False (nothing done) when none waits. The
        webhooks' outbox sends a turn's deliveries after the answers that set them off (issue 41)."""
        if not self._waiting:
            return False
        self._then.append(then)
        return True

    def holds(self, connection: Held) -> bool:
        """Whether `connection`'s answer waits for the end of this turn (then `flush()` is called), or goes at once."""
        if not self._waiting:
            if connection is self._alone or not self._on:
                return False
            self._loop.call_soon(self._write)
        self._waiting.append(connection)
        return True

    def forget(self, connection: Held) -> None:
        """`connection` is gone: not kept as the one answered alone."""
        if self._alone is connection:
            self._alone = None

    def _write(self) -> None:
        waiting, self._waiting = self._waiting, []
        self._alone = waiting[0] if len(waiting) == 1 else None
        try:
            for connection in waiting:
                connection.flush()
        finally:  # what waits on the answers (the webhooks' pump) runs however the writes went
            if self._then:
                then, self._then = self._then, []
                for call in then:
                    call()
