"""oneOf in generated values: a candidate that matches several branches changed to match one only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from plantstub.contract.flatten import types_of
from plantstub.contract.sample_values import NONE, admits, made, of

SPOILER_TRIES = 64
APART_DEPTH = 4  # how deep a value only one branch takes is looked for (`cells[0].properties.type`)
_ONE_OF_EACH_TYPE: tuple[object, ...] = (None, "x", 0, True, [], {})


class Maker(Protocol):
    """What telling branches apart needs of the sampler (contract/samples.py)."""

    defs: dict[str, object]
    twins: list[str]  # oneOf branches that are the same schema, every one of them with another ("A and B")

    def valid(self, value: object, schema: object) -> bool: ...

    def flat(self, schema: object) -> object: ...

    def value(self, schema: object, depth: int, path: tuple[str, ...]) -> object: ...

    def candidates(self, schema: object, depth: int, path: tuple[str, ...]) -> tuple[object, list[object], list[object]]: ...


class Apart:
    """Values that one oneOf branch takes and the others refuse, made with `maker`'s candidates and checks."""

    def __init__(self, maker: Maker) -> None:
        self.maker = maker

    def spoiled(self, schema: object, flat: object, candidates: list[object]) -> object:
        """A candidate object changed (a property of a type the other branches refuse) to match one branch only."""
        if not isinstance(flat, dict):
            return NONE
        branches = flat.get("oneOf")
        if not isinstance(branches, list):
            return NONE
        tries = 0
        flats = [self.maker.flat(b) for b in branches]
        # A branch that another repeats (the same schema under two names, told apart by a discriminator only)
        # can never be the one branch a value matches: not tried.
        twinned = {i for i, f in enumerate(flats) if any(j != i and g == f for j, g in enumerate(flats))}
        if len(twinned) == len(branches) and not self.maker.twins:
            first = next(j for j in range(1, len(flats)) if flats[j] == flats[0])
            self.maker.twins.append(f"{_name(branches[0], 0)} and {_name(branches[first], first)}")
        tried: list[object] = []
        for candidate in (c for c in candidates if isinstance(c, dict)):
            if candidate in tried:
                continue
            tried.append(candidate)
            matched = [b for b in branches if self.maker.valid(candidate, b)]
            for target in (b for i, b in enumerate(branches) if b in matched and i not in twinned):
                value, lost = candidate, False  # lost: a change found no value
                for other in (b for b in matched if b is not target):
                    if not self.maker.valid(value, other):  # a change made for a branch before refuses it too
                        continue
                    # Each change must leave fewer branches matching: one made for this branch may not bring back
                    # a branch an earlier change refused.
                    now = self.matching(value, branches)
                    spoiling = self.spoilers(value, target, other)
                    fits = (v for v in spoiling
                            if self.maker.valid(v, target) and not self.maker.valid(v, other)
                            and self.matching(v, branches) < now)
                    found = next(fits, NONE)
                    tries += 1
                    if found is NONE:
                        lost = True
                        break
                    value = found
                    if tries > SPOILER_TRIES:
                        break
                if not lost and self.maker.valid(value, schema):
                    return self.named(value, flat, target, schema)
                if tries > SPOILER_TRIES:
                    return NONE
        return NONE

    def named(self, value: dict[str, object], flat: dict[str, object], target: object, schema: object) -> dict[str, object]:
        """`value` with the discriminator's property naming `target`, when the schema still takes it (a report
        told apart by its `breakdown` says `name: known_faces`, not the first name its schema allows)."""
        found = flat.get("discriminator")
        ref = target.get("$ref") if isinstance(target, dict) else None
        if not isinstance(found, dict) or not isinstance(found.get("propertyName"), str) or not isinstance(ref, str):
            return value
        key = ref.rsplit("/", 1)[-1]
        mapping = found["mapping"] if isinstance(found.get("mapping"), dict) else {}
        names = [n for n, to in mapping.items() if isinstance(to, str) and to.rsplit("/", 1)[-1] == key] or [key]
        for name in names:
            trial = {**value, found["propertyName"]: name}
            if self.maker.valid(trial, schema):
                return trial
        return value

    def matching(self, value: object, branches: list[object]) -> int:
        """How many of `branches` take `value`."""
        return sum(1 for branch in branches if self.maker.valid(value, branch))

    def spoilers(self, value: dict[str, object], target: object, other: object, depth: int = 0) -> Iterator[dict[str, object]]:
        """`value` changed so that `other` may refuse it: the target's own value where the two disagree, a
        property `other` declares with a type it refuses, one it forbids, one it requires taken away; then,
        made only if those fail, a property both declare holding a value only the target's schema of it takes."""
        mine, theirs = (self.maker.flat(b) for b in (target, other))
        mine = mine if isinstance(mine, dict) else {}
        theirs = theirs if isinstance(theirs, dict) else {}
        own_props: dict[str, object] = of(mine, "properties", dict, {})
        their_props: dict[str, object] = of(theirs, "properties", dict, {})
        for name, sub in their_props.items():
            if name in own_props:
                built = self.maker.candidates(own_props[name], 3, ())
                yield from ({**value, name: made(v)} for v in built[1] + built[2])
            kinds = types_of(sub, self.maker.defs) or set()
            yield from ({**value, name: v} for v in _ONE_OF_EACH_TYPE if kinds and not admits(kinds, v))
        if theirs.get("additionalProperties") is False:
            extra = {name: self.maker.value(sub, 3, ()) for name, sub in own_props.items() if name not in their_props}
            yield from ({**value, name: v} for name, v in extra.items() if v is not NONE)
        yield from ({k: v for k, v in value.items() if k != name} for name in of(theirs, "required", list, [])
                    if name in value)
        for name, sub in their_props.items():  # the two differ deeper down (`cells: [Cell]` or `[CellWithView]`)
            if name in own_props and own_props[name] is not sub:
                inner = self.apart(own_props[name], sub, depth + 1, value.get(name, NONE))
                if inner is not NONE:
                    yield {**value, name: inner}

    def apart(self, mine: object, theirs: object, depth: int, start: object = NONE) -> object:
        """A value `mine` takes and `theirs` refuses, looked for APART_DEPTH levels down, built on `start` (the
        value there now, so that what an earlier change put in it stays) when `mine` takes it; NONE if none."""
        if depth > APART_DEPTH:
            return NONE
        _, given, built = self.maker.candidates(mine, depth, ())
        base: object = NONE
        for candidate in ([] if start is NONE else [start]) + [made(c) for c in given + built]:
            if self.maker.valid(candidate, mine):
                if not self.maker.valid(candidate, theirs):
                    return candidate
                base = candidate if base is NONE else base
        if isinstance(base, dict):
            return next((v for v in self.spoilers(base, mine, theirs, depth)
                         if self.maker.valid(v, mine) and not self.maker.valid(v, theirs)), NONE)
        ours, their = self.maker.flat(mine), self.maker.flat(theirs)
        if isinstance(base, list) and isinstance(ours, dict) and isinstance(their, dict) \
                and "items" in ours and "items" in their:
            item = self.apart(ours["items"], their["items"], depth + 1)
            trial = [item, *base[1:]]
            if item is not NONE and self.maker.valid(trial, mine) and not self.maker.valid(trial, theirs):
                return trial
        return NONE


def _name(branch: object, i: int) -> str:
    """How a message names a oneOf branch: its schema's name, else its place."""
    ref = branch.get("$ref") if isinstance(branch, dict) else None
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else f"oneOf[{i}]"
