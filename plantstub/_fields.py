"""`ByFields`: the `__eq__`, `__hash__` and `__repr__` of a frozen dataclass, read from its fields.

They are the ones `dataclass()` writes for it (fields with `compare`, `hash` and `repr` as declared; a class compared
only with its own class; `...` for an object inside its own repr), written once here: `dataclass()` writes each class's
own as source text and compiles it at import, a third of what the dataclasses on a start's path cost it (issue 41).
A class declares `@dataclass(frozen=True, eq=False, repr=False)` and has `ByFields` among its bases (each dataclass
base of it too: a base's own methods would come first).
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from operator import attrgetter
from typing import Any

_Values = Callable[[Any], tuple[object, ...]]
_KEYS: dict[type, tuple[_Values, _Values, tuple[str, ...]]] = {}  # a class -> its compared, hashed and shown fields


def _values(names: list[str]) -> _Values:
    """The tuple of the named attributes (as `dataclass()` builds it: a tuple for one field, or none, too)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _keys(cls: type) -> tuple[_Values, _Values, tuple[str, ...]]:
    keys = _KEYS.get(cls)
    if keys is None:
        fields = dataclasses.fields(cls)
        compared = [f.name for f in fields if f.compare]
        hashed = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
        keys = _KEYS[cls] = (_values(compared), _values(hashed), tuple(f.name for f in fields if f.repr))
    return keys


class ByFields:
    """What `dataclass(frozen=True)` would write: equal to an object of the same class with equal fields, hashed as
    the tuple of its fields, shown as `Name(field=value, ...)`."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            compared = _keys(self.__class__)[0]
            return compared(self) == compared(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(_keys(self.__class__)[1](self))

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _keys(self.__class__)[2])
        return f"{self.__class__.__qualname__}({shown})"
