"""Regular expressions in schemas: which ones are served, and strings that match them.

Specs write ECMA-262 regular expressions (JSON Schema's dialect); jsonschema-rs runs them as written, with
its backtracking bounded (`pattern_options`). Before that, as the schema is bundled, `ecma_pattern` rewrites
the ECMA forms its engine reads otherwise (a class's `-` beside a class escape, an inline flag past the start),
and `served_patterns` sets aside a `pattern` it cannot compile (`^.{0,262144}$` is over its size limit) with
a warning. Strings that match are built with Python's own regular-expression parser, a `\\p{...}` class read
as the characters of a small pool that it holds; every string is checked against its schema afterwards.
"""

from __future__ import annotations

import re
import string
import sys
import warnings
from functools import cache, lru_cache
from itertools import islice
from typing import Any

import jsonschema_rs

from plantstub._json import shown

if sys.version_info >= (3, 11):  # the regular-expression parser behind `re`, to build strings that match a pattern
    from re import _parser as sre_parse
else:  # pragma: no cover - Python 3.10
    import sre_parse

_ECMA_ESCAPES = re.compile(r"\\\\|\\u\{([0-9A-Fa-f]{1,6})\}|\\c([A-Za-z])|\\k<([A-Za-z_][A-Za-z0-9_]*)>")
_GENERATION = re.compile(r"\\\\|\\([pP])(?:\{([^}]*)\}|([A-Za-z]))|\(\?<([A-Za-z_][A-Za-z0-9_]*)>")
# Characters a `\p{...}` class is read as when strings are built: ASCII first, then one or two of other scripts.
_POOL = string.ascii_letters + string.digits + " _-.,:;!?'\"()[]{}<>/\\|@#$%&*+=^`~\t" + "éÀßªʰǅ²Ⅳ中αдعא\u0301\u00a0©€"


def _ecma_escape(match: re.Match[str]) -> str:
    code, control, group = match.group(1), match.group(2), match.group(3)
    if group is not None:
        return f"(?P={group})"
    if code is not None:
        return f"\\U{int(code, 16):08x}"
    if control is not None:
        return f"\\x{ord(control.upper()) % 32:02x}"
    return match.group(0)


BACKTRACK_LIMIT = 10_000  # steps of fancy-regex's backtracking (lookarounds only) before a match stops: < 1 ms


@cache
def pattern_options() -> Any:
    """jsonschema-rs's regex settings: fancy-regex, which runs a pattern without lookarounds or backreferences
    in linear time (`^(a+)+$` cannot backtrack) and stops one with them after BACKTRACK_LIMIT steps."""
    return jsonschema_rs.FancyRegexOptions(backtrack_limit=BACKTRACK_LIMIT)


@lru_cache(maxsize=1024)
def python_dialect(pattern: str) -> str:
    """`pattern` as the `regex` package reads it: `\\u{1F331}` -> `\\U0001f331`, `\\cM` -> `\\x0d`,
    `\\k<n>` -> `(?P=n)`."""
    return _ECMA_ESCAPES.sub(_ecma_escape, pattern)


# -- ECMA forms Python's engines (and jsonschema-rs) read otherwise ---------------------------------------
_CLASS_ESCAPES = frozenset("dDwWsS")  # a class escape stands for a set: a `-` beside it is a hyphen in ECMA
_CONTROL = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "b": "\b", "0": "\0"}
_INLINE_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")
MAX_SCOPED = 16  # inline flag groups past the start rewritten in one pattern; a pattern with more stays as written


@lru_cache(maxsize=1024)
def ecma_pattern(pattern: str) -> str:
    """`pattern` rewritten where ECMA-262 reads it one way and Python's `re` refuses it (or reads it
    another): a `-` in a class beside a class escape (`[\\d-_]`) or between characters in reverse order
    (`[_-.]`) is a hyphen, and an inline flag group past the start (`a|(?i)b`) applies to the rest of its
    group (`a|(?i:b)`). Every other pattern is returned as written."""
    if python_reads(pattern):
        return pattern
    text = _scoped_flags(_class_hyphens(pattern))
    if not python_reads(text):
        return text if servable(text) and not servable(pattern) else pattern
    return text


