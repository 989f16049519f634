"""One compiled JSON Schema, checked by jsonschema-rs: a fast yes/no, and plantstub's messages from its errors.

jsonschema-rs checks every request, reply and webhook body, and checks schemas against the 2020-12
metaschema; python jsonschema is imported only to say why a schema is refused (contract/bundle.py) and
what is wrong in a scenario file (scenarios/load.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

import jsonschema_rs

from plantstub._fields import ByFields
from plantstub.contract.flatten import def_key
from plantstub.contract.messages import message_of
from plantstub.contract.pattern import pattern_options, servable
from plantstub.errors import SpecError

MAX_MESSAGE = 240

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
_IN_VALUE = SCHEMA_ONE - {"additionalItems"}  # 2019-09's keyword: not a 2020-12 subschema


def _subresources(schema: dict[str, object] | bool) -> Iterator[object]:
    """The subschemas right below a 2020-12 schema, as `referencing`'s DRAFT202012.subresources_of finds them
    (the same keywords, the same errors on a malformed value); not imported from it: `referencing` and `attrs`
    add tens of milliseconds to every start."""
    if isinstance(schema, bool):
        return
    for each in _IN_VALUE:
        if each in schema:
            yield schema[each]
    for each in SCHEMA_LISTS:
        if each in schema:
            yield from cast("list[object]", schema[each])  # a valid schema's; anything else raises as referencing does
    for each in SCHEMA_MAPS:
        if each in schema:
            yield from cast("dict[str, object]", schema[each]).values()


def subschemas(schema: dict[str, object]) -> Iterable[object]:
    """The subschemas right below a bundled (2020-12) schema, as `referencing` finds them, but for its `$defs`:
    a bundle's root holds the whole document's, which a walk looks at apart, by key."""
    return _subresources({k: v for k, v in schema.items() if k != "$defs"} if "$defs" in schema else schema)


# -- the metaschema -------------------------------------------------------------------------
def _patterns(schema: object) -> Iterator[str]:
    """Every regular expression in `schema`: `pattern` values and `patternProperties` keys."""
    if not isinstance(schema, dict):
        return
    if isinstance(schema.get("pattern"), str):
        yield schema["pattern"]
    if isinstance(schema.get("patternProperties"), dict):
        yield from schema["patternProperties"]
    for sub in _subresources(schema):  # `$defs` included: every schema of it is checked
        yield from _patterns(sub)


class EngineMismatch(RuntimeError):
    """The installed jsonschema-rs does not take plantstub's call: a bug in plantstub (or its declared floor),
    never in the spec, so not a SpecError and not caught as a document's odd shape."""


def _engine(schema: dict[str, object] | bool, formats: bool | None = None) -> jsonschema_rs.Validator:
    """jsonschema-rs's validator, offline (no URL is ever fetched); `formats` None keeps its defaults.

    jsonschema-rs refuses a schema with ValueError; a TypeError or AttributeError is plantstub's call.
    """
    try:
        if formats is None:
            return jsonschema_rs.Draft202012Validator(schema, offline=True)
        return jsonschema_rs.Draft202012Validator(
            schema, validate_formats=formats, offline=True,
            pattern_options=pattern_options(),  # backtracking bounded (contract/pattern.py)
        )
    except (TypeError, AttributeError) as exc:
        from importlib.metadata import version  # only to say which release: a start without it

        raise EngineMismatch(f"plantstub internal error (a bug in plantstub, not in the spec): jsonschema-rs"
                             f" {version('jsonschema-rs')} does not take plantstub's call ({type(exc).__name__}:"
                             f" {exc})") from exc


@cache
def _fast_metaschema() -> jsonschema_rs.Validator:
    """jsonschema-rs's check against the 2020-12 metaschema, offline. Its `meta.is_valid` reads a
    schema's `$schema` to choose a dialect and fetches one it does not know: never here."""
    return _engine({"$ref": "https://json-schema.org/draft/2020-12/schema"})


