"""Budget: the bytes of memory one session (or the whole stub) may hold of what clients send it.

Everything a client can fill draws from its session's budget, by kind (calls, records, rules, deliveries,
pending deliveries, waiters), and each session's budget draws from the stub's. A holder holds its bytes in one of two
forms, so none can leak: a `Holding` (`budget.holding(kind)`), the bytes one holder keeps for a while (its `take()`,
`give()` and `lost()`, the count of what it holds, and `release()` giving back all of it), or `with budget.hold(kind,
size):`, bytes held for a block and given back however it ends. Holders of what may be dropped oldest first (the
journal, the delivery log) register a `shed` callback: another kind short of room makes them shed before it is
refused. `lost()` counts what could not be kept, so health can say what was dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Shed = Callable[[int], int]  # shed(at least these bytes) -> the bytes freed (each given back already)


class OverBudget(Exception):
    """`size` bytes did not fit (counted lost): `budget.refusal(size, ...)` words why."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class Budget:
    """`limit` bytes, within `parent`'s when given; safe to use from any thread. Holders use `holding()` and
    `hold()`; `take()`, `give()` and `lost()` are what those two are made of."""

    def __init__(self, limit: int, parent: Budget | None = None) -> None:
        self.limit = limit
        self.parent = parent
        self.held = 0
        self.parts: dict[str, int] = {}  # kind -> bytes held
        self.dropped: dict[str, list[int]] = {}  # kind -> [count, bytes] let go or refused for lack of room
        self._sheds: list[tuple[str, Shed]] = []
        self._lock = threading.Lock()
        self.released = False  # the session ended: nothing more is held, nothing given back counts
        # The sessions' budgets: what they drop counts in our `dropped` too, added up when read (figures()), so a drop
        # takes one lock, not one a level; a child's counts are folded into ours when it is released.
        self._children: list[Budget] = []
        if parent is not None:
            with parent._lock:
                parent._children.append(self)

    def sheds(self, kind: str, shed: Shed) -> None:
        """Let `shed` free bytes of `kind` (oldest first) when another kind is short of room, or another session
        when the parent (the stub's budget) is."""
        self._sheds.append((kind, shed))
        if self.parent is not None:
            self.parent._sheds.append((kind, shed))

    def holding(self, kind: str) -> Holding:
        """The bytes of `kind` one holder keeps (a journal, a store...): it takes and gives through the Holding."""
        return Holding(self, kind)

    @contextmanager
    def hold(self, kind: str, size: int) -> Iterator[None]:
        """Hold `size` bytes of `kind` for the block, given back however it ends. :raises OverBudget: when they do
        not fit (nothing is held then, and they are counted lost)."""
        if not self.take(kind, size):
            self.lost(kind, size)
            raise OverBudget(size)
        try:
            yield
        finally:
            self.give(kind, size)

    def take(self, kind: str, size: int) -> bool:
        """Hold `size` more bytes of `kind` if they fit, here and in the parent, after the other kinds shed what they
        may; False when they do not (nothing is held then: the caller drops the thing, or its own oldest, and says so
        with `lost()`)."""
        if self._try(kind, size):
            return True
        own = list(self._sheds)
        for other, shed in own:
            if other != kind and shed(self._short(size)) > 0 and self._try(kind, size):
                return True
        parent = self.parent
        if parent is None or self.held + size > self.limit:  # our own budget is short: other sessions keep theirs
            return False
        for other, shed in list(parent._sheds):  # the stub's is: other sessions' oldest calls and deliveries go
            if (other, shed) not in own and shed(self._short(size)) > 0 and self._try(kind, size):
                return True
        return False

    def fits(self, size: int) -> bool:
        """Whether `size` bytes could ever be held here (at most the limit, here and in the parent)."""
        return size <= self.limit and (self.parent is None or self.parent.fits(size))

    def give(self, kind: str, size: int) -> None:
        """Stop holding `size` bytes of `kind`."""
        if self.released:
            return
        budget: Budget | None = self
        while budget is not None:
            lock = budget._lock
            lock.acquire()  # not `with`: a store's create and delete, the journal's oldest calls go through here
            try:
                budget.held -= size
                budget.parts[kind] = budget.parts.get(kind, 0) - size
            finally:
                lock.release()
            budget = budget.parent

    def lost(self, kind: str, size: int, count: int = 1) -> None:
        """Count `count` things of `kind` (`size` bytes) dropped for lack of room, here (the parent reads them here:
        figures())."""
        if self.released and self.parent is not None:  # folded into the parent already: counted there
            self.parent.lost(kind, size, count)
            return
        lock = self._lock
        lock.acquire()  # not `with` (_try()): a full journal of a session counts its oldest call here, each call
        try:
            tally = self.dropped.get(kind)
            if tally is None:
                tally = self.dropped[kind] = [0, 0]
            tally[0] += count
            tally[1] += size
        finally:
            lock.release()

    def _dropped(self) -> dict[str, list[int]]:
        """What was dropped here and in the sessions' budgets, by kind: [count, bytes]."""
        with self._lock:
            total = {kind: list(tally) for kind, tally in self.dropped.items()}
            children = list(self._children)
        for child in children:
            _add(total, child._dropped())
        return total

    def release(self) -> None:
        """Give back everything held here (the session ended: its holders go with it)."""
        with self._lock:
            parts, self.parts, self.held, self.released = self.parts, {}, 0, True
            dropped = {kind: list(tally) for kind, tally in self.dropped.items()}
        if self.parent is not None:
            self.parent._sheds[:] = [entry for entry in self.parent._sheds if entry not in self._sheds]
            with self.parent._lock:  # what we dropped stays counted in the parent
                if self in self.parent._children:
                    self.parent._children.remove(self)
                _add(self.parent.dropped, dropped)
        self._sheds.clear()
        if self.parent is not None:
            for kind, size in parts.items():
                self.parent.give(kind, size)

    def refusal(self, size: int, what: str, advice: str) -> str:
        """Why `size` bytes for `what` (`this rule`) do not fit: which budget is short (this session's, or the stub's
        over all sessions), what it holds by kind, then `advice` (what to do)."""
        budget = self.lacking(size)
        whose = "this session's" if budget is self else "the stub's (all sessions)"
        figures = budget.figures()
        held = ", ".join(f"{kind} {shown_bytes(n)}" for kind, n in figures["parts"].items()) or "nothing"
        return (f"{what} needs {shown_bytes(size)} of memory; {whose} memory budget (--max-bytes) holds "
                f"{shown_bytes(figures['held'])} of {shown_bytes(figures['limit'])} ({held}); {advice}")

    def lacking(self, size: int) -> Budget:
        """The budget with no room for `size` more bytes: this one, or (this one has room) its parent's."""
        return self if self.held + size > self.limit or self.parent is None else self.parent

    def figures(self) -> dict[str, Any]:
        """`{"limit", "held", "parts": {kind: bytes}, "dropped": {kind: {"count", "bytes"}}}`, as health shows them."""
        dropped = self._dropped()
        with self._lock:
            return {
                "limit": self.limit,
                "held": self.held,
                "parts": {kind: size for kind, size in sorted(self.parts.items()) if size},
                "dropped": {kind: {"count": n, "bytes": size} for kind, (n, size) in sorted(dropped.items())},
            }

    def _try(self, kind: str, size: int) -> bool:
        lock = self._lock
        lock.acquire()  # not `with`, which costs three times the lock itself (every record a store keeps comes here)
        try:
            if self.released or self.held + size > self.limit:
                return False
            if self.parent is not None and not self.parent._try(kind, size):
                return False
            self.held += size
            self.parts[kind] = self.parts.get(kind, 0) + size
            return True
        finally:
            lock.release()

    def _short(self, size: int) -> int:
        """How many bytes must go before `size` more fit here and in every parent."""
        short = 0
        budget: Budget | None = self
        while budget is not None:
            short = max(short, budget.held + size - budget.limit)
            budget = budget.parent
        return short