def python_reads(pattern: str) -> bool:
    """Does Python's `re` read `pattern` as written? An inline flag past the start does not count: Python 3.11
    refuses it, 3.10 only warns and then applies it to the whole pattern, which ECMA-262 never does."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            re.compile(pattern)
        except (re.error, DeprecationWarning, ValueError, OverflowError, RecursionError):
            return False
    return True


def _escape_end(text: str, i: int) -> int:
    """The end of the escape starting at `text[i]` (a backslash): `\\p{L}` and `\\u{1F331}` whole."""
    if text[i + 1 : i + 3] in ("p{", "P{", "u{") and "}" in text[i:]:
        return text.index("}", i) + 1
    return i + 2


def _atom_code(atom: str) -> int | None:
    """The character a class atom stands for; None for a set (`\\d`, `\\p{L}`) or one it cannot tell."""
    if not atom.startswith("\\"):
        return ord(atom)
    letter = atom[1:2]
    if letter in _CLASS_ESCAPES or letter in "pP":
        return None
    if letter in _CONTROL:
        return ord(_CONTROL[letter])
    if letter.isalnum():
        return None  # `\\x41`, `\\u0041`: read as they are, never taken for a hyphen's neighbour
    return ord(letter)


def _class_hyphens(pattern: str) -> str:
    """Each `-` of a class that ECMA cannot read as a range written `\\-`."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            end = _escape_end(pattern, i)
            out.append(pattern[i:end])
            i = end
            continue
        if ch != "[":
            out.append(ch)
            i += 1
            continue
        start = i + 1 + (pattern[i + 1 : i + 2] == "^")
        atoms, j = [], start
        while j < n and pattern[j] != "]":
            end = _escape_end(pattern, j) if pattern[j] == "\\" else j + 1
            atoms.append(pattern[j:end])
            j = end
        out.append(pattern[i:start])
        for k, atom in enumerate(atoms):
            if atom == "-" and 0 < k < len(atoms) - 1:
                low, high = _atom_code(atoms[k - 1]), _atom_code(atoms[k + 1])
                if low is None or high is None or low > high:
                    atom = "\\-"
            out.append(atom)
        i = j
    return "".join(out)


def _scoped_flags(pattern: str) -> str:
    """`X(?i)Y` past the start of the pattern: `X(?i:Y)`, Y running to the end of the enclosing group.

    Each rewrite scans the rest of the pattern: a hostile one with thousands of them is left as written (and
    refused if no engine reads it), never rewritten for seconds at start.
    """
    if len(_INLINE_FLAGS.findall(pattern, 1)) > MAX_SCOPED:
        return pattern
    match = _INLINE_FLAGS.search(pattern, 1)
    while match is not None:
        depth, j, in_class = 0, match.end(), False
        while j < len(pattern):
            ch = pattern[j]
            if ch == "\\":
                j = _escape_end(pattern, j)
                continue
            if in_class:
                in_class = ch != "]"
            elif ch == "[":
                in_class = True
            elif ch == "(":
                depth += 1
            elif ch == ")":
                if depth == 0:
                    break
                depth -= 1
            j += 1
        flags = match.group()[2:-1]
        pattern = f"{pattern[: match.start()]}(?{flags}:{pattern[match.end() : j]}){pattern[j:]}"
        match = _INLINE_FLAGS.search(pattern, match.start() + 1)
    return pattern


@lru_cache(maxsize=4096)
def servable(pattern: str) -> bool:
    """Does jsonschema-rs, which checks every request and reply, compile `pattern`?"""
    try:
        jsonschema_rs.Draft202012Validator({"pattern": pattern}, pattern_options=pattern_options())
    except Exception:  # noqa: BLE001 - it says "is not a regex" (a ValidationError) for every reason
        return False
    return True


