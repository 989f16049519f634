"""jsonschema where jsonschema-rs cannot run (not installed, or a regex dialect it refuses), bounded in time.

jsonschema runs `pattern` and `patternProperties` with Python's `re`, which backtracks without limit
inside the event loop: `^(a+)+\\Z` and 41 bytes freeze the stub. Here those keywords use the `regex`
package with a timeout (which also reads `\\p{L}`; contract/pattern.py rewrites the ECMA escapes it lacks);
a value that cannot be matched in time is a violation that says so.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from typing import Any

from plantstub.contract.pattern import python_dialect

PATTERN_SECONDS = 0.1  # at most, per match
_DEADLINE: ContextVar[float | None] = ContextVar("plantstub_regex_deadline", default=None)


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Every match inside shares `seconds` in all: a body of many costly values cannot add them up."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


class PatternTooCostly(Exception):
    """A pattern did not finish matching within PATTERN_SECONDS."""


def search(pattern: str, text: str) -> bool:
    """Does `pattern` match somewhere in `text`? Raises PatternTooCostly instead of running on."""
    import regex  # the `regex` package: only where jsonschema has to run

    timeout = PATTERN_SECONDS
    deadline = _DEADLINE.get()
    if deadline is not None:
        timeout = min(timeout, deadline - time.monotonic())
        if timeout <= 0:
            raise PatternTooCostly(pattern)
    try:
        return regex.search(python_dialect(pattern), text, timeout=timeout) is not None
    except TimeoutError:
        raise PatternTooCostly(pattern) from None


def _costly(instance: Any, pattern: str) -> str:
    from plantstub.contract.messages import shown

    return f"{shown(instance)} could not be checked against {pattern!r} (too costly to match)"


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "string"):
        return
    try:
        if not search(pattern, instance):
            yield ValidationError(f"{instance!r} does not match {pattern!r}")
    except PatternTooCostly:
        yield ValidationError(_costly(instance, pattern))


def _matching(schema: Any, name: str) -> list[str]:
    """The patternProperties patterns that `name` matches (PatternTooCostly when one cannot tell)."""
    patterns = schema.get("patternProperties", {}) if isinstance(schema, dict) else {}
    return [p for p in patterns if search(p, name)]


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            try:
                matched = search(pattern, name)
            except PatternTooCostly:
                yield ValidationError(_costly(name, pattern), path=[name])
                continue
            if matched:
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "object"):
        return
    declared = schema.get("properties", {})
    extras = []
    for name in instance:
        if name in declared:
            continue
        try:
            if _matching(schema, name):
                continue
        except PatternTooCostly as exc:
            yield ValidationError(_costly(name, exc.args[0]), path=[name])
            continue
        extras.append(name)
    if validator.is_type(extra, "object"):
        for name in extras:
            yield from validator.descend(instance[name], extra, path=name)
    elif extra is False and extras:
        names = ", ".join(repr(n) for n in sorted(extras, key=str))
        verb = "was" if len(extras) == 1 else "were"
        yield ValidationError(f"Additional properties are not allowed ({names} {verb} unexpected)")


@cache
def validator_class() -> Any:
    """Draft 2020-12, with every regular expression run under a timeout."""
    from jsonschema import Draft202012Validator, validators

    return validators.extend(Draft202012Validator, {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    })