def _add(into: dict[str, list[int]], dropped: dict[str, list[int]]) -> None:
    """Add `dropped`'s counts and bytes, by kind, to `into`'s."""
    for kind, (count, size) in dropped.items():
        tally = into.setdefault(kind, [0, 0])
        tally[0] += count
        tally[1] += size


class Holding:
    """The bytes of one kind that one holder keeps in a Budget (`held`, counted here as the budget counts them): what
    it gives back comes off its own count, and `release()` gives back exactly what is left, so a holder that lets
    go of everything cannot keep a byte by mistake nor give one back twice. Safe to use from any thread."""

    __slots__ = ("_lock", "budget", "held", "kind")

    def __init__(self, budget: Budget, kind: str) -> None:
        self.budget = budget
        self.kind = kind
        self.held = 0
        self._lock = threading.Lock()

    def take(self, size: int, shed: bool = True) -> bool:
        """Hold `size` more bytes if the budget takes them (Budget.take(): other kinds may shed first; with `shed`
        False only if they fit as things are, for bytes taken ahead of need, which must never cost anything recorded);
        False when it does not (nothing is held then: the holder drops the thing, or its own oldest, and says so with
        lost())."""
        budget = self.budget
        if not (budget._try(self.kind, size) or (shed and budget.take(self.kind, size))):  # what fits: one frame fewer
            return False
        lock = self._lock
        lock.acquire()  # not `with` (Budget._try())
        try:
            self.held += size
        finally:
            lock.release()
        return True

    def give(self, size: int) -> None:
        """Stop holding `size` of the bytes held."""
        lock = self._lock
        lock.acquire()  # not `with` (Budget._try())
        try:
            self.held -= size
        finally:
            lock.release()
        self.budget.give(self.kind, size)

    def lost(self, size: int, count: int = 1) -> None:
        """Count `count` things (`size` bytes) this holder dropped, or could not keep, for lack of room."""
        self.budget.lost(self.kind, size, count)

    def release(self) -> int:
        """Give back everything held; how many bytes that was."""
        with self._lock:
            size, self.held = self.held, 0
        if size:
            self.budget.give(self.kind, size)
        return size


def shown_bytes(size: int) -> str:
    """`size` for a message: `1.5 MiB`, `146.5 KiB`, `12 B`."""
    return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size / 1024:.1f} KiB" if size >= 1024 else f"{size} B"