@lru_cache(maxsize=1024)
def readable(pattern: str) -> bool:
    """Is `pattern` a regular expression at all: read by Python's `re`, or by the `regex` package (`\\p{L}`)?"""
    if python_reads(pattern):
        return True
    import regex  # only for a pattern Python's `re` cannot read

    try:
        regex.compile(python_dialect(pattern))
    except (regex.error, ValueError, OverflowError, RecursionError):
        return False
    return True


_PROPERTY_CLASS = re.compile(r"\\\\|\\[pP]\{([^}]*)\}")


@lru_cache(maxsize=256)
def unknown_class(pattern: str) -> str | None:
    """The first `\\p{...}` (or `\\P{...}`) of `pattern` that names no Unicode property, when the pattern is a regular
    expression but for such classes (`[\\p{all}]*`); else None."""
    import regex  # only for a pattern that is no regular expression as written

    unknown: list[str] = []

    def known(match: re.Match[str]) -> str:
        if match.group(1) is None:
            return match.group(0)
        try:
            regex.compile(match.group(0))
        except regex.error:
            unknown.append(match.group(0))
            return "\\p{L}"
        return match.group(0)

    text = _PROPERTY_CLASS.sub(known, pattern)
    return unknown[0] if unknown and readable(text) else None


def served_patterns(schema: dict[str, object], where: str, warnings: list[str]) -> None:
    """Rewrite the ECMA forms of `schema`'s `pattern` and `patternProperties` keys (ecma_pattern), in place.

    A `pattern` that is a regular expression jsonschema-rs cannot compile (over its size limit, a Python-only
    `\\Z`, a backreference, a `\\p{...}` class no Unicode property has: `[\\p{all}]*`) is removed with a warning,
    as real specs write some (Adyen: `^.{0,262144}$`); one that is no regular expression (`[a-`) stays, for the
    metaschema check to refuse. A `patternProperties` key
    stays too: without it, `additionalProperties` would refuse names the spec allows.
    """
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        schema["pattern"] = pattern = ecma_pattern(pattern)
        if not servable(pattern):
            unknown = None if readable(pattern) else unknown_class(pattern)
            if unknown is not None or readable(pattern):
                del schema["pattern"]
                reason = "jsonschema-rs cannot compile it" if unknown is None else (
                    f"{shown(unknown)} is no Unicode property class jsonschema-rs knows")
                warning = f"pattern {shown(pattern)} is not checked: {reason}"
                if not any(w.endswith(warning) for w in warnings):
                    warnings.append(f"{where}: {warning}" if where else warning)
    if isinstance(patterns := schema.get("patternProperties"), dict):
        schema["patternProperties"] = {ecma_pattern(k) if isinstance(k, str) else k: v for k, v in patterns.items()}


# -- strings built to match ---------------------------------------------------------------------------
@lru_cache(maxsize=256)
def _members(name: str, negated: bool) -> str:
    """Characters of the class `\\p{name}` (`\\P{name}` when negated), escaped for a `[...]`; "" if unknown."""
    import regex

    try:
        compiled = regex.compile(f"\\{'P' if negated else 'p'}{{{name}}}")
    except (regex.error, ValueError):
        return ""
    found = [c for c in _POOL if compiled.match(c)]
    if not found:  # a script or block the pool misses: the first few of the Basic Multilingual Plane
        found = [m.group() for m in islice(compiled.finditer(_plane()), 4)]
    return "".join(re.escape(c) for c in found)


@lru_cache(maxsize=1)
def _plane() -> str:
    """Every character of the Basic Multilingual Plane past ASCII, surrogates left out (JSON cannot hold one)."""
    return "".join(chr(c) for c in range(0x80, 0x10000) if not 0xD800 <= c <= 0xDFFF)


def _generation_dialect(pattern: str) -> str:
    """`pattern` as Python's parser reads it, for building strings: classes `\\p{..}` spelt out, named groups."""
    out, i, in_class = [], 0, False
    text = python_dialect(pattern)
    while i < len(text):
        match = _GENERATION.match(text, i)
        if match is not None and match.group(0) != "\\\\":
            kind, name, short, group = match.groups()
            if group is not None:
                out.append(f"(?P<{group}>")
            else:
                members = _members(name if name is not None else short, kind == "P")
                if not members:
                    return pattern  # an unknown class: the pattern stays unreadable
                out.append(members if in_class else f"[{members}]")
            i = match.end()
            continue
        if text[i] == "\\":
            out.append(text[i : i + 2])
            i += 2
            continue
        if text[i] == "[" and not in_class:
            in_class = True
        elif text[i] == "]" and in_class:
            in_class = False
        out.append(text[i])
        i += 1
    return "".join(out)