def meta_valid(schema: object) -> bool:
    """Fast: is `schema` valid 2020-12 JSON Schema whose patterns plantstub serves? False: ask jsonschema why."""
    try:
        if not _fast_metaschema().is_valid(schema):
            return False
        return all(servable(pattern) for pattern in _patterns(schema))
    except (ValueError, RecursionError):
        return False


@cache
def metaschema_validator() -> Any:  # python jsonschema's validator (it ships no types mypy reads here)
    """jsonschema's 2020-12 metaschema validator with its formats asserted (built on first use); a `regex` is
    what jsonschema-rs compiles (contract/pattern.py), not what Python's `re` reads."""
    import jsonschema

    meta = jsonschema.Draft202012Validator
    checker = jsonschema.FormatChecker(())
    checker.checkers = {**meta.FORMAT_CHECKER.checkers}
    checker.checks("regex")(lambda value: not isinstance(value, str) or servable(value))
    return meta(meta.META_SCHEMA, format_checker=checker)


# -- one schema -----------------------------------------------------------------------------
def _short(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def refs_in(node: object) -> set[str]:
    """The `$defs` keys a bundled schema's `$ref`s name, itself and below (not following them)."""
    found: set[str] = set()
    todo: list[object] = [node]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            key = def_key(node.get("$ref"))
            if key is not None:
                found.add(key)
            todo.extend(subschemas(node))
    return found


def location_path(root: str, parts: Iterable[object]) -> str:
    """`body` + [items, 0, name] -> `body.items[0].name`: one notation for every message."""
    text = root
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class Violation(ByFields):
    """One contract break: where (`body.id`), what, and the status it earns (400, or 401 for security)."""

    where: str
    message: str
    status: int = 400

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


LARGE = 1000  # parts (values, items, properties) of a value whose violations are all listed
MAX_VIOLATIONS = 50


def _larger_than(value: object, limit: int) -> bool:
    """Whether `value` has more than `limit` parts, counting no further than that."""
    todo: list[object] = [value]
    seen = 0
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


def compile_fast(schema: dict[str, object] | bool, formats: bool = True) -> jsonschema_rs.Validator:
    """jsonschema-rs's validator of `schema`; raises ValueError for a schema it refuses, EngineMismatch for a bug."""
    return _engine(schema, formats)


class _Property:
    """A schema checked as one property of a validator shared by a spec (contract/compiled.py): the value is
    checked as `{name: value}`, so the places its errors name start with `name`."""

    __slots__ = ("name", "validator")

    def __init__(self, validator: jsonschema_rs.Validator, name: str) -> None:
        self.validator, self.name = validator, name

    def is_valid(self, instance: object) -> bool:
        return bool(self.validator.is_valid({self.name: instance}))

    def validate(self, instance: object) -> None:
        self.validator.validate({self.name: instance})

    def iter_errors(self, instance: object) -> Iterator[jsonschema_rs.ValidationError]:
        return iter(self.validator.iter_errors({self.name: instance}))


class SchemaCheck:
    """One compiled schema: jsonschema-rs decides, and its errors are written in plantstub's words (messages.py).

    :param checked: the schema already passed the metaschema check (load_spec checks every schema once).
    :param formats: assert `format` (request and reply bodies do; scenario files have no formats).
    :param shared: (validator, property): `schema` is that property of a validator compiled already, with
        formats asserted (contract/compiled.py); nothing is compiled here.
    """

    def __init__(self, schema: dict | bool, where: str, *, checked: bool = False, formats: bool = True,
                 shared: tuple[jsonschema_rs.Validator, str] | None = None) -> None:
        if not checked and not meta_valid(schema):
            from jsonschema import Draft202012Validator, SchemaError

            try:
                Draft202012Validator.check_schema(schema)
            except SchemaError as exc:
                raise SpecError(f"{where}: the schema is not valid JSON Schema: {exc.message}") from None
        self.schema = schema
        self.formats = formats
        self.fast: jsonschema_rs.Validator | _Property
        self.skip = 0  # leading steps of an error's instance path that are not the value's
        if shared is not None and formats:
            self.fast, self.skip = _Property(*shared), 1
            return
        try:
            self.fast = compile_fast(schema, formats)
        except ValueError:  # load_spec refuses (or sets aside) what it would refuse: not reached
            raise SpecError(f"{where}: jsonschema-rs cannot compile the schema; check its patterns") from None

    def errors(self, instance: object, root: str, small: bool = False) -> list[Violation]:
        """The violations of `instance`, located under `root` (`body`, `query.limit`), in path order.

        Every one for a value of up to LARGE parts; for a larger one, the first only (listing all of a
        300,000-item array took seconds and megabytes), and at most MAX_VIOLATIONS in any case. `small`: the value
        is known to have at most LARGE parts (read from at most LARGE bytes: each part takes one at least).
        """
        try:
            if self.fast.is_valid(instance):
                return []
            if not small and _larger_than(instance, LARGE):  # counted only once invalid: valid calls never pay for it
                try:  # iter_errors() makes every error before the first is read: seconds for 300,000 of them
                    self.fast.validate(instance)
                except jsonschema_rs.ValidationError as error:
                    return [self._violation(root, error.instance_path[self.skip:], message_of(error)), _more(root)]
            found = [(e.instance_path[self.skip:], message_of(e)) for e in self.fast.iter_errors(instance)]
        except RecursionError:
            return [Violation(root, "nested too deeply to check")]
        except ValueError:  # a lone surrogate, or not what JSON or a form gives (a key that is not a string)
            readable = _readable(instance)
            if readable is None:  # nothing to check it as
                return [Violation(root, "not a JSON value: cannot be checked")]
            return self.errors(readable, root, small)
        return self._listed(root, found)

    def _violation(self, root: str, path: Iterable[object], message: str) -> Violation:
        return Violation(location_path(root, path), _short(message))

    def _listed(self, root: str, found: list[tuple[list[str | int], str]]) -> list[Violation]:
        """In path order (array indices as numbers), each said once (allOf branches can repeat one)."""
        if len(found) == 1:  # the usual refusal: nothing to order
            return [self._violation(root, *found[0])]
        found.sort(key=lambda item: [(p, "") if isinstance(p, int) else (-1, str(p)) for p in item[0]])
        unique = list(dict.fromkeys(self._violation(root, path, message) for path, message in found))
        if len(unique) > MAX_VIOLATIONS:
            return [*unique[:MAX_VIOLATIONS], Violation(root, f"more violations follow; the first {MAX_VIOLATIONS} are listed")]
        return unique

    def is_valid(self, instance: object) -> bool:
        try:
            return bool(self.fast.is_valid(instance))
        except RecursionError:
            return False
        except ValueError:
            readable = _readable(instance)
            return readable is not None and self.is_valid(readable)


_SURROGATE = re.compile(r"[\ud800-\udfff]")  # a raw string: no module holds a constant UTF-8 cannot encode


def _readable(value: object) -> object | None:
    """`value` with each lone surrogate (JSON allows a `\\ud800` escape alone; jsonschema-rs cannot read it) as U+FFFD,
    in keys too, so that it is checked as the text it stands in (one character for one); None when it holds none
    (or nests too deeply to copy)."""
    replaced = 0

    def fix(item: object) -> object:
        nonlocal replaced
        if isinstance(item, str):
            if item.isascii():
                return item
            text, count = _SURROGATE.subn("\ufffd", item)
            replaced += count
            return text
        if isinstance(item, dict):
            return {fix(key): fix(inner) for key, inner in item.items()}
        if isinstance(item, list):
            return [fix(inner) for inner in item]
        return item

    try:
        fixed = fix(value)
    except RecursionError:
        return None
    return fixed if replaced else None
