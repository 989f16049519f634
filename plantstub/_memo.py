"""IdentityMemo: values remembered per object by identity (schemas are unhashable, and two equal ones are two places)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from enum import Enum
from typing import Final, Generic, TypeVar, overload

V = TypeVar("V")
D = TypeVar("D")


class _Absent(Enum):
    NONE = 0  # no value kept (None may be one)


_NONE: Final = _Absent.NONE


class IdentityMemo(Generic[V]):
    """A value per object (or per tuple of objects, each by identity), and per optional hashable `tag`.

    Each entry holds its objects: an id() is unique only while its object lives, so a key must not outlive it.
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[Hashable, tuple[object, V]] = {}  # id(key), or ids of its objects (and tag) -> key, value

    @overload
    def get(self, key: object, tag: Hashable = None) -> V | None: ...

    @overload
    def get(self, key: object, tag: Hashable, default: D) -> V | D: ...

    def get(self, key: object, tag: Hashable = None, default: object = None) -> object:
        """The value kept for `key` (that very object) under `tag`, else `default`."""
        slot = id(key) if type(key) is not tuple else tuple(map(id, key))  # inline: called on hot paths
        entry = self._entries.get(slot if tag is None else (slot, tag))
        return entry[1] if entry is not None and (entry[0] is key or _same(entry[0], key)) else default

    def put(self, key: object, value: V, tag: Hashable = None) -> V:
        """Keep `value` for `key` under `tag`, and return it."""
        slot = id(key) if type(key) is not tuple else tuple(map(id, key))
        self._entries[slot if tag is None else (slot, tag)] = (key, value)
        return value

    def make(self, key: object, build: Callable[[], V], tag: Hashable = None) -> V:
        """The value kept for `key` under `tag`, made by `build()` the first time."""
        found = self.get(key, tag, _NONE)
        return self.put(key, build(), tag) if found is _NONE else found

    def __contains__(self, key: object) -> bool:
        return self.get(key, None, _NONE) is not _NONE

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()


def _same(kept: object, key: object) -> bool:
    """Two tuples of the same objects (a single object was compared with `is` already)."""
    return type(key) is tuple and type(kept) is tuple and len(kept) == len(key) and all(a is b for a, b in zip(kept, key, strict=True))
