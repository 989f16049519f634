"""One compiled JSON Schema: a fast yes/no, and jsonschema's messages only when there is something to say.

jsonschema-rs (the accelerator) decides valid/invalid and checks schemas against the 2020-12
metaschema; jsonschema defines behaviour and writes every message. jsonschema is imported the first
time a message is needed (an invalid request, a broken schema) or when the accelerator is missing or
refuses a schema, so starting the stub and serving valid traffic never pay for it (about 50 ms).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import cache, cached_property
from importlib.metadata import version
from itertools import islice
from typing import Any

from plantstub.contract.fallback import time_budget
from plantstub.contract.messages import message_of
from plantstub.contract.pattern import servable
from plantstub.errors import SpecError

try:  # the accelerator answers yes/no; jsonschema still defines behaviour and writes messages
    import jsonschema_rs
except ImportError:  # pragma: no cover - exercised where no wheel exists
    jsonschema_rs = None  # type: ignore[assignment]

MAX_MESSAGE = 240
BACKTRACK_LIMIT = 10_000

# Keywords whose values are subschemas, by shape: {name: schema}, one schema, [schema, ...].
SCHEMA_MAPS = frozenset(("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"))
SCHEMA_ONE = frozenset((
    "items", "additionalProperties", "additionalItems", "not", "if", "then", "else", "contains",
    "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema",
))
SCHEMA_LISTS = frozenset(("allOf", "anyOf", "oneOf", "prefixItems"))
_DATA_KEYWORDS = ("enum", "const", "default", "example", "examples")  # values, not subschemas
# What a walk of a bundled schema's subschemas skips: values, and the root's `$defs` (looked at apart, by key).
NOT_SCHEMAS = frozenset((*_DATA_KEYWORDS, "$defs"))


# -- formats --------------------------------------------------------------------------------
_DATE_TIME = re.compile(
    r"\A\d{4}-\d{2}-\d{2}[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z"
)
_TIME = re.compile(r"\A(\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z")
_HOSTNAME = re.compile(r"\A(?=.{1,253}\Z)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?\Z")
_URI = re.compile(r"\A[A-Za-z][A-Za-z0-9+.-]*:[^\s]*\Z")


def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    m = _DATE_TIME.match(value)
    if not m:
        return False
    try:
        datetime.fromisoformat(value[:10])
    except ValueError:
        return False
    return int(m.group(1)) < 24 and int(m.group(2)) < 60 and int(m.group(3)) < 61


def _is_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    m = _TIME.match(value)
    return m is not None and int(m.group(1)) < 24 and int(m.group(2)) < 60 and int(m.group(3)) < 61


def _is_hostname(value: object) -> bool:
    return not isinstance(value, str) or bool(_HOSTNAME.match(value))


def _is_uri(value: object) -> bool:
    return not isinstance(value, str) or bool(_URI.match(value))


@cache
def format_checker() -> Any:
    """jsonschema's FormatChecker with the format checks requests and replies get (built on first use)."""
    import jsonschema

    checker = jsonschema.FormatChecker()
    for name, check in (("date-time", _is_date_time), ("time", _is_time), ("hostname", _is_hostname), ("uri", _is_uri)):
        checker.checks(name)(check)
    return checker


# -- the metaschema -------------------------------------------------------------------------
def _patterns(schema: Any) -> Iterator[str]:
    """Every regular expression in `schema`: `pattern` values and `patternProperties` keys."""
    if not isinstance(schema, dict):
        return
    if isinstance(schema.get("pattern"), str):
        yield schema["pattern"]
    for key, value in schema.items():
        if key in SCHEMA_MAPS and isinstance(value, dict):
            if key == "patternProperties":
                yield from value
            for sub in value.values():
                yield from _patterns(sub)
        elif key in SCHEMA_ONE:
            yield from _patterns(value)
        elif key in SCHEMA_LISTS and isinstance(value, list):
            for sub in value:
                yield from _patterns(sub)


class EngineMismatch(RuntimeError):
    """The installed jsonschema-rs does not take plantstub's call: a bug in plantstub (or its declared floor),
    never in the spec, so not a SpecError and not caught as a document's odd shape."""


