"""The router's tree of templates picks what trying every template's regular expression in turn picked: the first
template, most literal characters first, that the path fills; the same parameters, the same 404 and 405."""

from __future__ import annotations

from itertools import islice
from urllib.parse import unquote

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plantstub.contract.model import Operation, Spec
from plantstub.contract.router import MAX_SPLITS, Router
from plantstub.matching import literal_length, split_segment, template_groups, template_regex
from tests.helpers import examples


def operation(method: str, path: str) -> Operation:
    return Operation(method=method, path=path, operation_id=f"{method} {path}", parameters=(), body_required=False,
                     body=None, responses={}, security=())


def reference(ops: list[Operation], method: str, path: str) -> tuple[int, str | None, dict[str, str]]:
    """Every template's regular expression tried in turn, most literal characters first (the router before)."""
    by_path: dict[str, dict[str, Operation]] = {}
    for op in ops:
        by_path.setdefault(op.path, {})[op.method] = op
    found = by_path.get(path) if "{" not in path else None
    params: dict[str, str] = {}
    if found is None:
        for template in sorted((p for p in by_path if "{" in p), key=lambda p: (-literal_length(p), p)):
            m = template_regex(template, capture=True).match(path)
            if m is None:
                continue
            values: dict[str, str] = {}
            for name, value in zip(template_groups(template), m.groups(), strict=True):
                if "{" not in name:
                    values[name] = unquote(value)
                    continue
                ways = list(islice(split_segment(name, value), MAX_SPLITS))
                if not ways:
                    break
                values.update({n: unquote(v) for n, v in ways[0].items()})
            else:
                found, params = by_path[template], values
                break
    if found is None:
        return 404, None, {}
    op = found.get(method) or (found.get("GET") if method == "HEAD" else None)
    return (200, op.path, params) if op is not None else (405, None, params)


SEGMENTS = st.sampled_from(["a", "b", "plants", "{x}", "{id}", "{id}.json", "v{n}", "{a}.{b}", "{a}-{b}", ""])
TEMPLATES = st.lists(st.lists(SEGMENTS, min_size=1, max_size=4).map(lambda s: "/" + "/".join(s)), min_size=1, max_size=12)
PATH_SEGMENTS = st.sampled_from(["a", "b", "plants", "7", "7.json", ".json", "v1", "v", "x.y", "x-y.z", "", "a%2Fb", "é"])
PATHS = st.lists(PATH_SEGMENTS, min_size=1, max_size=5).map(lambda s: "/" + "/".join(s))


@settings(max_examples=examples(400), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(TEMPLATES, st.lists(st.sampled_from(["GET", "POST"]), min_size=1), st.lists(PATHS, min_size=1, max_size=8),
       st.sampled_from(["GET", "POST", "HEAD", "DELETE"]))
def test_the_tree_routes_as_every_template_tried_in_turn(templates, methods, paths, method):
    ops = [operation(methods[i % len(methods)], t) for i, t in enumerate(dict.fromkeys(templates))]
    router = Router(Spec("t", "3.1.0", "t", "1", tuple(ops)))
    for path in [*paths, *(t.replace("{", "").replace("}", "") for t in templates)]:
        route = router.route(method, path)
        got = (route.status, route.operation.path if route.operation else None, route.path_params)
        assert got == reference(ops, method, path), (templates, path)
