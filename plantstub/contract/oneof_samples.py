"""oneOf in generated values: a candidate that matches several branches changed to match one only."""

from __future__ import annotations

from typing import Any, Protocol

from plantstub.contract.flatten import types_of
from plantstub.contract.sample_values import NONE, admits, made, of

SPOILER_TRIES = 64
_ONE_OF_EACH_TYPE: tuple[Any, ...] = (None, "x", 0, True, [], {})


class Maker(Protocol):
    """What telling branches apart needs of the sampler (contract/samples.py)."""

    defs: dict[str, Any]

    def valid(self, value: Any, schema: Any) -> bool: ...

    def flat(self, schema: Any) -> Any: ...

    def value(self, schema: Any, depth: int, path: tuple[str, ...]) -> Any: ...

    def candidates(self, schema: Any, depth: int, path: tuple[str, ...]) -> tuple[Any, list[Any], list[Any]]: ...


class Apart:
    """Values that one oneOf branch takes and the others refuse, made with `maker`'s candidates and checks."""

    def __init__(self, maker: Maker) -> None:
        self.maker = maker

    def spoiled(self, schema: Any, flat: Any, candidates: list[Any]) -> Any:
        """A candidate object changed (a property of a type the other branches refuse) to match one branch only."""
        branches = flat.get("oneOf") if isinstance(flat, dict) else None
        if not isinstance(branches, list):
            return NONE
        tries = 0
        for candidate in (c for c in candidates if isinstance(c, dict)):
            matched = [b for b in branches if self.maker.valid(candidate, b)]
            for target in matched:
                value: Any = candidate
                for other in (b for b in matched if b is not target):
                    fits = (v for v in self.spoilers(value, target, other)
                            if self.maker.valid(v, target) and not self.maker.valid(v, other))
                    value = next(fits, NONE)
                    tries += 1
                    if value is NONE or tries > SPOILER_TRIES:
                        break
                if value is not NONE and self.maker.valid(value, schema):
                    return value
                if tries > SPOILER_TRIES:
                    return NONE
        return NONE

    def spoilers(self, value: dict[str, Any], target: Any, other: Any) -> list[dict[str, Any]]:
        """`value` changed so that `other` may refuse it: the target's own value where the two disagree, a
        property `other` declares with a type it refuses, one it forbids, one it requires taken away."""
        mine, theirs = (self.maker.flat(b) for b in (target, other))
        mine = mine if isinstance(mine, dict) else {}
        theirs = theirs if isinstance(theirs, dict) else {}
        own_props: dict[str, Any] = of(mine, "properties", dict, {})
        their_props: dict[str, Any] = of(theirs, "properties", dict, {})
        out = []
        for name, sub in their_props.items():
            if name in own_props:
                built = self.maker.candidates(own_props[name], 3, ())
                out += [{**value, name: made(v)} for v in built[1] + built[2]]
            kinds = types_of(sub, self.maker.defs) or set()
            out += [{**value, name: v} for v in _ONE_OF_EACH_TYPE if kinds and not admits(kinds, v)]
        if theirs.get("additionalProperties") is False:
            extra = {name: self.maker.value(sub, 3, ()) for name, sub in own_props.items() if name not in their_props}
            out += [{**value, name: v} for name, v in extra.items() if v is not NONE]
        out += [{k: v for k, v in value.items() if k != name} for name in of(theirs, "required", list, [])
                if name in value]
        return out
