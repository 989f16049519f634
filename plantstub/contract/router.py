"""(method, path) -> Operation and path parameters, or why not: 404, or 405 with Allow."""

from __future__ import annotations

import re
import time
from itertools import islice
from typing import NamedTuple
from urllib.parse import unquote

from plantstub.contract.model import Operation, Spec
from plantstub.contract.params import ParameterCheck
from plantstub.matching import literal_length, split_segment, template_groups, template_names, template_regex

MAX_SPLITS = 64  # ways to split a segment of side-by-side parameters that are checked against their schemas
CHOOSE_SECONDS = 0.2


class Route(NamedTuple):
    """A routing outcome: an operation with its raw path parameters, or a 404/405."""

    operation: Operation | None
    path_params: dict[str, str]
    status: int = 200  # 200 matched, 404 no path, 405 path without this method
    allow: tuple[str, ...] = ()
    reason: str = ""  # a 404's hint: a spec key with '#' or '?' that this path is the start of


# A path key holding '#' or '?' (the document's fault: they start a URL's fragment and query) is served when the
# client percent-encodes them, as Prism does.
_RESERVED = {"#": "%23", "?": "%3F"}
_OUTSIDE_BRACES = re.compile(r"\{[^}]*\}|[#?]")


def encoded_key(template: str) -> str:
    """`/find?by={field}` -> `/find%3Fby={field}`: the path key as a client sends it."""
    return _OUTSIDE_BRACES.sub(lambda m: _RESERVED.get(m.group(), m.group()), template)


class _Shared:
    """A template with several parameters in one segment (`/files/{name}.{ext}`): the value checks of each
    operation's path parameters, to pick the split of a segment whose values fit their schemas."""

    def __init__(self, ops: dict[str, Operation]) -> None:
        self.checks = {
            op: {p.name: ParameterCheck(p, f"{op.label} parameter {p.name}")
                 for p in op.parameters if p.location == "path"}
            for op in ops.values()
        }

    def choose(self, op: Operation | None, splits: list[list[dict[str, str]]]) -> dict[str, str]:
        """Per segment, the first split whose values all fit `op`'s schemas; else the first split.

        The schemas may take CHOOSE_SECONDS in all (patterns that jsonschema runs under a timeout could add up).
        """
        checks = self.checks.get(op, {}) if op is not None else {}
        params: dict[str, str] = {}
        deadline = time.monotonic() + CHOOSE_SECONDS
        for ways in splits:
            fits = (way for way in ways if time.monotonic() < deadline
                    and all(checks[n].accepts(v) for n, v in way.items() if n in checks))
            params.update(next(fits, ways[0]))
        return params


class _Node:
    """One step of the templates' tree: literal segments by their text, and segments of one parameter
    (`{id}`, `{id}.json`: its literal prefix and suffix)."""

    __slots__ = ("ends", "literal", "params")

    def __init__(self) -> None:
        self.literal: dict[str, _Node] = {}
        self.params: list[tuple[str, str, _Node]] = []
        self.ends: tuple[int, list[str], dict[str, Operation]] | None = None  # (rank, parameter names, ops)

    def step(self, segment: str) -> _Node:
        """The child for one segment of a template (a literal, or one parameter with what surrounds it)."""
        names = template_names(segment)
        if not names:
            return self.literal.setdefault(segment, _Node())
        at = segment.index("{" + names[0] + "}")
        prefix, suffix = segment[:at], segment[at + len(names[0]) + 2:]
        for have_prefix, have_suffix, child in self.params:
            if (have_prefix, have_suffix) == (prefix, suffix):
                return child
        child = _Node()
        self.params.append((prefix, suffix, child))
        return child


def _best(root: _Node, segments: list[str]) -> tuple[tuple[int, list[str], dict[str, Operation]], list[str]] | None:
    """The first template, in the order templates are tried, that `segments` fill; and the parameter values."""
    best: tuple[tuple[int, list[str], dict[str, Operation]], list[str]] | None = None
    todo: list[tuple[_Node, int, list[str]]] = [(root, 0, [])]
    while todo:
        node, i, values = todo.pop()
        if i == len(segments):
            if node.ends is not None and (best is None or node.ends[0] < best[0][0]):
                best = (node.ends, values)
            continue
        segment = segments[i]
        child = node.literal.get(segment)
        if child is not None:
            todo.append((child, i + 1, values))
        for prefix, suffix, child in node.params:
            if len(segment) > len(prefix) + len(suffix) and segment.startswith(prefix) and segment.endswith(suffix):
                todo.append((child, i + 1, [*values, segment[len(prefix): len(segment) - len(suffix)]]))
    return best


