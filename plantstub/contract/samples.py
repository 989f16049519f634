"""Make a small value that satisfies a bundled schema: the body of a default answer.

Each candidate (const, enum, examples, default, then values built from the type) is checked with the
checks requests get (contract/compiled.py), so a spec example that breaks its own schema is passed over,
not served. A oneOf whose candidates match several branches gets a property another branch refuses; a
schema met again inside itself is left out where a choice allows (REENTRIES), else the value is cut there
and `generate` says so: no finite value satisfies a schema whose required property holds it again.
"""

from __future__ import annotations

from typing import Any

from plantstub.contract.compiled import Checks
from plantstub.contract.flatten import defs_of, is_number, marked, public, resolve, types_of
from plantstub.contract.oneof_samples import Apart
from plantstub.contract.pattern import matching_strings
from plantstub.contract.sample_values import NONE, Later, kind_of, made, number, numbers, of, strings, variants

MAX_DEPTH = 12
REENTRIES = 2  # a schema may hold itself this often in one value; past that a choice leaves it out


class Sampled:
    """A generated value, and why it breaks its schema when it does (`problem` None: it satisfies it).

    `certain`: no value at all satisfies the schema (not only none that plantstub can make).
    """

    def __init__(self, value: Any, problem: str | None = None, certain: bool = False) -> None:
        self.value = value
        self.problem = problem
        self.certain = certain


def sample(schema: Any, defs: dict[str, Any] | None = None, depth: int = 0, checks: Checks | None = None) -> Any:
    """A small value that satisfies `schema` (a bundled schema; `defs` are its `$defs`) when plantstub finds one."""
    if defs is None:
        defs = defs_of(schema)
    value = _Sampler(defs, checks).value(schema, depth, ())
    return None if value is NONE else value


def generate(schema: Any, checks: Checks | None = None) -> Sampled:
    """sample(), checked: the value, or why it breaks the schema (a required property holding its own schema)."""
    sampler = _Sampler(defs_of(schema), checks)
    value = sampler.value(schema, 0, ())
    value = None if value is NONE else value
    if sampler.valid(value, schema):
        return Sampled(value)
    if sampler.cuts:
        return Sampled(value, f"a required property holds its own schema again ({sampler.cuts[0]})", certain=True)
    if sampler.deep:
        return Sampled(value, f"it nests required values more than {MAX_DEPTH} levels deep ({sampler.deep[0]})")
    found = sampler.checks.check(schema).errors(value, "body") if isinstance(schema, dict) else []
    if sampler.clashes:
        return Sampled(value, f"its `type` is one no oneOf/anyOf branch beside it allows ({sampler.clashes[0]})",
                       certain=True)
    if sampler.beside:
        return Sampled(value, f"`additionalProperties: false` beside an `allOf` refuses {sampler.beside[0]}, a required"
                              " property that only the allOf declares (additionalProperties sees the properties beside"
                              " it, not those of the allOf; unevaluatedProperties: false sees both)", certain=True)
    if sampler.forbidden:
        return Sampled(value, f"a required property is one its object forbids ({sampler.forbidden[0]}: not among"
                              " its properties, and additionalProperties is false)")
    if sampler.twins:
        return Sampled(value, f"oneOf branches {sampler.twins[0]} are the same schema, so every value matches both"
                              " (a discriminator does not choose a oneOf branch in JSON Schema)")
    closest = f"; the closest value it makes breaks it at {found[0]}" if found else ""
    return Sampled(value, f"its parts may contradict each other, or hold alternatives plantstub cannot tell apart{closest}")


