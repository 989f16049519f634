"""Violation messages written from jsonschema-rs's own errors: where (its instance path) and what (its kind).

The request path never hands a failing value back to a Python regular expression to explain it: a
pattern such as `^(a+)+$` backtracks for minutes in Python's `re`, and jsonschema-rs has already
decided (with a bound on backtracking). Wording follows what plantstub has always said.
"""

from __future__ import annotations

from typing import Any

MAX_SHOWN = 120  # characters of a value shown in a message


def shown(value: Any) -> str:
    """`repr()` of a value, cut short: a 1 MB body must not become a 1 MB message, nor take its time."""
    parts: list[str] = []
    _repr_into(value, parts, [MAX_SHOWN])
    text = "".join(parts)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def _repr_into(value: Any, parts: list[str], left: list[int]) -> None:
    """Append the repr of `value` to `parts` until about `left[0]` characters are written."""
    if left[0] <= 0:
        return
    if isinstance(value, (list, dict)):
        opening, closing = ("[", "]") if isinstance(value, list) else ("{", "}")
        parts.append(opening)
        left[0] -= 1
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for i, (key, item) in enumerate(items):
            if left[0] <= 0:
                return
            if i:
                parts.append(", ")
                left[0] -= 2
            if isinstance(value, dict):
                _repr_into(key, parts, left)
                parts.append(": ")
                left[0] -= 2
            _repr_into(item, parts, left)
        parts.append(closing)
        left[0] -= 1
        return
    text = repr(value[: left[0] + 2] if isinstance(value, str) and len(value) > left[0] + 2 else value)
    parts.append(text)
    left[0] -= len(text)


def _names(values: list[Any]) -> str:
    return ", ".join(repr(v) for v in values)


def _unexpected(names: list[Any], what: str) -> str:
    verb = "was" if len(names) == 1 else "were"
    return f"{what} are not allowed ({_names(sorted(names, key=str))} {verb} unexpected)"


def message_of(error: Any) -> str:
    """The text of one jsonschema-rs ValidationError, without its location."""
    kind = error.kind
    name = type(kind).__name__  # the kind's class: ValidationErrorKind.Type, .Required, ...
    value = shown(error.instance)
    if name == "Type":
        return f"{value} is not of type {_names(list(kind.types))}"
    if name == "Required":
        return f"{kind.property!r} is a required property"
    if name in ("Minimum", "Maximum", "ExclusiveMinimum", "ExclusiveMaximum"):
        side = "less than" if name.endswith("Minimum") else "greater than"
        bound = "minimum" if name.endswith("Minimum") else "maximum"
        equal = " or equal to" if name.startswith("Exclusive") else ""
        return f"{value} is {side}{equal} the {bound} of {kind.limit!r}"
    if name == "MultipleOf":
        return f"{value} is not a multiple of {kind.multiple_of!r}"
    if name in ("MinLength", "MinItems"):
        return f"{value} should be non-empty" if kind.limit == 1 else f"{value} is too short"
    if name in ("MaxLength", "MaxItems"):
        return f"{value} is expected to be empty" if kind.limit == 0 else f"{value} is too long"
    if name == "MinProperties":
        return f"{value} does not have enough properties (at least {kind.limit})"
    if name == "MaxProperties":
        return f"{value} has too many properties (at most {kind.limit})"
    if name == "Enum":
        return f"{value} is not one of {shown(list(kind.options))}"
    if name == "Constant":
        return f"{shown(kind.expected_value)} was expected"
    if name == "Pattern":
        return f"{value} does not match {kind.pattern!r}"
    if name == "Format":
        return f"{value} is not a {kind.format!r}"
    if name == "AdditionalProperties":
        return _unexpected(list(kind.unexpected), "Additional properties")
    if name == "UnevaluatedProperties":
        return _unexpected(list(kind.unexpected), "Unevaluated properties")
    if name == "UnevaluatedItems":
        return _unexpected(list(kind.unexpected), "Unevaluated items")
    if name == "AdditionalItems":
        return f"{value} has more than the {kind.limit} items allowed"
    if name in ("AnyOf", "OneOfNotValid"):
        return f"{value} is not valid under any of the given schemas"
    if name == "OneOfMultipleValid":
        return f"{value} is valid under more than one of the given schemas"
    if name == "Not":
        return f"{value} should not be valid under {shown(kind.schema)}"
    if name == "UniqueItems":
        return f"{value} has non-unique elements"
    if name == "Contains":
        return f"{value} does not contain an item that is valid under the given schema"
    if name == "FalseSchema":
        return f"{value} is not allowed here (the schema is false)"
    if name == "PropertyNames":
        return f"property name {message_of(kind.error)}"
    if name in ("BacktrackLimitExceeded", "RegexEngineFailure"):
        return f"{value} could not be checked against its pattern (too costly to match)"
    return str(error.message)
