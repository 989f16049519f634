"""`{{ request.body.x }}` placeholders in replies: a regex and a dotted-path walk, never eval.

A string that is exactly one placeholder keeps the JSON type of what it refers to; when the request
lacks that value, its key is left out of the enclosing object (so an optional field stays optional),
and it is null inside a list or as the whole body. A placeholder inside other text is inserted as text
(JSON for objects and lists, empty when missing). Values without placeholders are returned as they
are, never copied.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from plantstub._fields import ByFields
from plantstub._json import MISSING, NO_BODY
from plantstub._words import did_you_mean

FIELDS = ("body", "headers", "query", "path", "method")
EXPECTED = "request.body, request.headers, request.query, request.path or request.method"

_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.S)
_ROOT = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)")
# A step is a key (anything but brackets, dots, spaces, quotes, parens, pipes) or an [index].
_STEP = re.compile(r"\.([^.\[\]\s{}()'\"|]+)|\[(\d+)\]")

Location = tuple[str | int, ...]
View = Mapping[str, object]  # the request as templates read it: method, path, body, headers, query


class TemplateError(ValueError):
    """A placeholder plantstub does not understand; the message says which and what is expected."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class Ref(ByFields):
    """A parsed placeholder: the request field and the steps below it."""

    field: str
    steps: tuple[str | int, ...]


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class Placeholder(ByFields):
    """A placeholder found in a reply value: where, its text, whether it is the whole string, any problem."""

    location: Location
    text: str
    lone: bool
    problem: str | None = None


@lru_cache(maxsize=4096)
def parse(text: str) -> Ref:
    """`{{ request.body.items[0].name }}` -> Ref("body", ("items", 0, "name")); raises TemplateError."""
    expr = text[2:-2].strip()
    if not expr:
        raise TemplateError(f"empty placeholder {text!r} (expected e.g. {{{{ request.body.name }}}})")
    root = _ROOT.match(expr)
    if root is None or root.group(1) != "request":
        name = root.group(1) if root else expr
        raise TemplateError(f"unknown template root {name!r} in {text!r} (expected {EXPECTED})")
    rest, at, steps = expr, root.end(), []
    while at < len(rest):
        m = _STEP.match(rest, at)
        if m is None:
            raise TemplateError(
                f"{text!r} is not a placeholder plantstub understands (expected {EXPECTED}, then .name or [0] steps)"
            )
        steps.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        at = m.end()
    if not steps or not isinstance(steps[0], str) or steps[0] not in FIELDS:
        found = steps[0] if steps else ""
        hint = did_you_mean(str(found), FIELDS, "request.") or f"expected {EXPECTED}"
        raise TemplateError(f"unknown request field {found!r} in {text!r} ({hint})")
    field, below = steps[0], tuple(steps[1:])
    if field in ("path", "method") and below:
        raise TemplateError(f"request.{field} is text and has no parts, in {text!r}")
    return Ref(field, below)


def _header(headers: object, name: str) -> object:
    if not isinstance(headers, Mapping):
        return MISSING
    value = headers.get(name, MISSING)  # a CIMultiDict answers case-insensitively already
    if value is MISSING:
        lower = name.lower()
        value = next((v for k, v in headers.items() if k.lower() == lower), MISSING)
    return value


def _step(value: object, step: str | int) -> object:
    if isinstance(value, Mapping) and isinstance(step, str):
        return value.get(step, MISSING)
    if isinstance(value, list):
        if isinstance(step, str) and step.isdigit():
            step = int(step)
        if isinstance(step, int) and 0 <= step < len(value):
            return value[step]
    return MISSING


def lookup(ref: Ref, view: View) -> object:
    """The request value `ref` points at, or the MISSING marker."""
    value = view.get(ref.field, MISSING)
    steps = ref.steps
    if ref.field == "headers":
        if not steps:
            return dict(value.items()) if isinstance(value, Mapping) else MISSING
        value, steps = _header(value, str(steps[0])), steps[1:]
    if value is NO_BODY:
        return MISSING
    for step in steps:
        if value is MISSING:
            break
        value = _step(value, step)
    return value


def as_text(value: object) -> str:
    """How a value reads inside text: strings as they are, JSON for the rest, empty when missing."""
    if value is MISSING:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _is_lone(value: str, found: list[re.Match[str]]) -> bool:
    return len(found) == 1 and found[0].start() == 0 and found[0].end() == len(value)


# A compiled node is None (static: return the value as it is) or a function of the view.
Node = Callable[[View], object] | None


def _compile_text(value: str, text_only: bool) -> Node:
    found = list(_PLACEHOLDER.finditer(value))
    if not found:
        return None
    if _is_lone(value, found) and not text_only:
        ref = parse(found[0].group(0))

        def lone(view: View) -> object:
            return lookup(ref, view)  # MISSING is resolved by the enclosing object, list or render()

        return lone
    pieces: list[str | Ref] = []
    last = 0
    for m in found:
        pieces.append(value[last : m.start()])
        pieces.append(parse(m.group(0)))
        last = m.end()
    pieces.append(value[last:])
    parts = [p for p in pieces if p != ""]

    def text(view: View) -> str:
        return "".join(p if isinstance(p, str) else as_text(lookup(p, view)) for p in parts)

    return text


def _compile(value: object, text_only: bool) -> Node:
    if isinstance(value, str):
        return _compile_text(value, text_only)
    if isinstance(value, dict):
        items = [(key, item, _compile(item, text_only)) for key, item in value.items()]
        if all(node is None for _, _, node in items):
            return None

        def mapping(view: View) -> dict[str, object]:
            built: dict[str, object] = {}
            for key, item, node in items:
                if node is not None:
                    item = node(view)
                    if item is MISSING:  # the request lacks it: leave the key out
                        continue
                built[key] = item
            return built

        return mapping
    if isinstance(value, list):
        entries = [(item, _compile(item, text_only)) for item in value]
        if all(node is None for _, node in entries):
            return None
        return lambda view: [item if node is None else _present(node(view)) for item, node in entries]
    return None


def _present(value: object) -> object:
    return None if value is MISSING else value


class Template:
    """A reply value compiled once; `render(view)` fills it for one request."""

    __slots__ = ("_node", "source")

    def __init__(self, source: object, node: Node) -> None:
        self.source = source
        self._node = node

    @property
    def static(self) -> bool:
        return self._node is None

    def render(self, view: View) -> object:
        """Fill the placeholders from `view` (method, path, body, headers, query)."""
        return self.source if self._node is None else _present(self._node(view))


def compile_template(value: object, *, text: bool = False) -> Template:
    """Compile a reply value (recursively through dicts and lists; keys stay literal).

    With `text=True` (header values) a lone placeholder renders as text too. Raises TemplateError.
    """
    return Template(value, _compile(value, text))


def render(value: object, request_view: View) -> object:
    """Compile and render in one go (a convenience; compile once when rendering often)."""
    return compile_template(value).render(request_view)


def placeholder_paths(value: object, location: Location = ()) -> list[Placeholder]:
    """Every placeholder in `value` with its location, whether its string is only that, and any problem."""
    found: list[Placeholder] = []
    if isinstance(value, str):
        matches = list(_PLACEHOLDER.finditer(value))
        lone = _is_lone(value, matches)
        for m in matches:
            try:
                parse(m.group(0))
                problem = None
            except TemplateError as exc:
                problem = str(exc)
            found.append(Placeholder(location, m.group(0), lone, problem))
    elif isinstance(value, dict):
        for key, item in value.items():
            found.extend(placeholder_paths(item, (*location, key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.extend(placeholder_paths(item, (*location, i)))
    return found
