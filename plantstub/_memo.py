"""IdentityMemo: values remembered per object by identity (schemas are unhashable, and two equal ones are two places)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

V = TypeVar("V")
_NONE: Any = object()


class IdentityMemo(Generic[V]):
    """A value per object (or per tuple of objects, each by identity), and per optional hashable `tag`.

    Each entry holds its objects: an id() is unique only while its object lives, so a key must not outlive it.
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[Hashable, tuple[Any, V]] = {}

    def get(self, key: Any, tag: Hashable = None, default: Any = None) -> V | Any:
        """The value kept for `key` (that very object) under `tag`, else `default`."""
        slot = id(key) if type(key) is not tuple else tuple(map(id, key))  # inline: called on hot paths
        entry = self._entries.get(slot if tag is None else (slot, tag))
        return entry[1] if entry is not None and (entry[0] is key or _same(entry[0], key)) else default

    def put(self, key: Any, value: V, tag: Hashable = None) -> V:
        """Keep `value` for `key` under `tag`, and return it."""
        slot = id(key) if type(key) is not tuple else tuple(map(id, key))
        self._entries[slot if tag is None else (slot, tag)] = (key, value)
        return value

    def make(self, key: Any, build: Callable[[], V], tag: Hashable = None) -> V:
        """The value kept for `key` under `tag`, made by `build()` the first time."""
        found = self.get(key, tag, _NONE)
        return self.put(key, build(), tag) if found is _NONE else found

    def __contains__(self, key: Any) -> bool:
        return self.get(key, None, _NONE) is not _NONE

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()


def _same(kept: Any, key: Any) -> bool:
    """Two tuples of the same objects (a single object was compared with `is` already)."""
    return type(key) is tuple and len(kept) == len(key) and all(a is b for a, b in zip(kept, key, strict=True))