def _engine(schema: Any, formats: bool | None = None) -> Any:
    """jsonschema-rs's validator, offline (no URL is ever fetched); `formats` None keeps its defaults.

    jsonschema-rs refuses a schema with ValueError; a TypeError or AttributeError is plantstub's call.
    """
    try:
        if formats is None:
            return jsonschema_rs.Draft202012Validator(schema, offline=True)
        return jsonschema_rs.Draft202012Validator(
            schema, validate_formats=formats, offline=True,
            # fancy-regex backtracks for lookarounds: stop a pattern at this many steps (< 1 ms)
            pattern_options=jsonschema_rs.FancyRegexOptions(backtrack_limit=BACKTRACK_LIMIT),
        )
    except (TypeError, AttributeError) as exc:
        raise EngineMismatch(f"plantstub internal error (a bug in plantstub, not in the spec): jsonschema-rs"
                             f" {version('jsonschema-rs')} does not take plantstub's call ({type(exc).__name__}:"
                             f" {exc})") from exc


@cache
def _fast_metaschema() -> Any:
    """jsonschema-rs's check against the 2020-12 metaschema, offline. Its `meta.is_valid` reads a
    schema's `$schema` to choose a dialect and fetches one it does not know: never here."""
    return _engine({"$ref": "https://json-schema.org/draft/2020-12/schema"})


def meta_valid(schema: Any) -> bool:
    """Fast: is `schema` valid 2020-12 JSON Schema whose patterns plantstub serves? False: ask jsonschema why."""
    if jsonschema_rs is None:
        return False
    try:
        if not _fast_metaschema().is_valid(schema):
            return False
        return all(servable(pattern) for pattern in _patterns(schema))
    except (ValueError, RecursionError):
        return False


@cache
def metaschema_validator() -> Any:
    """jsonschema's 2020-12 metaschema validator with its formats asserted (built on first use); a `regex` is
    what plantstub serves (contract/pattern.py: `\\p{L}` too), not only what Python's `re` reads."""
    import jsonschema

    meta = jsonschema.Draft202012Validator
    checker = jsonschema.FormatChecker(())
    checker.checkers = {**meta.FORMAT_CHECKER.checkers}
    checker.checks("regex")(lambda value: not isinstance(value, str) or servable(value))
    return meta(meta.META_SCHEMA, format_checker=checker)


