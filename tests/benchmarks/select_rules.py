"""Rule selection over 100 rules, in µs of CPU per request (best of several rounds: CPU
time, so other load on a shared machine moves it less): what matching costs a request.

  .venv/bin/python tests/benchmarks/select_rules.py

Five shapes, each 100 rules: on one route told apart by a header (all 100 checked, the last matches), by a
query parameter, by both, by a `$regex` header matcher, and told apart by a body field (the index's bucket finds it)."""

from __future__ import annotations

import time
import timeit
from typing import Any

from multidict import CIMultiDict, CIMultiDictProxy

from plantstub.incoming import IncomingRequest
from plantstub.scenarios.model import Criteria, Reply, Rule, Scenario
from plantstub.scenarios.select import RuleCounters, RuleIndex, select_rule


def _rules(match: Any) -> Scenario:
    rules = tuple(Rule(i, Criteria(**match(i)), (Reply(),)) for i in range(100))
    return Scenario("bench", "", "", rules)


def _request(headers: dict[str, str], query: dict[str, list[str]]) -> IncomingRequest:
    return IncomingRequest("POST", "/plants", query, CIMultiDictProxy(CIMultiDict(headers)))


SHAPES = {
    "header": (lambda i: {"method": "POST", "path": "/plants", "headers": {"x-tenant": f"t{i}"}},
               _request({"X-Tenant": "t99", "Content-Type": "application/json"}, {}), {"name": "Fern"}),
    "query": (lambda i: {"method": "POST", "path": "/plants", "query": {"page": str(i)}},
              _request({}, {"page": ["99"]}), {"name": "Fern"}),
    "both": (lambda i: {"method": "POST", "path": "/plants", "headers": {"x-tenant": f"t{i}"}, "query": {"page": str(i)}},
             _request({"X-Tenant": "t99"}, {"page": ["99"]}), {"name": "Fern"}),
    "regex": (lambda i: {"method": "POST", "path": "/plants", "headers": {"x-tenant": {"$regex": f"^t{i}$"}}},
              _request({"X-Tenant": "t99"}, {}), {"name": "Fern"}),
    "body": (lambda i: {"method": "POST", "path": "/plants", "body": {"name": f"n{i}"}},
             _request({}, {}), {"name": "n99", "tag": "x"}),
}


def main() -> None:
    for name, (match, request, body) in SHAPES.items():
        index, counters = RuleIndex(_rules(match)), RuleCounters()
        assert select_rule(index, counters, request, body) is not None
        timer = timeit.Timer(lambda: select_rule(index, counters, request, body), timer=time.process_time)  # noqa: B023
        loops, _ = timer.autorange()
        best = min(timer.repeat(7, loops)) / loops
        print(f"{name:<7} {best * 1e6:8.2f} µs per request")


if __name__ == "__main__":
    main()
