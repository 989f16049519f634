"""Turn an OpenAPI schema into one self-contained JSON Schema 2020-12 document.

$refs (local, sibling files, recursive) become entries of `$defs`; schemas written in another
dialect (OpenAPI 3.0's `nullable` and boolean `exclusiveMinimum`, draft-04 to 2019-09 by
`jsonSchemaDialect` or `$schema`) are rewritten to mean the same in 2020-12 (contract/dialects.py);
`format: int32/int64` become integer bounds, so every validator enforces them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import cast, overload
from urllib.parse import unquote, urldefrag, urljoin

from plantstub._json import MAX_SHOWN, cut, shown
from plantstub._memo import IdentityMemo
from plantstub.contract import dialects
from plantstub.contract.flatten import DEFS, def_key, marked
from plantstub.contract.messages import python_message
from plantstub.contract.pattern import served_patterns
from plantstub.contract.schema import (
    NOT_SCHEMAS,
    SCHEMA_LISTS,
    SCHEMA_MAPS,
    SCHEMA_ONE,
    meta_valid,
    metaschema_validator,
    refs_in,
    subschemas,
)
from plantstub.errors import SpecError

_HOLDS_SCHEMAS = SCHEMA_MAPS | SCHEMA_ONE | SCHEMA_LISTS | {"dependencies"}
INT_BOUNDS = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}

Lookup = Callable[[str, str, str], tuple[object, str]]  # (target URI, where, $ref) -> (its contents, their URI)


@lru_cache(maxsize=65536)
def join(base: str, ref: str) -> str:
    """urljoin(), remembered: a big document writes the same few thousand `$ref`s tens of thousands of times."""
    if len(ref) > 1 and ref[0] == "#":  # a pointer into the same file, as urljoin() writes it: ten times faster
        return base.partition("#")[0] + ref
    return urljoin(base, ref)


class Bundler:
    """Bundles the schemas of one document; each $ref target is converted and checked once.

    Every target gets one `$defs` key for the whole document, and every bundle holds the same `$defs`
    mapping (all the document's targets: a bundle refers to those it needs). Nothing is copied per
    bundle, so loading takes time and memory in proportion to the document, not to the number of places
    times the size of what they refer to (a 7 MB document: 10 s before); a spec's checks compile the
    shared mapping once (contract/compiled.py). The metaschema check runs once per target.
    """

    def __init__(self, lookup: Lookup, *, legacy: bool = False, dialect: str = dialects.DRAFT2020) -> None:
        """`legacy`: an OpenAPI 3.0 document; else `dialect` is the one its `jsonSchemaDialect` names."""
        self.lookup = lookup
        self.dialect = dialects.OAS30 if legacy else dialect  # of every schema without its own `$schema`
        self.warnings: list[str] = []  # dialects read as 2020-12, patterns not checked: and why
        self.where = ""
        self.keys: dict[str, str] = {}  # absolute target URI -> key in $defs
        self.defs: dict[str, object] = {}  # key -> converted schema: the `$defs` of every bundle
        self.targets: dict[str, str] = {}  # key -> its target URI (to name it in a message)
        self.dialects: dict[str, str] = {}  # key -> the dialect its schema was read in (to name it in a refusal)
        self.fresh: list[str] = []  # keys made by the bundle being built: checked at its end
        self.whole: dict[str, dict | bool] = {}  # target of a bare {"$ref": ...} -> its bundle
        self.done: IdentityMemo[dict | bool] = IdentityMemo()  # node, base -> its bundle
        self.annotated: set[str] = set()  # `readOnly` / `writeOnly`, once any schema says it (directed())
        self.variants: dict[tuple[str, str], str | None] = {}  # (keyword, $defs key) -> its directed key, or None
        self.directed_done: IdentityMemo[dict[str, object]] = IdentityMemo()  # root, keyword -> directed()

    def bundle(self, node: object, base: str, where: str) -> dict | bool:
        """`node` as one self-contained schema; SpecError naming `where` when it cannot be."""
        self.where = where
        done = self.done.get(node, base)
        if done is not None:  # a shared parameter or response, met once per operation
            return done
        target = join(base, node["$ref"]) if isinstance(node, dict) and set(node) == {"$ref"} and isinstance(
            node["$ref"], str) else None  # a bare `$ref`'s
        if target is not None and target in self.whole:
            return self.whole[target]
        refs: set[str] = set()
        self.fresh = []
        converted = self.convert(node, base, refs)
        own = node.get("$schema") if isinstance(node, dict) else None
        _check(converted, [], where, self.dialect_named(own, "$schema") if isinstance(own, str) else self.dialect)
        root = cast("dict[str, object] | bool", converted)  # valid JSON Schema: _check() refuses anything else
        # The targets first met here; each earlier one was checked, loops and all, by the bundle that met it.
        for key in self.fresh:
            _check(self.defs[key], ["$defs", key], where, self.dialects.get(key, self.dialect))
        self.refuse_ref_loops(root, self.fresh)
        if refs:
            if isinstance(root, bool):
                root = {} if root else {"not": {}}
            root = dict(root)
            root["$defs"] = self.defs  # its own `$defs`, if any, are targets under their own keys already
        if target is not None:
            self.whole[target] = root
        self.done.put(node, root, base)
        return root

    # -- readOnly / writeOnly: one schema per direction --------------------------------------------------------
    def directed(self, root: dict | bool, direction: str) -> dict | bool:
        """`root` as a request ("request") or an answer ("response") must be: a required property marked
        `readOnly` is not required in a request, one marked `writeOnly` not in an answer (OpenAPI 3.0's words,
        kept for 3.1). Returns `root` itself when nothing changes; else a copy whose `$ref`s lead to directed
        copies of the `$defs` entries that change (added to the one shared `$defs`, under their own keys)."""
        keyword = "readOnly" if direction == "request" else "writeOnly"
        if keyword not in self.annotated or not isinstance(root, dict):
            return root
        done = self.directed_done.get(root, keyword)
        if done is not None:
            return done
        body = {k: v for k, v in root.items() if k != "$defs"}
        changed = self.settle(keyword, refs_in(body)) or _strips(body, keyword, self.defs)
        result = root
        if changed:
            result = self.rewrite(body, keyword)
            if "$defs" in root:
                result["$defs"] = self.defs
        self.directed_done.put(root, result, keyword)
        return result

    def settle(self, keyword: str, start: set[str]) -> bool:
        """Decide, for every `$defs` key reachable from `start`, whether its directed copy differs (and make it);
        True when one of `start` does."""
        unknown: list[str] = []
        todo = [k for k in start if (keyword, k) not in self.variants and k in self.defs]
        reach: dict[str, set[str]] = {}
        while todo:
            key = todo.pop()
            if key in reach:
                continue
            reach[key] = refs_in(self.defs[key])
            unknown.append(key)
            todo += [k for k in reach[key] if k not in reach and (keyword, k) not in self.variants and k in self.defs]
        changes = {k for k in unknown if _strips(self.defs[k], keyword, self.defs)}
        grew = True
        while grew:  # a key whose schema leads to one that changes changes too (its `$ref` does)
            grew = False
            for key in unknown:
                if key not in changes and any(k in changes or self.variants.get((keyword, k)) for k in reach[key]):
                    changes.add(key)
                    grew = True
        made: dict[str, str] = {}
        for key in unknown:
            self.variants[(keyword, key)] = None
            if key in changes:
                made[key] = self.new_key(f"#{key}.{'request' if keyword == 'readOnly' else 'response'}")
                self.variants[(keyword, key)] = made[key]
                self.defs[made[key]] = True  # reserved, so that no other key takes the name; filled below
                self.targets[made[key]] = self.targets.get(key, key)
        for key, variant in made.items():
            self.defs[variant] = self.rewrite(self.defs[key], keyword)
        return any(self.variants.get((keyword, k)) for k in start)

    @overload
    def rewrite(self, node: dict[str, object], keyword: str) -> dict[str, object]: ...

    @overload
    def rewrite(self, node: object, keyword: str) -> object: ...

    def rewrite(self, node: object, keyword: str) -> object:
        """A copy of `node` (a schema, not following `$ref`s) with directed `$ref`s and `required` lists."""
        if isinstance(node, list):
            return [self.rewrite(item, keyword) for item in node]
        if not isinstance(node, dict):
            return node
        out = {k: v if k in NOT_SCHEMAS else self.rewrite(v, keyword) for k, v in node.items()}
        key = def_key(out.get("$ref"))
        if key is not None:
            variant = self.variants.get((keyword, key))
            if variant:
                out["$ref"] = DEFS + variant
        dropped = _dropped(node, keyword, self.defs)
        if dropped:
            # `node`'s required is a list (_dropped() says so), and rewritten as a list of the same names
            out["required"] = [name for name in cast("list[object]", out["required"]) if name not in dropped]
        return out

    def ref(self, ref: str, base: str, refs: set[str]) -> str:
        target = join(base, ref)
        if target not in self.keys:
            key = self.new_key(target)
            self.keys[target], self.targets[key] = key, target
            self.defs[key] = True  # placeholder: a recursive schema refers to its own key
            self.fresh.append(key)
            contents, target_base = self.lookup(target, self.where, ref)
            self.dialects[key] = self.dialect_at(target)
            self.defs[key] = self.convert(contents, target_base, set(), self.dialects[key])
        refs.add(self.keys[target])
        return DEFS + self.keys[target]

    def refuse_ref_loops(self, root: object, keys: list[str]) -> None:
        """A chain of bare `$ref`s that comes back to itself describes no value at all."""
        for start in [root, *(self.defs[k] for k in keys)]:
            seen: list[str] = []
            node = start
            while isinstance(node, dict) and set(node) == {"$ref"}:
                key = node["$ref"].rsplit("/", 1)[-1]
                if key in seen:
                    chain = " -> ".join(self.source(k) for k in [*seen[seen.index(key):], key])
                    raise SpecError(f"{self.where}: $ref loop with no schema in it: {chain}")
                seen.append(key)
                node = self.defs.get(key)

    def source(self, key: str) -> str:
        """The $ref target (as a fragment or file#fragment) that became `$defs` entry `key`."""
        target = self.targets[key]
        return "#" + urldefrag(target)[1] if urldefrag(target)[1] else target.rsplit("/", 1)[-1]

    def new_key(self, target: str) -> str:
        uri, _, fragment = target.partition("#")  # as urldefrag() splits a URI joined by join(), faster
        name = unquote(fragment.rsplit("/", 1)[-1]).replace("~1", "/").replace("~0", "~") or uri.rsplit("/", 1)[-1]
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "schema"
        key, n = name, 1
        while key in self.defs:
            n += 1
            key = f"{name}_{n}"
        return key

    def dialect_at(self, target: str) -> str:
        """The dialect of the schema at absolute `target`: the nearest `$schema` on the way from its file's
        root down to it (the schema itself included), else the document's."""
        uri, _, fragment = target.partition("#")
        node, _ = self.lookup(uri, self.where, uri)
        named = None
        for step in unquote(fragment).split("/")[1:]:
            if isinstance(node, dict) and isinstance(node.get("$schema"), str):
                named = node["$schema"]
            step = step.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and step in node:
                node = node[step]
            elif isinstance(node, list) and step.isdigit() and int(step) < len(node):
                node = node[int(step)]
            else:
                break
        else:
            if isinstance(node, dict) and isinstance(node.get("$schema"), str):
                named = node["$schema"]
        return self.dialect if named is None else self.dialect_named(named, "$schema")

    def dialect_named(self, uri: str, field: str) -> str:
        """The dialect `uri` names; an unknown one reads as 2020-12 with a warning, draft-03 is refused."""
        try:
            return dialects.dialect_named(uri)
        except dialects.UnsupportedDialect as exc:
            raise SpecError(f"{self.where + ': ' if self.where else ''}{field} {shown(uri)}: {exc}") from None
        except dialects.UnknownDialect:
            warning = (f"{field} {shown(uri)}{f' ({self.where})' if self.where else ''} is not a JSON Schema"
                       f" dialect plantstub knows ({dialects.SUPPORTED}): its schemas are read as 2020-12")
            if not any(w.startswith(f"{field} {shown(uri)} ") for w in self.warnings):
                self.warnings.append(warning)
            return dialects.DRAFT2020

    @overload
    def convert(self, node: dict[str, object], base: str, refs: set[str],
                dialect: str | None = None) -> dict[str, object]: ...

    @overload
    def convert(self, node: object, base: str, refs: set[str], dialect: str | None = None) -> object: ...

    def convert(self, node: object, base: str, refs: set[str], dialect: str | None = None) -> object:
        """`node` in 2020-12 terms; the `$defs` keys it refers to are added to `refs`.

        `dialect`: the one `node` is written in (the document's when None), unless its own `$schema` says.
        """
        if not isinstance(node, dict):
            return node
        if dialect is None:
            dialect = self.dialect
        if isinstance(node.get("$schema"), str):
            dialect = self.dialect_named(node["$schema"], "$schema")
        if "$ref" in node and isinstance(node["$ref"], str):
            pointer = self.ref(node["$ref"], base, refs)
            if dialects.ref_siblings_ignored(dialect) or len(node) == 1:
                return {"$ref": pointer}  # OpenAPI 3.0 and draft-07 and older ignore a $ref's siblings
            rest = self.convert({k: v for k, v in node.items() if k != "$ref"}, base, refs, dialect)
            return {"$ref": pointer, **rest}
        out: dict[str, object] = {}
        old: dict[str, object] = {}  # subschemas whose keyword changes name once the schema is read
        for key, value in node.items():
            if key not in _HOLDS_SCHEMAS:  # most keywords: a value, kept as it is
                out[key] = value
            elif key == "items" and isinstance(value, list):  # the tuple form before 2020-12
                out["prefixItems"] = [self.convert(sub, base, refs, dialect) for sub in value]
            elif key == "additionalItems":
                old[key] = self.convert(value, base, refs, dialect)
            elif key == "dependencies" and isinstance(value, dict):  # a list of names, or a schema, per name
                out[key] = {name: sub if isinstance(sub, list) else self.convert(sub, base, refs, dialect)
                            for name, sub in value.items()}
            elif key in SCHEMA_MAPS and isinstance(value, dict):
                out[key] = {name: self.convert(sub, base, refs, dialect) for name, sub in value.items()}
            elif key in SCHEMA_ONE:
                out[key] = self.convert(value, base, refs, dialect)
            elif key in SCHEMA_LISTS and isinstance(value, list):
                out[key] = [self.convert(sub, base, refs, dialect) for sub in value]
            else:
                out[key] = value
        dialects.tuple_items(out, old)
        kind = out.get("type", "")
        if kind is None or (isinstance(kind, list) and None in kind):
            # YAML reads a bare `null` as no value; in a type it can only mean the "null" type.
            out["type"] = "null" if kind is None else ["null" if k is None else k for k in kind]
        out = dialects.to_2020_12(out, dialect)
        for keyword in ANNOTATIONS:
            if out.get(keyword) is True:
                self.annotated.add(keyword)
        served_patterns(out, self.where, self.warnings)  # ECMA forms rewritten; what jsonschema-rs cannot run set aside
        bounds = INT_BOUNDS.get(named) if isinstance(named := out.get("format"), str) else None
        if bounds:
            low, high = bounds
            if not isinstance(least := out.get("minimum"), (int, float)) or least < low:
                out["minimum"] = low
            if not isinstance(most := out.get("maximum"), (int, float)) or most > high:
                out["maximum"] = high
        return out


ANNOTATIONS = ("readOnly", "writeOnly")


def _dropped(node: dict[str, object], keyword: str, defs: dict[str, object]) -> set[str]:
    """The names of `node`'s own `required` whose property is marked `keyword`."""
    required, props = node.get("required"), node.get("properties")
    if not isinstance(required, list) or not isinstance(props, dict):
        return set()
    return {name for name in required if isinstance(name, str) and marked(props.get(name), keyword, defs)}


def _strips(node: object, keyword: str, defs: dict[str, object]) -> bool:
    """Does a schema (not following `$ref`s) require a property marked `keyword` anywhere in it?"""
    todo = [node]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if _dropped(node, keyword, defs):
                return True
            todo.extend(subschemas(node))
    return False


def _check(schema: object, at: list[str], where: str, dialect: str) -> None:
    """Refuse what is not valid JSON Schema, naming the keyword's place (`$defs.Plant.properties.id.type`) and the
    dialect the schema was read in (an OpenAPI 3.0 document's, a `jsonSchemaDialect`, its own `$schema`).

    A `pattern` plantstub cannot run is refused too (the metaschema's formats are asserted; contract/pattern.py).
    """
    if meta_valid(schema):
        return
    from jsonschema.exceptions import best_match

    error = best_match(metaschema_validator().iter_errors(schema))
    if error is None:
        return
    inside = cut(".".join([*at, *(str(part) for part in error.absolute_path)]), 3 * MAX_SHOWN)
    message = python_message(error)
    if error.validator == "format" and error.validator_value == "regex":
        message = f"{shown(error.instance)} is not a regular expression jsonschema-rs can run (ECMA-262, as JSON Schema writes them)"
    named = "OpenAPI 3.0's schema dialect" if dialect == dialects.OAS30 else f"JSON Schema {dialect}"
    read = f"read as {named}" + ("" if dialect == dialects.DRAFT2020 else ", rewritten to 2020-12")
    raise SpecError(f"{where}: not valid JSON Schema ({read}){f' at {inside}' if inside else ''}: {message}")