@lru_cache(maxsize=512)
def matching_strings(pattern: str, min_length: int) -> tuple[str, ...]:
    """Strings built to match `pattern`: repeats at their minimum, then longer; lookaheads tried two ways."""
    try:
        parsed = sre_parse.parse(_generation_dialect(pattern))
    except Exception:  # noqa: BLE001 - syntax Python's parser does not read: no candidates from the pattern
        return ()
    out: list[str] = []
    for extra in sorted({0, 1, 2, 4, min(max(0, min_length), 64)}):
        for inline in (True, False):
            builder = _RegexBuilder(extra, inline)
            text = builder.build(list(parsed.data)) + "".join(builder.tail)
            if text not in out:
                out.append(text)
    return tuple(out)


_CATEGORY = {"DIGIT": "0", "WORD": "a", "SPACE": " ", "NOT_DIGIT": "a", "NOT_WORD": "-", "NOT_SPACE": "a"}


class _RegexBuilder:
    def __init__(self, extra: int, inline: bool) -> None:
        self.extra = extra
        self.inline = inline  # a lookahead's text written in place (True) or after the rest (False)
        self.groups: dict[int, str] = {}
        self.tail: list[str] = []

    def build(self, items: list[Any]) -> str:
        return "".join(self.item(op.name, av) for op, av in items)

    def item(self, name: str, av: Any) -> str:
        if name == "LITERAL":
            return chr(av)
        if name == "NOT_LITERAL":
            return "a" if chr(av) != "a" else "b"
        if name == "ANY":
            return "a"
        if name == "IN":
            return self.char(av)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = av
            count = low + self.extra if high == sre_parse.MAXREPEAT else min(high, low + self.extra)
            return "".join(self.build(list(sub)) for _ in range(count))
        if name == "SUBPATTERN":
            text = self.build(list(av[-1]))
            if av[0] is not None:
                self.groups[av[0]] = text
            return text
        if name == "ATOMIC_GROUP":
            return self.build(list(av))
        if name == "BRANCH":
            return self.build(list(av[1][0]))
        if name == "GROUPREF":
            return self.groups.get(av, "")
        if name == "GROUPREF_EXISTS":
            return self.build(list(av[1]))
        if name == "ASSERT" and av[0] == 1:  # positive lookahead
            text = self.build(list(av[1]))
            if self.inline:
                return text
            self.tail.append(text)
        return ""  # anchors, lookbehinds, negative lookaheads: the candidate check decides

    def char(self, items: list[Any]) -> str:
        negate = bool(items) and items[0][0].name == "NEGATE"
        if not negate:
            op, av = items[0]
            if op.name == "LITERAL":
                return chr(av)
            if op.name == "RANGE":
                return chr(av[0])
            if op.name == "CATEGORY":
                return _CATEGORY.get(av.name.replace("CATEGORY_", "").replace("UNI_", ""), "a")
            return "a"
        for candidate in "aA0_-. x":
            if not any(_in_class(candidate, op.name, av) for op, av in items[1:]):
                return candidate
        return "\u00e9"


def _in_class(ch: str, name: str, av: Any) -> bool:
    if name == "LITERAL":
        return ch == chr(av)
    if name == "RANGE":
        return av[0] <= ord(ch) <= av[1]
    if name == "CATEGORY":
        kind = av.name.replace("CATEGORY_", "").replace("UNI_", "")
        tests = {"DIGIT": ch.isdigit(), "WORD": ch.isalnum() or ch == "_", "SPACE": ch.isspace()}
        return tests.get(kind.replace("NOT_", ""), False) != kind.startswith("NOT_")
    return False
