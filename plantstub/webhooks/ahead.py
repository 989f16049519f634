"""Ahead: the bytes of one kind a session's webhooks hold (its deliveries waiting, its delivery log), taken from the
memory budget in chunks ahead of the deliveries that will hold them, as the journal takes its calls' (issue 41: the
budget's own take and give were a fifth of a delivery's cost). A delivery then takes and gives its bytes here, under
this lock alone; the budget is asked only when the chunk is used up, or gives back when more than two chunks lie unused.
The bytes ahead are held in the budget under the same kind (health counts them there), at most two chunks (a 64th
of a small budget), and go first when another kind is short of room (`shed()`, a Budget shed)."""

from __future__ import annotations

import threading

from plantstub._budget import Budget

CHUNK = 64 * 1024  # bytes taken ahead at a time, at most (a 64th of a budget smaller than 4 MiB)


class Ahead:
    """The bytes of `kind` a holder keeps in `memory`, with a chunk taken ahead. Safe to use from any thread."""

    __slots__ = ("chunk", "held", "lock", "spare")

    def __init__(self, memory: Budget, kind: str, lock: threading.Lock | None = None) -> None:
        self.held = memory.holding(kind)  # everything taken from the budget: what is held and the spare
        self.chunk = min(CHUNK, memory.limit // 64)
        self.spare = 0  # taken from the budget and not yet held by anything
        # Another Ahead's lock when given: bytes handed from one to the other go in one round trip (hand_over()).
        # Never held while the budget is asked, so one lock for two kinds cannot deadlock.
        self.lock = lock if lock is not None else threading.Lock()

    def take(self, size: int) -> bool:
        """Hold `size` more bytes: from the spare, else the spare and the rest from the budget, with a chunk more
        when the budget has room for it as things are (other kinds may shed for what is needed, never for the chunk);
        False when it has no room for them."""
        lock = self.lock
        lock.acquire()  # not `with`, which costs twice the lock itself: on every delivery (Budget._try())
        try:
            spare = self.spare
            if spare >= size:
                self.spare = spare - size
                return True
            self.spare = 0  # all of it goes towards this thing
        finally:
            lock.release()
        # Outside our lock: the budget may have other kinds shed meanwhile (ours too, from another thread).
        need = size - spare
        if self.chunk and self.held.take(need + self.chunk, shed=False):  # a chunk more only when nothing need shed for it
            with self.lock:
                self.spare += self.chunk
            return True
        if self.held.take(need):
            return True
        with self.lock:  # no room: the spare stays spare
            self.spare += spare
        return False

    def give(self, size: int) -> None:
        """Stop holding `size` bytes: they are spare, and what lies spare beyond two chunks goes back to the budget."""
        lock = self.lock
        lock.acquire()  # not `with` (take())
        try:
            spare = self.spare + size
            if spare <= 2 * self.chunk:
                self.spare = spare
                return
            self.spare = self.chunk
        finally:
            lock.release()
        self.held.give(spare - self.chunk)

    def hand_over(self, size: int, to: Ahead, taken: int) -> bool:
        """give(size) here and to.take(taken), at once, in one round trip of the lock both share (a delivery's bytes
        handed from the deliveries waiting to the delivery log) when neither asks the budget: our spare stays within two
        chunks and `to`'s covers `taken`. False, and nothing done, when one would (then give() and take())."""
        lock = self.lock
        lock.acquire()  # not `with` (take())
        try:
            spare = self.spare + size
            left = to.spare - taken
            if spare > 2 * self.chunk or left < 0:
                return False
            self.spare = spare
            to.spare = left
            return True
        finally:
            lock.release()

    def give_back(self, size: int, lost: bool = False) -> None:
        """Give `size` held bytes back to the budget at once (the room is wanted elsewhere, or all is cleared); `lost`:
        count them as dropped for lack of room."""
        if size:
            self.held.give(size)
        if lost:
            self.held.lost(size)

    def lost(self, size: int) -> None:
        """Count a thing of `size` bytes as not kept for lack of room."""
        self.held.lost(size)

    def shed(self, short: int = 0) -> int:
        """Give the spare back to the budget (another kind is short of room); the bytes freed."""
        with self.lock:
            spare, self.spare = self.spare, 0
        if spare:
            self.held.give(spare)
        return spare
