"""One jsonschema-rs validator over a spec's `$defs` and its places, each place one property of it.

jsonschema-rs compiles every `$ref` target a schema reaches, and two validators share nothing: compiled one
by one, the places of a big spec compiled their components again each time (Stripe: 1,700 places, 12 s and
1.9 GB). Here every target is compiled once, in about the time the document takes to read, and a value is
checked against a place as that property of a one-key object: `{"12": value}`.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from plantstub._memo import IdentityMemo
from plantstub.contract.pattern import servable
from plantstub.contract.schema import SCHEMA_LISTS, SCHEMA_MAPS, SCHEMA_ONE, compile_fast, jsonschema_rs, subschemas

# Keywords whose meaning depends on where the schema stands (its resource, the dynamic scope): a place that
# holds one is compiled alone, where it always was.
_PLACE_BOUND = frozenset(("$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveRef", "$recursiveAnchor", "$id"))
_MAPS = frozenset(SCHEMA_MAPS) - {"$defs"}  # a schema's own `$defs` are targets under their own keys already
_ONE, _LISTS = frozenset(SCHEMA_ONE), frozenset(SCHEMA_LISTS)
_PLAIN = re.compile(r"[A-Za-z0-9_.$@:-]*\Z")  # a pointer step that needs no escaping
_TOKENS: dict[str, str] = {}


def _token(step: object) -> str:
    """One step of a JSON pointer in a URI fragment (`~` and `/` escaped, then percent-encoded)."""
    text = str(step)
    token = _TOKENS.get(text)
    if token is None:
        token = text if _PLAIN.match(text) else quote(text.replace("~", "~0").replace("/", "~1"), safe="")
        if len(_TOKENS) < 100_000:
            _TOKENS[text] = token
    return token


class Shared:
    """The shared validator of the places `roots` (bundled schemas holding one `$defs` mapping), compiled on
    first use. `names` maps each schema it checks (by identity) to its property: the places, the
    `$defs` entries, and every subschema of them with a `$ref` in it (as a JSON pointer into the document:
    jsonschema-rs compiled it once already). A subschema with no `$ref` in it compiles alone in microseconds.

    Left out, to be compiled alone as before: what jsonschema-rs cannot compile (a pattern it refuses), what
    means something else away from its own document (a dynamic reference), and whatever reaches either.
    """

    def __init__(self, roots: list[object]) -> None:
        self.roots = list({id(r): r for r in roots if isinstance(r, dict)}.values())  # each once, in order
        self.names: IdentityMemo[str] = IdentityMemo()
        # The schemas holding or reaching a pattern jsonschema-rs refuses: jsonschema checks them at once
        # (compiling one takes jsonschema-rs 0.1 s to refuse, each time: `^.{0,262144}$`).
        self.hopeless: IdentityMemo[bool] = IdentityMemo()
        self.validator: jsonschema_rs.Validator | None = None
        self.built = False

    def name(self, schema: object) -> str | None:
        """The property that checks `schema` (that very object), or None when it is not shared."""
        if not self.built:
            self.build()
        return self.names.get(schema)

    def compiles(self, schema: object) -> bool:
        """False when jsonschema-rs is known to refuse `schema` (a pattern it cannot run, held or reached)."""
        if not self.built:
            self.build()
        return schema not in self.hopeless

    def build(self) -> None:
        """Compile the shared validator; when jsonschema-rs refuses it, nothing is shared."""
        self.built = True
        defs = next((r["$defs"] for r in self.roots if isinstance(r.get("$defs"), dict)), None)
        if jsonschema_rs is None or defs is None:
            return
        roots = [r for r in self.roots if r.get("$defs") is defs]
        walks = {key: _Walk(node, f"#/$defs/{_token(key)}") for key, node in defs.items()}
        refused, hopeless = _refused(walks), _refused(walks, "hopeless")
        for key in hopeless:
            _mark(defs[key], hopeless, self.hopeless)
        properties: dict[str, object] = {}
        names: IdentityMemo[str] = IdentityMemo()
        by_key: dict[str, str] = {}  # `$defs` key -> the property checking it

        def add(node: object, entry: object) -> str:
            name = str(len(properties))
            properties[name] = entry
            names.put(node, name)
            return name

        for key, node in defs.items():
            if key not in refused:
                by_key[key] = add(node, {"$ref": walks[key].pointer})
        fit = [walks[key] for key in defs if key not in refused]
        for root in roots:
            body = {k: v for k, v in root.items() if k != "$defs"}
            walk = _Walk(body, f"#/properties/{len(properties)}")
            if not walk.unfit and not walk.refs() & refused:
                add(root, body)
                fit.append(walk)
            elif walk.hopeless or walk.refs() & hopeless:
                _mark(root, hopeless, self.hopeless)
        for walk in fit:
            for sub, pointer in walk.found:
                ref = sub.get("$ref")
                if len(sub) == 1 and isinstance(ref, str) and ref[8:] in by_key:
                    names.put(sub, by_key[ref[8:]])  # a bare `$ref`: checked as its target
                elif sub not in names:
                    add(sub, {"$ref": pointer})
        try:
            self.validator = compile_fast({"$defs": defs, "properties": properties})
        except ValueError:  # whatever jsonschema-rs refuses: each schema is then compiled alone
            return
        self.names = names


class _Walk:
    """One pass over a schema: its subschemas with a `$ref` in them (with their JSON pointers), and whether it
    holds anything the shared validator must not (`unfit`)."""

    def __init__(self, node: object, pointer: str) -> None:
        self.node, self.pointer = node, pointer
        self.found: list[tuple[dict[str, object], str]] = []
        self.unfit = False
        self.hopeless = False  # it holds a pattern jsonschema-rs refuses: no validator of it can be compiled
        if isinstance(node, dict):
            self._visit(node, pointer)

    def _visit(self, node: dict[str, object], at: str) -> bool:
        has = "$ref" in node
        if ("pattern" in node or "patternProperties" in node) and not _patterns_run(node):
            self.unfit = self.hopeless = True
        elif not _PLACE_BOUND.isdisjoint(node):
            self.unfit = True
        for key, value in node.items():
            if key in _ONE:
                if isinstance(value, dict) and self._visit(value, here := f"{at}/{key}"):
                    has = True
                    self.found.append((value, here))
            elif key in _MAPS and isinstance(value, dict):
                for name, sub in value.items():
                    if isinstance(sub, dict) and self._visit(sub, here := f"{at}/{key}/{_token(name)}"):
                        has = True
                        self.found.append((sub, here))
            elif key in _LISTS and isinstance(value, list):
                for i, sub in enumerate(value):
                    if isinstance(sub, dict) and self._visit(sub, here := f"{at}/{key}/{i}"):
                        has = True
                        self.found.append((sub, here))
        return has

    def refs(self) -> set[str]:
        """The `$defs` keys it refers to, itself and below."""
        nodes = [sub for sub, _ in self.found]
        if isinstance(self.node, dict):
            nodes.append(self.node)
        return {ref[8:] for sub in nodes if isinstance(ref := sub.get("$ref"), str)}


def _refused(walks: dict[str, _Walk], attribute: str = "unfit") -> set[str]:
    """The `$defs` keys whose schema is unfit (or hopeless), or reaches one that is through `$ref`s."""
    unfit = {key for key, walk in walks.items() if getattr(walk, attribute)}
    if not unfit:
        return set()
    users: dict[str, set[str]] = {}
    for key, walk in walks.items():
        for target in walk.refs():
            users.setdefault(target, set()).add(key)
    refused, todo = set(unfit), list(unfit)
    while todo:
        for user in users.get(todo.pop(), ()):
            if user not in refused:
                refused.add(user)
                todo.append(user)
    return refused


def _mark(node: object, hopeless: set[str], into: IdentityMemo[bool]) -> bool:
    """Put in `into` every schema in `node` (itself included) that holds or reaches a pattern jsonschema-rs
    refuses (reaching: a `$ref` to a `hopeless` key); whether `node` does."""
    if not isinstance(node, dict):
        return False
    ref = node.get("$ref")
    bad = (isinstance(ref, str) and ref[8:] in hopeless) or (
        ("pattern" in node or "patternProperties" in node) and not _patterns_run(node))
    for sub in subschemas(node):
        bad = _mark(sub, hopeless, into) or bad
    if bad:
        into.put(node, True)
    return bad


def _patterns_run(node: dict[str, object]) -> bool:
    """Whether jsonschema-rs compiles the node's `pattern` and `patternProperties`."""
    patterns = [pattern] if isinstance(pattern := node.get("pattern"), str) else []
    if isinstance(named := node.get("patternProperties"), dict):
        patterns += [str(p) for p in named]
    return all(_runs(pattern) for pattern in patterns)


def _runs(pattern: str) -> bool:
    return servable(pattern)  # load_spec asked already (contract/pattern.py): remembered there
