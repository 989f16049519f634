"""(method, path) -> Operation and path parameters, or why not: 404, or 405 with Allow."""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import unquote

from plantstub.contract.model import Operation, Spec
from plantstub.matching import literal_length, template_names, template_regex


class Route(NamedTuple):
    """A routing outcome: an operation with its raw path parameters, or a 404/405."""

    operation: Operation | None
    path_params: dict[str, str]
    status: int = 200  # 200 matched, 404 no path, 405 path without this method
    allow: tuple[str, ...] = ()


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
        self.templated = [(template_regex(p, capture=True), template_names(p), by_path[p]) for p in templated]

    def route(self, method: str, path: str) -> Route:
        """Find the operation for `method path`; path parameters come back percent-decoded."""
        method = method.upper()
        ops = self.literal.get(path)
        params: dict[str, str] = {}
        if ops is None:
            for regex, names, candidate in self.templated:
                m = regex.match(path)
                if m:
                    ops = candidate
                    params = {name: unquote(value) for name, value in zip(names, m.groups(), strict=True)}
                    break
        if ops is None:
            return Route(None, {}, 404)
        op = ops.get(method)
        if op is None and method == "HEAD":
            op = ops.get("GET")
        if op is None:
            allow = sorted(ops)
            if "GET" in ops and "HEAD" not in ops:
                allow = sorted([*allow, "HEAD"])
            return Route(None, params, 405, tuple(allow))
        return Route(op, params)