# -- one schema -----------------------------------------------------------------------------
def _short(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


class _Recursive(Exception):
    pass


def inline_refs(schema: Any) -> Any:
    """The bundled schema with its local `$defs` references written in place, when none is recursive.

    Same meaning and messages; jsonschema's message path then skips $ref resolution (about 2x faster).
    A recursive schema is returned as it is.
    """
    if not isinstance(schema, dict) or not isinstance(schema.get("$defs"), dict):
        return schema
    defs = schema["$defs"]

    def walk(node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(item, stack) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
            name = ref[8:]
            if name in stack:
                raise _Recursive
            target = walk(defs[name], (*stack, name))
            rest = {k: walk(v, stack) for k, v in node.items() if k != "$ref"}
            return {"allOf": [target], **rest} if rest else target
        return {k: (v if k in _DATA_KEYWORDS else walk(v, stack)) for k, v in node.items() if k != "$defs"}

    try:
        return walk(schema, ())
    except _Recursive:
        return schema


_IN_PLACE = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else")  # applied to the value where they stand
MAX_UNFOLDED = 10_000  # schema nodes an unfolded allOf loop may take before it is left as it is


def _in_place_refs(node: Any) -> Iterator[str]:
    """The `$defs` keys `node` applies to the value where it stands (no property or item in between)."""
    if not isinstance(node, dict):
        return
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        yield ref[8:]
    for key in _IN_PLACE:
        value = node.get(key)
        for sub in value if isinstance(value, list) else [value]:
            yield from _in_place_refs(sub)


def without_loops(schema: Any) -> Any:
    """The bundled schema with its in-place loops cut, for jsonschema (which recurses into them for ever).

    A: allOf [B] and B: allOf [A] check one value against A, B, A, ... at the same place: the second A adds
    nothing, so it becomes `true`, which is how jsonschema-rs reads it. Loops through a property or an item
    are left alone (each turn goes one level into the value, and values are finite).
    """
    defs = schema.get("$defs") if isinstance(schema, dict) else None
    if not isinstance(defs, dict):
        return schema
    graph = {key: {k for k in _in_place_refs(node) if k in defs} for key, node in defs.items()}

    def loops(start: str) -> bool:
        todo, seen = list(graph[start]), set()
        while todo:
            key = todo.pop()
            if key == start:
                return True
            if key not in seen:
                seen.add(key)
                todo.extend(graph[key])
        return False

    looping = {key for key in graph if loops(key)}
    if not looping:
        return schema
    size = 0

    def unfold(node: Any, stack: tuple[str, ...]) -> Any:
        nonlocal size
        size += 1
        if size > MAX_UNFOLDED:
            raise _Recursive
        if not isinstance(node, dict):
            return node
        out = {k: ([unfold(n, stack) for n in v] if isinstance(v, list) else unfold(v, stack)) if k in _IN_PLACE else v
               for k, v in node.items() if k != "$ref"}
        ref = node.get("$ref")
        key = ref[8:] if isinstance(ref, str) and ref.startswith("#/$defs/") else None
        if key is None or key not in looping:
            return {"$ref": ref, **out} if ref is not None else out
        inner = True if key in stack else unfold(defs[key], (*stack, key))
        return {"allOf": [inner], **out} if out else inner

    try:
        root = unfold({k: v for k, v in schema.items() if k != "$defs"}, ())
        unfolded = {k: unfold(v, (k,)) if k in looping else v for k, v in defs.items()}
    except _Recursive:
        return schema
    return {**root, "$defs": unfolded} if isinstance(root, dict) else {"allOf": [root], "$defs": unfolded}


def reached(schema: Any) -> Any:
    """The bundled schema with only the `$defs` it reaches: every bundle of a spec holds the spec's whole
    `$defs` (contract/bundle.py), which jsonschema would otherwise walk (24 ms instead of 1 ms to build)."""
    defs = schema.get("$defs") if isinstance(schema, dict) else None
    if not isinstance(defs, dict):
        return schema
    keys = _reachable(schema, defs)
    return schema if len(keys) == len(defs) else {**schema, "$defs": {key: defs[key] for key in keys}}


def _reachable(schema: dict[str, Any], defs: dict[str, Any]) -> list[str]:
    """The `$defs` keys `schema` refers to, directly or through other entries, in the order met."""
    found: dict[str, None] = {}
    todo: list[Any] = [{k: v for k, v in schema.items() if k != "$defs"}]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs and ref[8:] not in found:
                found[ref[8:]] = None
                todo.append(defs[ref[8:]])
            todo.extend(v for k, v in node.items() if k not in NOT_SCHEMAS)
        elif isinstance(node, list):
            todo.extend(node)
    return list(found)


def refs_in(node: Any) -> set[str]:
    """The `$defs` keys a bundled schema's `$ref`s name, itself and below (not following them)."""
    found: set[str] = set()
    todo = [node]
    while todo:
        node = todo.pop()
        if isinstance(node, list):
            todo += node
        elif isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                found.add(ref[8:])
            todo += [v for k, v in node.items() if k not in NOT_SCHEMAS and isinstance(v, (dict, list))]
    return found


def location_path(root: str, parts: Any) -> str:
    """`body` + [items, 0, name] -> `body.items[0].name`: one notation for every message."""
    text = root
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


@dataclass(frozen=True, slots=True)
class Violation:
    """One contract break: where (`body.id`), what, and the status it earns (400, or 401 for security)."""

    where: str
    message: str
    status: int = 400

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


LARGE = 1000  # parts (values, items, properties) of a value whose violations are all listed
MAX_VIOLATIONS = 50
CHECK_SECONDS = 0.5  # what jsonschema's regular expressions may take together, for one check


def _larger_than(value: Any, limit: int) -> bool:
    """Whether `value` has more than `limit` parts, counting no further than that."""
    todo, seen = [value], 0
    while todo:
        node = todo.pop()
        seen += 1
        if seen > limit:
            return True
        if isinstance(node, dict):
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return False


def _more(root: str) -> Violation:
    return Violation(root, f"more than {LARGE} parts: only the first violation is listed")


def compile_fast(schema: Any, formats: bool = True) -> Any:
    """jsonschema-rs's validator of `schema`; raises ValueError for a schema it refuses, EngineMismatch for a bug."""
    return _engine(schema, formats)


class _Property:
    """A schema checked as one property of a validator shared by a spec (contract/compiled.py): the value is
    checked as `{name: value}`, so the places its errors name start with `name`."""

    __slots__ = ("name", "validator")

    def __init__(self, validator: Any, name: str) -> None:
        self.validator, self.name = validator, name

    def is_valid(self, instance: Any) -> bool:
        return bool(self.validator.is_valid({self.name: instance}))

    def validate(self, instance: Any) -> None:
        self.validator.validate({self.name: instance})

    def iter_errors(self, instance: Any) -> Iterator[Any]:
        return iter(self.validator.iter_errors({self.name: instance}))


class SchemaCheck:
    """One compiled schema: jsonschema-rs decides and explains; jsonschema where jsonschema-rs is missing or
    refuses the schema.

    :param checked: the schema already passed the metaschema check (load_spec checks every schema once).
    :param formats: assert `format` (request and reply bodies do; scenario files have no formats).
    :param shared: (validator, property): `schema` is that property of a validator compiled already, with
        formats asserted (contract/compiled.py); nothing is compiled here.
    """

    def __init__(self, schema: dict | bool, where: str, *, accelerate: bool = True, checked: bool = False,
                 formats: bool = True, shared: tuple[Any, str] | None = None) -> None:
        if not checked and not meta_valid(schema):
            from jsonschema import Draft202012Validator, SchemaError

            try:
                Draft202012Validator.check_schema(schema)
            except SchemaError as exc:
                raise SpecError(f"{where}: the schema is not valid JSON Schema: {exc.message}") from None
        self.schema = schema
        self.formats = formats
        self.fast: Any = None
        self.skip = 0  # leading steps of an error's instance path that are not the value's
        if shared is not None and accelerate and formats:
            self.fast, self.skip = _Property(*shared), 1
        elif accelerate and jsonschema_rs is not None:
            try:
                self.fast = compile_fast(schema, formats)
            except ValueError:  # e.g. a regex dialect it rejects: jsonschema still works
                self.fast = None

    @cached_property
    def slow(self) -> Any:
        """jsonschema's validator, with regular expressions bounded in time (contract/fallback.py)."""
        from referencing import Registry  # empty: jsonschema would otherwise fetch a remote `$ref`

        from plantstub.contract.fallback import validator_class  # imports `regex`: only when needed

        return validator_class()(inline_refs(without_loops(reached(self.schema))), format_checker=format_checker() if self.formats else None,
                                 registry=Registry())

    def errors(self, instance: Any, root: str) -> list[Violation]:
        """The violations of `instance`, located under `root` (`body`, `query.limit`), in path order.

        Every one for a value of up to LARGE parts; for a larger one, the first only (listing all of a
        300,000-item array took seconds and megabytes), and at most MAX_VIOLATIONS in any case.
        """
        if self.fast is not None:
            try:
                if self.fast.is_valid(instance):
                    return []
                # jsonschema-rs decided, and it explains too: no Python regex runs on the failing value.
                if _larger_than(instance, LARGE):  # counted only once invalid: valid calls never pay for it
                    try:
                        self.fast.validate(instance)
                    except jsonschema_rs.ValidationError as error:
                        return [self._violation(root, error.instance_path[self.skip:], message_of(error)), _more(root)]
                found = [(e.instance_path[self.skip:], message_of(e)) for e in self.fast.iter_errors(instance)]
                return self._listed(root, found)
            except (ValueError, RecursionError):  # e.g. a non-string key: let jsonschema decide
                pass
        large = _larger_than(instance, LARGE)
        try:
            with time_budget(CHECK_SECONDS):  # every regex of this check shares one budget
                errors = islice(self.slow.iter_errors(instance), 1 if large else MAX_VIOLATIONS + 1)
                found = [(e.absolute_path, e.message) for e in errors]
            listed = self._listed(root, found)
            return [*listed, _more(root)] if large and listed else listed
        except RecursionError:
            return [Violation(root, "nested too deeply to check")]

    def _violation(self, root: str, path: Any, message: str) -> Violation:
        return Violation(location_path(root, path), _short(message))

    def _listed(self, root: str, found: list[tuple[Any, str]]) -> list[Violation]:
        """In path order (array indices as numbers), each said once (allOf branches can repeat one)."""
        found.sort(key=lambda item: [(p, "") if isinstance(p, int) else (-1, str(p)) for p in item[0]])
        unique = list(dict.fromkeys(self._violation(root, path, message) for path, message in found))
        if len(unique) > MAX_VIOLATIONS:
            return [*unique[:MAX_VIOLATIONS], Violation(root, f"more violations follow; the first {MAX_VIOLATIONS} are listed")]
        return unique

    def is_valid(self, instance: Any) -> bool:
        if self.fast is not None:
            try:
                return self.fast.is_valid(instance)
            except (ValueError, RecursionError):  # e.g. a non-string key: let jsonschema decide
                pass
        try:
            with time_budget(CHECK_SECONDS):
                return bool(self.slow.is_valid(instance))
        except RecursionError:
            return False
