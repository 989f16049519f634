"""`ByFields` (plantstub/_fields.py): a frozen dataclass's __eq__, __hash__ and __repr__ are those dataclass() writes,
and each of plantstub's classes declared with it gets all three from it."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from dataclasses import dataclass, field

import pytest

import plantstub
from plantstub._fields import ByFields


@dataclass(frozen=True)
class Written:
    name: str
    size: int = 0
    note: str = field(default="", compare=False)
    secret: str = field(default="", repr=False)
    loose: object = field(default=None, hash=False)


@dataclass(frozen=True, eq=False, repr=False)
class Read(ByFields):
    name: str
    size: int = 0
    note: str = field(default="", compare=False)
    secret: str = field(default="", repr=False)
    loose: object = field(default=None, hash=False)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Slotted(ByFields):
    one: object


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Child(Slotted):
    two: int = 2


@dataclass(frozen=True, eq=False, repr=False)
class Empty(ByFields):
    pass


VALUES = [("Fern", 1, "a", "s", 1.5), ("Fern", 1, "b", "t", 1.5), ("Fern", 2, "a", "s", 1.5), ("Ivy", 1, "", "", None),
          ("Fern", 1, "a", "s", 2.5)]


@pytest.mark.parametrize("a", VALUES)
@pytest.mark.parametrize("b", VALUES)
def test_equal_hashed_and_shown_as_dataclass_writes_it(a, b):
    assert (Read(*a) == Read(*b)) == (Written(*a) == Written(*b))
    assert (Read(*a) != Read(*b)) == (Written(*a) != Written(*b))
    assert hash(Read(*a)) == hash(Written(*a))
    assert repr(Read(*a)) == repr(Written(*a)).replace("Written(", "Read(")


def test_another_class_is_never_equal_and_a_class_keeps_its_own_fields():
    assert Read("Fern") != Written("Fern")
    assert Read("Fern").__eq__(Written("Fern")) is NotImplemented
    assert Slotted(1) != Child(1, 2)
    assert Child(1) == Child(1)
    assert Child(1) != Child(1, 3)
    assert hash(Slotted(1)) == hash((1,))  # a tuple of one field, as dataclass() hashes it
    assert hash(Child(1, 3)) == hash((1, 3))
    assert hash(Empty()) == hash(())
    assert Empty() == Empty()
    assert repr(Child(1)) == "Child(one=1, two=2)"
    assert repr(Empty()) == "Empty()"


def test_an_object_inside_its_own_repr_is_shown_as_dots():
    inside: list[object] = []
    outer = Slotted(inside)
    inside.append(outer)
    assert repr(outer) == "Slotted(one=[...])"


def test_still_frozen_and_slotted():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Slotted(1).one = 2  # type: ignore[misc]
    assert not hasattr(Child(1), "__dict__")


def _plantstub_classes() -> list[type]:
    classes = []
    for info in pkgutil.walk_packages(plantstub.__path__, "plantstub."):
        if info.name.endswith(("__main__", "pytest_plugin")):
            continue
        module = importlib.import_module(info.name)
        classes += [value for value in vars(module).values()
                    if isinstance(value, type) and value.__module__ == info.name and dataclasses.is_dataclass(value)]
    return classes


def test_each_class_declared_with_it_takes_all_three_from_it():
    declared = [cls for cls in _plantstub_classes() if issubclass(cls, ByFields)]
    assert len(declared) >= 20  # the classes on a start's path (the walk above finds them)
    for cls in declared:
        params = cls.__dataclass_params__  # type: ignore[attr-defined]
        assert params.frozen and not params.eq and not params.repr, cls
        assert (cls.__eq__, cls.__hash__, cls.__repr__) == (ByFields.__eq__, ByFields.__hash__, ByFields.__repr__), cls