class _Sampler:
    def __init__(self, defs: dict[str, Any], checks: Checks | None) -> None:
        self.defs = defs
        self.checks = checks if checks is not None else Checks()
        self.cuts: list[str] = []  # required places left empty: they hold their own schema again (`Node.child -> Node`)
        self.refused = ""  # the schema the last refused candidates() would have entered again
        self.at: list[str] = []  # the place being made (`Node.kids`), to name a cut inside an unnamed array
        self.deep: list[str] = []  # required places left empty because they lie MAX_DEPTH levels down
        self.twins: list[str] = []  # a oneOf whose every branch another repeats (oneof_samples.py)
        self.forbidden: list[str] = []  # required properties their object's `additionalProperties: false` forbids
        self.clashes: list[str] = []  # required places whose `type` no oneOf/anyOf branch allows (Okta's attribute_value)
        self.beside: list[str] = []  # required properties only an allOf declares, beside `additionalProperties: false`
        self.loose = 0  # how many places on the way here a valid value may leave out (optional, one branch of several)

    def valid(self, value: Any, schema: Any) -> bool:
        return self.checks.valid(value, schema, self.defs)

    def flat(self, schema: Any) -> Any:
        return self.checks.flatten(schema, self.defs)[0]

    def value(self, schema: Any, depth: int, path: tuple[str, ...]) -> Any:
        """The first candidate that validates; else one that a oneOf spoiler fixes; else the first built one.

        `path`: the `$defs` keys entered on the way here, a key once per time (REENTRIES bounds them).
        """
        flat, given, built = self.candidates(schema, depth, path)
        for candidate in given + built:
            candidate = made(candidate)
            if self.valid(candidate, schema):
                return candidate
        fixed = Apart(self).spoiled(schema, flat, [made(c) for c in given + built])
        if fixed is not NONE:
            return fixed
        return made(built[0]) if built else given[0] if given else NONE

    def candidates(self, schema: Any, depth: int, path: tuple[str, ...]) -> tuple[Any, list[Any], list[Any]]:
        """(the flattened schema, values the spec gives: const, enum, examples, default; values built from it)."""
        flat, keys = self.checks.flatten(schema, self.defs)
        again = [k for k in sorted(keys) if path.count(k) >= REENTRIES]
        if again:
            self.refused = again[0]
            return flat, [], []
        path = (*path, *sorted(keys))
        if flat is False or depth > 2 * MAX_DEPTH:
            return flat, [], [None]
        if not isinstance(flat, dict):
            return flat, [], [{}]
        if flat.get("additionalProperties") is False and not self.loose:
            self.closed_beside_all_of(schema, flat)
        given = [flat["const"]] if "const" in flat else []
        given += flat["enum"] if isinstance(flat.get("enum"), list) else []
        given += flat["examples"] if isinstance(flat.get("examples"), list) else []
        given += [flat[key] for key in ("example", "default") if key in flat]
        if given and self.checks.marks_inside(schema, self.defs, "writeOnly"):
            # The spec's own values are answers too: their `writeOnly` members (a password) are never sent.
            given = [public(v, schema, self.defs) if isinstance(v, (dict, list)) else v for v in given]
        for key in ("oneOf", "anyOf"):
            if isinstance(flat.get(key), list) and flat[key]:
                alone = all(k in ("oneOf", "anyOf") for k in flat)
                if not self.loose and "type" in flat:
                    self.clash(flat["type"], key, flat[key])
                built: list[Any] = []
                self.loose += 1
                for branch in sorted(flat[key], key=lambda b: kind_of(self.flat(b)) == "null"):  # null last
                    if alone:
                        _, more, made = self.candidates(branch, depth + 1, path)
                    else:  # merged with its siblings, the branch's own keys still count
                        entered = sorted(self.checks.flatten(branch, self.defs)[1])
                        if any(path.count(k) >= REENTRIES for k in entered):
                            continue
                        _, more, made = self.candidates(self.checks.merge(flat, branch, self.defs), depth + 1,
                                                        (*path, *entered))
                    built += more + made
                self.loose -= 1
                return flat, given, built
        return flat, given, self.build(flat, depth, path, sorted(keys))

    def closed_beside_all_of(self, schema: Any, flat: dict[str, Any]) -> None:
        """Note the required properties that only an `allOf` declares beside `additionalProperties: false` (which
        sees only the properties beside it): no object satisfies such a schema."""
        node = resolve(schema, self.defs)
        if not isinstance(node, dict) or node.get("additionalProperties") is not False or "allOf" not in node:
            return
        own: dict[str, Any] = of(node, "properties", dict, {})
        if node.get("patternProperties"):
            return  # a name a pattern takes is not additional: left to the check
        where = self.at[-1] if self.at else "body"
        self.beside += [f"{where}.{name}" for name in of(flat, "required", list, [])
                        if isinstance(name, str) and name not in own]

    def clash(self, kind: Any, key: str, branches: list[Any]) -> None:
        """Note a required place whose `type` none of its `key` branches allows: no value satisfies it."""
        own = {kind} if isinstance(kind, str) else {k for k in kind if isinstance(k, str)} if isinstance(kind, list) else set()
        kinds = [types_of(branch, self.defs) for branch in branches]
        if not own or any(k is None for k in kinds):
            return
        numbers = {"integer", "number"}
        if any(k & own or (k & numbers and own & numbers) for k in kinds if k is not None):
            return
        theirs = sorted({t for k in kinds if k is not None for t in k})
        self.clashes.append(f"{self.at[-1] if self.at else 'body'}: type {', '.join(sorted(own))}, its {key} branches"
                            f" {', '.join(theirs)}")

    def build(self, schema: dict[str, Any], depth: int, path: tuple[str, ...], own: list[str]) -> list[Any]:
        kinds = schema.get("type")
        if isinstance(kinds, list) and len(kinds) > 1:  # candidates of each type, null last
            ordered = [k for k in kinds if isinstance(k, str) and k != "null"] + (["null"] if "null" in kinds else [])
            return [c for kind in ordered for c in self.build_one({**schema, "type": kind}, depth, path, own)]
        return self.build_one(schema, depth, path, own)

    def build_one(self, schema: dict[str, Any], depth: int, path: tuple[str, ...], own: list[str]) -> list[Any]:
        kind = kind_of(schema)
        if kind == "object":
            return self.objects(schema, depth, path, own)
        if kind == "array":
            return [self.array(schema, depth, path, own)]
        if kind in ("integer", "number"):
            return numbers(schema, kind)
        if kind == "boolean":
            return [True, False]
        if kind == "null":
            return [None]
        return strings(schema)

    def required(self, schema: Any, depth: int, path: tuple[str, ...], place: str) -> Any:
        """A value the parent cannot leave out; None (and a cut) when it would hold its own schema again."""
        self.refused = ""
        self.loose -= 1  # a place its parent cannot leave out
        try:
            value = self.optional(schema, depth, path, place)
        finally:
            self.loose += 1
        if value is NONE:
            (self.cuts if self.refused else self.deep).append(f"{place} -> {self.refused}" if self.refused else place)
            return None
        return value

    def optional(self, schema: Any, depth: int, path: tuple[str, ...], place: str) -> Any:
        if depth >= MAX_DEPTH:
            return NONE
        self.at.append(place)
        self.loose += 1
        try:
            return self.value(schema, depth, path)
        finally:
            self.at.pop()
            self.loose -= 1

    def owner(self, own: list[str], array: bool) -> str:
        """How a cut names the value being made: its schema's name, or where it is (an array: where first)."""
        names = [self.at[-1]] if self.at else []
        names = [*names, *own[-1:]] if array else [*own[-1:], *names]
        return names[0] if names else "body"

    def objects(self, schema: dict[str, Any], depth: int, path: tuple[str, ...], own: list[str]) -> list[Any]:
        """The smallest object, then one with every declared property (it tells oneOf branches apart)."""
        props: dict[str, Any] = of(schema, "properties", dict, {})
        extra = schema.get("additionalProperties", True)
        value: dict[str, Any] = {}
        required: list[Any] = of(schema, "required", list, [])
        wanted = [n for n in required if isinstance(n, str)]
        least = int(number(schema, "minProperties") or 0)
        wanted += [n for n in props if n not in wanted][: max(0, least - len(wanted))]
        owner = self.owner(own, array=False)
        patterns: dict[str, Any] = of(schema, "patternProperties", dict, {})
        if extra is False and not patterns:
            self.forbidden += [f"{owner}.{name}" for name in wanted if name not in props]
        for name in wanted:
            sub = props.get(name, extra if isinstance(extra, dict) else {})
            value[name] = self.required(sub, depth + 1, path, f"{owner}.{name}")
        for pattern, sub in patterns.items():  # names a patternProperties key matches, before made-up ones
            key = next((k for k in matching_strings(pattern, 1) if k not in value and k not in props), None)
            if len(value) < least and key is not None:
                value[key] = self.required(sub, depth + 1, path, f"{owner}.{key}")
        n = 0
        while len(value) < least and extra is not False:
            n += 1
            value.setdefault(f"key{n}", self.required(extra if isinstance(extra, dict) else {}, depth + 1, path,
                                                      f"{owner}.key{n}"))
        # Answers are what is generated: a `writeOnly` property (a password) is left out unless required.
        optional = [n for n in props if n not in value and not marked(props[n], "writeOnly", self.defs)]
        if not optional or depth >= 3:
            return [value]

        def full() -> dict[str, Any]:
            more = {n: self.optional(props[n], depth + 1, path, f"{owner}.{n}") for n in optional}
            return {**value, **{n: v for n, v in more.items() if v is not NONE}}

        return [value, Later(full)]

    def array(self, schema: dict[str, Any], depth: int, path: tuple[str, ...], own: list[str]) -> list[Any]:
        prefix: list[Any] = of(schema, "prefixItems", list, [])
        items = schema.get("items", {})
        least = max(int(number(schema, "minItems") or 0), len(prefix))
        count = least
        if count == 0 and depth < 3 and items is not False:
            count = 1  # one item shows the shape; deeper down, stay small
        if is_number(schema.get("maxItems")):
            count = min(count, int(schema["maxItems"]))
        if items is False:
            count = min(count, len(prefix))
        owner = self.owner(own, array=True)
        values = []
        for i in range(count):
            sub = prefix[i] if i < len(prefix) else items
            if i < least:
                values.append(self.required(sub, depth + 1, path, f"{owner}[{i}]"))
            else:
                item = self.optional(sub, depth + 1, path, f"{owner}[{i}]")
                if item is NONE:
                    break
                values.append(item)
        contains = schema.get("contains")
        if contains is not None and not any(self.valid(v, contains) for v in values):
            found = self.optional(contains, depth + 1, path, f"{owner}[0]")
            if found is not NONE:
                values = [found, *values][: max(1, count)]
        if schema.get("uniqueItems") is True and len(values) > 1:
            values = self.distinct(values, items)
        return values

    def distinct(self, values: list[Any], items: Any) -> list[Any]:
        """Replace repeated items by variants that still satisfy the item schema."""
        flat = self.flat(items)
        pool = list(flat.get("enum", [])) if isinstance(flat, dict) else []
        out: list[Any] = []
        for i, item in enumerate(values):
            candidates = [item, *pool, *variants(item, i)]
            out.append(next((c for c in candidates if c not in out and self.valid(c, items)), item))
        return out
