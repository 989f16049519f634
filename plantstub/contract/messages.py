"""Violation messages written from jsonschema-rs's own errors: where (its instance path) and what (its kind).

jsonschema-rs alone checks requests, replies and webhooks; no Python regular expression ever runs on a
failing value to explain it. Wording follows what plantstub has always said; python jsonschema's errors
(scenario files, refused schemas) go through `python_message`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from plantstub._json import MAX_SHOWN, cut, shown

if TYPE_CHECKING:
    import jsonschema_rs

__all__ = ["MAX_SHOWN", "message_of", "python_message", "shown"]


class _Limited(Protocol):
    """A kind of error about a bound (MinLength, MaxItems, Minimum...): its `limit`."""

    @property
    def limit(self) -> object: ...


def _names(values: Iterable[object]) -> str:
    return ", ".join(shown(v) for v in values)


def _unexpected(names: list[object], what: str) -> str:
    verb = "was" if len(names) == 1 else "were"
    return f"{what} are not allowed ({_names(sorted(names, key=str))} {verb} unexpected)"


def _bound(name: str, value: str, kind: _Limited) -> str:
    side, bound = ("less than", "minimum") if name.endswith("Minimum") else ("greater than", "maximum")
    equal = " or equal to" if name.startswith("Exclusive") else ""
    return f"{value} is {side}{equal} the {bound} of {kind.limit!r}"


def _too_short(value: str, kind: _Limited) -> str:
    return f"{value} should be non-empty" if kind.limit == 1 else f"{value} is too short"


def _too_long(value: str, kind: _Limited) -> str:
    return f"{value} is expected to be empty" if kind.limit == 0 else f"{value} is too long"


def _none_valid(value: str, kind: object) -> str:
    return f"{value} is not valid under any of the given schemas"


def _costly(value: str, kind: object) -> str:
    return f"{value} could not be checked against its pattern (too costly to match)"


# The kind's class name (ValidationErrorKind.Required, ...) -> the text, from the kind alone: the value is not
# quoted, so not shown (writing a body out is most of the cost of a missing property's message). Looked up by name
# (a kind a later jsonschema-rs adds falls through), so each function reads the attributes its kind has: Any.
_PLAIN: dict[str, Callable[[Any], str]] = {
    "Required": lambda k: f"{k.property!r} is a required property",
    "Constant": lambda k: f"{shown(k.expected_value)} was expected",
    "AdditionalProperties": lambda k: _unexpected(list(k.unexpected), "Additional properties"),
    "UnevaluatedProperties": lambda k: _unexpected(list(k.unexpected), "Unevaluated properties"),
    "UnevaluatedItems": lambda k: _unexpected(list(k.unexpected), "Unevaluated items"),
}
# The kind's class name (ValidationErrorKind.Type, ...) -> the text, from the shown value and the kind.
_TEXTS: dict[str, Callable[[str, Any], str]] = {
    "Type": lambda v, k: f"{v} is not of type {_names(list(k.types))}",
    "Minimum": lambda v, k: _bound("Minimum", v, k),
    "Maximum": lambda v, k: _bound("Maximum", v, k),
    "ExclusiveMinimum": lambda v, k: _bound("ExclusiveMinimum", v, k),
    "ExclusiveMaximum": lambda v, k: _bound("ExclusiveMaximum", v, k),
    "MultipleOf": lambda v, k: f"{v} is not a multiple of {k.multiple_of!r}",
    "MinLength": _too_short,
    "MinItems": _too_short,
    "MaxLength": _too_long,
    "MaxItems": _too_long,
    "MinProperties": lambda v, k: f"{v} does not have enough properties (at least {k.limit})",
    "MaxProperties": lambda v, k: f"{v} has too many properties (at most {k.limit})",
    "Enum": lambda v, k: f"{v} is not one of {shown(list(k.options))}",
    "Pattern": lambda v, k: f"{v} does not match {k.pattern!r}",
    "Format": lambda v, k: f"{v} is not a {k.format!r}",
    "AdditionalItems": lambda v, k: f"{v} has more than the {k.limit} items allowed",
    "AnyOf": _none_valid,
    "OneOfNotValid": _none_valid,
    "OneOfMultipleValid": lambda v, k: f"{v} is valid under more than one of the given schemas",
    "Not": lambda v, k: f"{v} should not be valid under {shown(k.schema)}",
    "UniqueItems": lambda v, k: f"{v} has non-unique elements",
    "Contains": lambda v, k: f"{v} does not contain an item that is valid under the given schema",
    "FalseSchema": lambda v, k: f"{v} is not allowed here (the schema is false)",
    "PropertyNames": lambda v, k: f"property name {message_of(k.error)}",
    "BacktrackLimitExceeded": _costly,
    "RegexEngineFailure": _costly,
    "ContentEncoding": lambda v, k: f"{v} is not encoded as {k.content_encoding!r}",
    "ContentMediaType": lambda v, k: f"{v} is not of media type {k.content_media_type!r}",
    "FromUtf8": lambda v, k: f"{v} is not valid UTF-8 once decoded",
    "Referencing": lambda v, k: f"{v} could not be checked: its schema refers to what the spec does not hold",
    "Custom": lambda v, k: f"{v} is not valid: {k.message}",
}


def message_of(error: jsonschema_rs.ValidationError) -> str:
    """The text of one jsonschema-rs ValidationError, without its location; a kind a later jsonschema-rs adds
    says the keyword that failed."""
    kind = error.kind
    plain = _PLAIN.get(type(kind).__name__)
    if plain is not None:
        return plain(kind)
    name = type(kind).__name__
    text = _TEXTS.get(name)
    if text is None:
        return f"{shown(error.instance)} is not valid under {_keyword(error)!r}"
    if name == "FalseSchema" and _keyword(error) in ("additionalProperties", "unevaluatedProperties"):
        # jsonschema-rs says so beside an allOf, at the object's place: the keyword at least is named
        return f"{shown(error.instance)} is not allowed here: `{_keyword(error)}: false` refuses the property holding it"
    return text(shown(error.instance), kind)


def _keyword(error: jsonschema_rs.ValidationError) -> str:
    """The keyword that failed: the last word of the error's schema path."""
    words = [w for w in error.schema_path if isinstance(w, str)]
    return words[-1] if words else type(error.kind).__name__


def python_message(error: Any) -> str:  # python jsonschema's ValidationError: read untyped here
    """The text of one `jsonschema` ValidationError, with the value it quotes in full cut short (`shown`)."""
    text, whole = str(error.message), repr(error.instance)
    if text.startswith(whole):
        text = shown(error.instance) + text[len(whole):]
    return cut(text, 3 * MAX_SHOWN)
