"""(method, path) -> Operation and path parameters, or why not: 404, or 405 with Allow."""

from __future__ import annotations

import re
import time
from functools import lru_cache
from itertools import islice
from typing import NamedTuple
from urllib.parse import unquote

from plantstub.contract.model import Operation, Spec
from plantstub.contract.params import ParameterCheck
from plantstub.matching import literal_length, split_segment, template_groups, template_regex

MAX_SPLITS = 64  # ways to split a segment of side-by-side parameters that are checked against their schemas
CHOOSE_SECONDS = 0.2


@lru_cache(maxsize=65536)
def _regex(template: str) -> re.Pattern[str]:
    """template_regex(capture=True), remembered: a spec is routed by the stub and by its scenario checks, and a
    big spec has thousands of templates (6,000 took a second to compile, each time)."""
    return template_regex(template, capture=True)


class Route(NamedTuple):
    """A routing outcome: an operation with its raw path parameters, or a 404/405."""

    operation: Operation | None
    path_params: dict[str, str]
    status: int = 200  # 200 matched, 404 no path, 405 path without this method
    allow: tuple[str, ...] = ()


class _Shared:
    """A template with several parameters in one segment (`/files/{name}.{ext}`): the value checks of each
    operation's path parameters, to pick the split of a segment whose values fit their schemas."""

    def __init__(self, ops: dict[str, Operation]) -> None:
        self.checks = {
            op: {p.name: ParameterCheck(p, f"{op.label} parameter {p.name}", True)
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


class Router:
    """Matches concrete paths to the spec's path templates; literal paths win over templated ones."""

    def __init__(self, spec: Spec) -> None:
        by_path: dict[str, dict[str, Operation]] = {}
        for op in spec.operations:
            by_path.setdefault(op.path, {})[op.method] = op
        self.literal = {path: ops for path, ops in by_path.items() if "{" not in path}
        templated = [path for path in by_path if "{" in path]
        # More literal characters first: /plants/mine beats /plants/{id} beats /{a}/{b}.
        templated.sort(key=lambda p: (-literal_length(p), p))
        self.templated = []
        for path in templated:
            groups = template_groups(path)
            shared = _Shared(by_path[path]) if any("{" in g for g in groups) else None
            self.templated.append((_regex(path), groups, by_path[path], shared))

    def route(self, method: str, path: str) -> Route:
        """Find the operation for `method path`; path parameters come back percent-decoded."""
        method = method.upper()
        ops = self.literal.get(path)
        params: dict[str, str] = {}
        splits: list[list[dict[str, str]]] = []
        shared = None
        if ops is None:
            for regex, names, candidate, shared in self.templated:
                m = regex.match(path)
                if m is None:
                    continue
                if shared is None:  # one parameter per segment: the common case
                    ops = candidate
                    params = {name: unquote(value) for name, value in zip(names, m.groups(), strict=True)}
                    break
                splits = []
                for name, value in zip(names, m.groups(), strict=True):
                    if "{" not in name:
                        params[name] = unquote(value)
                        continue
                    ways = [{n: unquote(v) for n, v in way.items()} for way in islice(split_segment(name, value), MAX_SPLITS)]
                    if not ways:
                        break  # the segment's literals are not where the template has them
                    splits.append(ways)
                else:
                    ops = candidate
                    break
                params, splits = {}, []
        if ops is None:
            return Route(None, {}, 404)
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
