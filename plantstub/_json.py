"""JSON as plantstub reads and writes it: the two markers of absence, strict decoding, and media types.

One home for "is it JSON": a media type's essence (`type/subtype`, lower case, no parameters) is JSON when
its subtype is `json` (`application/json`, .NET's `text/json`) or ends in `+json`. Everything that asks,
asks `is_json()`.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from fnmatch import fnmatchcase
from functools import lru_cache
from itertools import accumulate
from typing import Final, NamedTuple, NoReturn

import orjson


class _Marker:
    """A named marker that is no JSON value (JSON null is None)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


class _NoBody(_Marker):
    __slots__ = ()

    def __bool__(self) -> bool:  # `if body:` reads "is there one"
        return False


# No body: a request or reply without one (a body of `null` is the JSON value None).
NO_BODY: Final = _NoBody("NO_BODY")
# No value at this place: an absent header, a field the request lacks, an example the spec does not give.
MISSING: Final = _Marker("MISSING")


# -- media types --------------------------------------------------------------------------------
JSON = "application/json"


@lru_cache(maxsize=1024)  # asked several times per request, of a handful of distinct values
def essence(media_type: str | None) -> str:
    """`Application/JSON; charset=utf-8` -> `application/json`: the type and subtype, lower case."""
    return (media_type or "").split(";", 1)[0].strip().lower()


@lru_cache(maxsize=1024)
def is_json(media_type: str | None) -> bool:
    """Whether a media type (with or without parameters) carries JSON: */json (text/json) or */*+json."""
    kind = essence(media_type)
    return kind == JSON or kind.endswith(("+json", "/json"))


def match_media(media_type: str, declared: Iterable[str]) -> str | None:
    """The declared media type (as written) that `media_type` is sent as: an exact essence first, then
    the most specific wildcard (`application/*+json`, `text/*`, `*/*`): the longest pattern that fits."""
    kind = essence(media_type)
    names = list(declared)
    for name in names:
        if essence(name) == kind:
            return name
    fitting = [name for name in names if "*" in name and fnmatchcase(kind, essence(name))]
    return max(fitting, key=lambda name: len(essence(name))) if fitting else None


def concrete(media_type: str) -> str:
    """A media type an answer can carry: a declared range (`*/*`, `application/*`) becomes JSON, `text/*`
    plain text, any other `type/*` octet-stream; a concrete type stays as written."""
    kind = essence(media_type)
    if "*" not in kind:
        return media_type
    if kind in ("*/*", "application/*") or kind.endswith("+json"):
        return JSON
    return "text/plain" if kind.startswith("text/") else "application/octet-stream"


def pick_json(declared: Iterable[str]) -> str | None:
    """The media type a stub answers in, of those declared: application/json, else a +json one, else the first."""
    names = list(declared)
    return (
        next((n for n in names if essence(n) == JSON), None)
        or next((n for n in names if is_json(n)), None)
        or next(iter(names), None)
    )


# -- strict decoding ----------------------------------------------------------------------------
class BodyError(ValueError):
    """The raw body could not be read as the declared media type."""


class TooDeep(BodyError):
    """The body nests deeper than plantstub parses."""