class Router:
    """Matches concrete paths to the spec's path templates; literal paths win over templated ones.

    Templates are tried most literal characters first (/plants/mine beats /plants/{id} beats /{a}/{b}): the
    templates with one parameter per segment form a tree walked segment by segment, so routing and building
    the router take time in proportion to a path, not to the number of templates (a spec of 6,000 compiled
    6,000 regular expressions at start, and tried them in turn on every request); the few with several
    parameters in one segment (`{name}.{ext}`) are regular expressions tried in turn.
    """

    def __init__(self, spec: Spec) -> None:
        by_path: dict[str, dict[str, Operation]] = {}
        self.cut: list[tuple[re.Pattern[str], str]] = []  # keys with '#' or '?': their part before it, the key
        for op in spec.operations:
            path = op.path
            if "#" in path or "?" in path:
                path = encoded_key(path)
                head = re.split(r"[#?]", op.path, maxsplit=1)[0]
                if op.path not in (key for _, key in self.cut):
                    self.cut.append((template_regex(head), op.path))
            by_path.setdefault(path, {})[op.method] = op
        self.literal = {path: ops for path, ops in by_path.items() if "{" not in path}
        templated = [path for path in by_path if "{" in path]
        templated.sort(key=lambda p: (-literal_length(p), p))
        self.tree = _Node()
        self.templated = []  # (rank, regex, groups, ops, shared) of templates with several parameters in a segment
        for rank, path in enumerate(templated):
            groups = template_groups(path)
            if any("{" in g for g in groups):
                regex = template_regex(path, capture=True)
                self.templated.append((rank, regex, groups, by_path[path], _Shared(by_path[path])))
                continue
            node = self.tree
            for segment in path.split("/"):
                node = node.step(segment)
            if node.ends is None:  # two templates alike but for their parameters' names: the first one serves
                node.ends = (rank, groups, by_path[path])

    def route(self, method: str, path: str) -> Route:
        """Find the operation for `method path`; path parameters come back percent-decoded."""
        method = method.upper()
        if self.cut and "%3f" in path:
            path = path.replace("%3f", "%3F")  # either case is the same character; keys are written upper case
        ops = self.literal.get(path)
        params: dict[str, str] = {}
        splits: list[list[dict[str, str]]] = []
        shared = None
        if ops is None:
            best = _best(self.tree, path.split("/"))
            if best is not None:
                (rank, names, ops), values = best
                params = {name: unquote(value) for name, value in zip(names, values, strict=True)}
            for other, regex, names, candidate, shared in self.templated:
                if best is not None and other > rank:
                    shared = None
                    break
                m = regex.match(path)
                if m is None:
                    continue
                found: dict[str, str] = {}
                splits = []
                for name, value in zip(names, m.groups(), strict=True):
                    if "{" not in name:
                        found[name] = unquote(value)
                        continue
                    ways = [{n: unquote(v) for n, v in way.items()} for way in islice(split_segment(name, value), MAX_SPLITS)]
                    if not ways:
                        break  # the segment's literals are not where the template has them
                    splits.append(ways)
                else:
                    ops, params = candidate, found
                    break
                splits = []
            else:
                shared = None
        if ops is None:
            return Route(None, {}, 404, reason=self._reason(path) if self.cut else "")
        op = ops.get(method)
        if op is None and method == "HEAD":
            op = ops.get("GET")
        if splits and shared is not None:
            params.update(shared.choose(op, splits))
        if op is None:
            allow = sorted(ops)
            if "GET" in ops and "HEAD" not in ops:
                allow = sorted([*allow, "HEAD"])
            return Route(None, params, 405, tuple(allow))
        return Route(op, params)

    def _reason(self, path: str) -> str:
        """Why a path that is the start of a key with '#' or '?' finds nothing: the client did not encode it."""
        decoded = unquote(path)
        for head, key in self.cut:
            if head.match(decoded):
                char = "#" if "#" in key and ("?" not in key or key.index("#") < key.index("?")) else "?"
                return (f"; the spec's path {key!r} holds a {char!r}, which a URL reads as the start of its"
                        f" {'fragment' if char == '#' else 'query'}: send it as {_RESERVED[char]} ({encoded_key(key)})")
        return ""
