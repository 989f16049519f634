"""Values that meet a rule's matchers (`{$regex: "^Cact"}` gets a string built to match it, checked) and a request body
from a match's partial one: what it gives kept, the rest of every object it names filled to keep the schema."""

from __future__ import annotations

from collections.abc import Mapping

from plantstub._json import MISSING, shown
from plantstub.contract.compiled import Checks
from plantstub.contract.flatten import defs_of
from plantstub.contract.pattern import matching_strings
from plantstub.contract.samples import sample
from plantstub.matching import is_matcher, matcher_mismatches
from plantstub.scenarios.placeholder_types import schema_at


class NoValue(Exception):
    """No value meets a matcher at `where` (or fits the schema there)."""

    def __init__(self, where: str, why: str) -> None:
        super().__init__(f"{where}: {why}")


def sample_of(schema: object, samples: Checks, defs: dict[str, object] | None = None) -> object:
    """A valid value of `schema` (its example when it has a valid one), MISSING when none is found."""
    if not isinstance(schema, dict):
        return MISSING
    try:
        value = sample(schema, defs, checks=samples)
    except (RecursionError, ValueError, TypeError):
        return MISSING
    return MISSING if value is None and not samples.valid(None, schema, defs or defs_of(schema)) else value


def absent(want: object) -> bool:
    """Whether a criterion wants its field or header absent (`{$absent: true}`, `{$present: false}`)."""
    return isinstance(want, dict) and (want.get("$absent") is True or want.get("$present") is False)


def misses(want: object, actual: str, name: str) -> bool:
    """Whether a header value given with --header fails the rule's criterion for that header."""
    if isinstance(want, dict) and want and is_matcher(want):
        return bool(matcher_mismatches(want, actual, f"headers.{name}"))
    return want != actual


def candidates(matcher: Mapping[str, object]) -> list[object]:
    """Values that may meet a matcher, in the order they are tried (each one is checked)."""
    found: list[object] = []
    if "$eq" in matcher:
        found.append(matcher["$eq"])
    pattern = matcher.get("$regex")
    if isinstance(pattern, str):
        for text in matching_strings(pattern, 0):
            found.append(text)
            scalar = _scalar(text)
            if scalar is not MISSING:
                found.append(scalar)
    wanted = matcher.get("$contains")
    if isinstance(wanted, str):
        found.append(wanted)
    return found


def _scalar(text: str) -> object:
    """`text` read as a JSON number or boolean (a `$regex` also meets one, read as text), else MISSING."""
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return MISSING
    return number if number == number and number not in (float("inf"), float("-inf")) else MISSING


class Filler:
    """A request body from the match's partial body: each value it gives kept, each matcher met, the rest of every
    object it names filled from the request schema's sample there."""

    def __init__(self, schema: object, samples: Checks) -> None:
        self.schema = schema
        self.defs = defs_of(schema)
        self.samples = samples

    def at(self, steps: tuple[str | int, ...]) -> object:
        if self.schema is None:
            return None
        return schema_at(self.schema, steps)[0] if steps else self.schema

    def sample(self, steps: tuple[str | int, ...]) -> object:
        return sample_of(self.at(steps), self.samples, self.defs)

    def valid(self, value: object, steps: tuple[str | int, ...]) -> bool:
        schema = self.at(steps)
        return schema is None or self.samples.valid(value, schema, self.defs)

    def fill(self, want: object, steps: tuple[str | int, ...], base: object, where: str) -> object:
        if isinstance(want, dict) and want and is_matcher(want):
            return self.meet(want, steps, base, where)
        if isinstance(want, dict):
            if not isinstance(base, dict):
                base = self.sample(steps)
            out = dict(base) if isinstance(base, dict) else {}
            for key, item in want.items():
                value = self.fill(item, (*steps, key), out.get(key, MISSING), f"{where}.{key}")
                if value is MISSING:
                    out.pop(key, None)
                else:
                    out[key] = value
            return out
        if isinstance(want, list):
            return [self.fill(item, (*steps, i), MISSING, f"{where}[{i}]") for i, item in enumerate(want)]
        return want

    def meet(self, matcher: dict[str, object], steps: tuple[str | int, ...], base: object, where: str) -> object:
        """A value meeting `matcher` at `steps`: valid against the schema there when one is found."""
        if absent(matcher):
            return MISSING
        found = candidates(matcher)
        wanted = matcher.get("$contains")
        if wanted is not None and not isinstance(wanted, str):
            found.append([self.fill(wanted, (*steps, 0), MISSING, f"{where}[0]")])
        found += [base, self.sample(steps)]
        meeting = [c for c in found if c is not MISSING and not matcher_mismatches(matcher, c, where)]
        if not meeting:
            raise NoValue(where, f"no value found that meets {shown(matcher)}")
        return next((c for c in meeting if self.valid(c, steps)), meeting[0])