def _no_constants(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is too large for a JSON number")
    return value


MAX_DIGITS = 4300  # CPython's own limit on int() of a long digit string (sys.get_int_max_str_digits)


def _integer(text: str) -> int:
    digits = len(text) - (text[0] == "-")
    if digits > MAX_DIGITS:  # our words, not CPython's (which differ between versions and name its internals)
        raise ValueError(f"a number of {digits} digits is longer than the {MAX_DIGITS} digits plantstub reads")
    return int(text)


# Built once: json.loads() with options builds a new decoder on every call.
_DECODER = json.JSONDecoder(parse_constant=_no_constants, parse_float=_finite, parse_int=_integer)


# orjson reads an integer beyond 64 bits as a float: such a body (or one with a long digit run inside
# a string) goes to the standard library's decoder, which keeps every integer exact.
_LONG_DIGITS = re.compile(rb"[0-9]{19}")


# What a spec or scenario document may be, aliases expanded: deeper or larger data would crash libyaml's
# composer (it recurses; 50,000 levels overflow the C stack) or make every later walk over it take hours.
MAX_DEPTH = 100  # levels of lists and mappings, one inside the other
MAX_ALIASED = 100_000  # values that aliases (`*name`, `<<: *name`) may add to a document, all counted
TOO_DEEP = f"nested deeper than the {MAX_DEPTH} levels plantstub reads"


class DocumentLimit(ValueError):
    """A document nests too deeply, or its aliases expand too far; `line` is where it crossed the limit."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(reason)
        self.line, self.reason = line, reason


MAX_NESTING = 1024  # levels of arrays and objects a body may nest: orjson's own bound, kept on every path


def inside(value: object, keys: bool = False) -> Iterator[object]:
    """`value` and every value in it, at any depth (a loop: any depth is walked): each list item and mapping value,
    and each mapping key too when `keys`. The one walk of a parsed JSON or YAML value; the order is not promised."""
    todo: list[object] = [value]
    while todo:
        item = todo.pop()
        yield item
        if isinstance(item, dict):
            if keys:
                todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)


def nests_deeper(value: object, levels: int) -> bool:
    """Does `value` nest lists, tuples and mappings more than `levels` deep? (a loop: any depth is measured)"""
    todo: list[tuple[object, int]] = [(value, 0)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, Mapping):
            children: Iterable[object] = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth >= levels:
            return True
        todo.extend((child, depth + 1) for child in children)
    return False


# JSON's nesting, counted at C speed: escapes dropped, then all but quotes and brackets, then strings; each
# opening bracket is +1 and each closing one -1 (as a signed byte), and the running sum is the depth.
_JSON_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_JSON_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(b'[]{}"')))
_JSON_STRING = re.compile(rb'"[^"]*"?')
_JSON_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


def json_nesting(raw: bytes) -> int:
    """How deep JSON text nests arrays and objects (0: a scalar), counted without parsing it."""
    structure = _JSON_ESCAPE.sub(b"", raw).translate(None, _JSON_NOT_STRUCTURE)
    return max(accumulate(array("b", _JSON_STRING.sub(b"", structure).translate(_JSON_STEPS))), default=0)


def decode_json(raw: bytes) -> object:
    """Parse a JSON body strictly: UTF-8 only, no NaN/Infinity, bounded nesting, integers exact.

    orjson parses; whatever it refuses (or might not keep exact) is read again by the standard
    library's strict decoder, which accepts what JSON allows (a byte-order mark, very deep nesting
    up to Python's limit) and words every refusal. Raises BodyError.
    """
    if _LONG_DIGITS.search(raw) is None:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BodyError(f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        reason = exc.msg.removesuffix(" at")  # the standard library's "Invalid control character at"
        raise BodyError(f"not valid JSON: {reason} at line {exc.lineno} column {exc.colno}") from None
    except ValueError as exc:  # NaN, Infinity, or an integer too long to convert
        raise BodyError(f"not valid JSON: {exc}") from None
    except RecursionError:
        raise TooDeep("nested too deeply to parse") from None
    if nests_deeper(value, MAX_NESTING):  # how deep the standard library reads depends on the Python: not ours
        raise TooDeep("nested too deeply to parse")
    return value


def scan_json(text: str, at: int) -> tuple[object, int]:
    """One JSON value of `text` starting at index `at`, read as strictly as decode_json() reads, and the index after
    it. Raises StopIteration when no value starts there, ValueError or RecursionError as the strict decoder does."""
    return _SCAN(text, at)


# The C scanner decode() itself uses: an attribute JSONDecoder sets in __init__, which typeshed does not declare.
_SCAN: Callable[[str, int], tuple[object, int]] = vars(_DECODER)["scan_once"]


def body_for_record(raw: bytes) -> object:
    """The body as a call shows it: parsed JSON when it parses, else text, else None when empty."""
    if not raw:
        return None
    try:
        return decode_json(raw)
    except BodyError:
        return raw.decode("utf-8", errors="replace")


# -- writing ------------------------------------------------------------------------------------
# Built once, not per call. No NaN nor Infinity: JSON has neither (orjson writes them as null; so does the fallback).
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ASCII_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def json_bytes(value: object) -> bytes:
    """Compact UTF-8 JSON, as every answer is sent (orjson; the standard library for integers beyond
    64 bits and keys that are not strings, which orjson refuses)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        pass
    try:
        try:
            return _ENCODER.encode(value).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (from a `\ud800` escape): JSON carries it escaped
            return _ASCII_ENCODER.encode(value).encode("ascii")
    # Nested deeper than the stack allows here (a body the parser took, ~1,000 levels); or NaN or an infinity
    # (a value from Python code) beside what only this encoder writes: null, as orjson writes them, never `Infinity`.
    except (RecursionError, ValueError):
        return deep_json_bytes(value)


def deep_json_bytes(value: object) -> bytes:
    """Compact ASCII JSON of parsed JSON (dicts, lists, strings, numbers, booleans, None) at any depth.

    A loop with its own stack, for what the recursive encoders refuse: slower, so only their fallback.
    """
    parts: list[str] = []
    todo: list[object] = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, _Literal):
            parts.append(item.text)
        elif isinstance(item, dict):
            todo.append(_CLOSE_OBJECT)
            entries = list(item.items())
            for i in range(len(entries) - 1, -1, -1):
                key, member = entries[i]
                todo.append(member)
                todo.append(_Literal(("," if i else "") + _ASCII_ENCODER.encode(str(key)) + ":"))
            parts.append("{")
        elif isinstance(item, (list, tuple)):
            todo.append(_CLOSE_ARRAY)
            for i in range(len(item) - 1, -1, -1):
                todo.append(item[i])
                if i:
                    todo.append(_Literal(","))
            parts.append("[")
        elif isinstance(item, float) and not math.isfinite(item):
            parts.append("null")
        else:  # a scalar: the standard encoder does not recurse for it
            parts.append(_ASCII_ENCODER.encode(item))
    return "".join(parts).encode("ascii")


class _Literal(NamedTuple):
    text: str


_CLOSE_OBJECT, _CLOSE_ARRAY = _Literal("}"), _Literal("]")  # where a container's closing bracket goes


def scalar_text(value: object) -> str:
    """A scalar as text (`text/plain`, an XML element's or attribute's text): true/false, a JSON number, the string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json_bytes(value).decode("ascii")
    if isinstance(value, str):
        return value
    return json_bytes(value).decode("utf-8")  # an object where a text stands: its JSON (never from a valid value)


# -- quoting -----------------------------------------------------------------------------------
MAX_SHOWN = 80  # characters of a value (or of a key, tag or anchor name) that any message quotes


def shown(value: object, limit: int = MAX_SHOWN) -> str:
    """`repr()` of a value, cut short: a 1 MB body must not become a 1 MB message, nor take its time. A text is
    quoted whole up to `limit` characters, else its first `limit` and `…`; anything else is cut at `limit`."""
    if isinstance(value, str):
        return repr(value if len(value) <= limit else value[:limit] + "…")
    parts: list[str] = []
    _repr_into(value, parts, [limit])
    return cut("".join(parts), limit)


def cut(text: str, limit: int = MAX_SHOWN) -> str:
    """`text` if it is at most `limit` characters long, else its start and an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _repr_into(value: object, parts: list[str], left: list[int]) -> None:
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
