"""Contract coverage: recorded calls per operation and declared response, counted, merged and summed up.

A tally is plain data, `{"POST /plants": {"declared": {"200": 3, "400": 0}, "undeclared": {"fault": 1}}}`,
so pytest-xdist workers can send theirs to the controller; every figure and percentage comes from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from plantstub._fields import ByFields

if TYPE_CHECKING:  # the pytest plugin, loaded in every run of a project that installed plantstub, imports this module
    from plantstub.contract.model import Operation, Spec

Tally = dict[str, dict[str, dict[str, int]]]


def response_key(op: Operation, status: int | None) -> str:
    """The declared response a call's status counts towards ("200", "4XX", "default"), else the status,
    or "fault" when a fault sent none."""
    if status is None:
        return "fault"
    declared = op.response_for(status)
    return declared.status if declared is not None else str(status)


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class Figures(ByFields):
    """How many declared responses were exercised, of how many."""

    covered: int
    total: int

    @property
    def percent(self) -> float:
        return 100.0 * self.covered / self.total if self.total else 100.0


def figures(tally: Tally) -> Figures:
    covered = total = 0
    for counts in tally.values():
        for n in counts["declared"].values():
            total += 1
            covered += n > 0
    return Figures(covered, total)


def merge(into: Tally, more: Tally) -> None:
    """Add the counts of `more` to `into` (another test's stub, another xdist worker)."""
    for operation, counts in more.items():
        target = into.setdefault(operation, {"declared": {}, "undeclared": {}})
        for kind in ("declared", "undeclared"):
            for status, n in counts.get(kind, {}).items():
                target[kind][status] = target[kind].get(status, 0) + n


class Coverage:
    """The calls one stub recorded, counted per operation and declared response."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self._counts: dict[Operation, dict[str, int]] = {}
        self._keys: dict[tuple[Operation, int | None], str] = {}  # response_key(), once per pair

    def count(self, op: Operation | None, status: int | None) -> None:
        """Count one recorded call of `op` (None: it matched no operation) that got `status`."""
        if op is None:
            return
        key = self._keys.get((op, status))
        if key is None:
            key = self._keys[(op, status)] = response_key(op, status)
        counts = self._counts.setdefault(op, {})
        counts[key] = counts.get(key, 0) + 1

    def clear(self) -> None:
        self._counts.clear()

    def tally(self) -> Tally:
        """Every operation of the spec, in document order, with each declared response and what else came."""
        result: Tally = {}
        for op in self.spec.operations:
            counts = self._counts.get(op, {})
            result[op.label] = {
                "declared": {key: counts.get(key, 0) for key in op.responses},
                "undeclared": {key: n for key, n in counts.items() if key not in op.responses},
            }
        return result

    def report(self) -> dict[str, Any]:
        """What `GET /__plantstub/coverage` and `Stub.coverage()` show."""
        return report_of(self.spec, self.tally())


def report_of(spec: Spec, tally: Tally) -> dict[str, Any]:
    """A coverage report of `spec` from a tally (one stub's, or several summed)."""
    operations = [
        {
            "operation": op.label,
            "operationId": op.operation_id,
            "responses": [{"status": key, "calls": n}
                          for key, n in tally.get(op.label, {}).get("declared", {}).items()],
            "undeclared": tally.get(op.label, {}).get("undeclared", {}),
        }
        for op in spec.operations
    ]
    total = figures(tally)
    return {"operations": operations, "covered": total.covered, "total": total.total,
            "percent": round(total.percent, 1)}


def tally_of(report: dict[str, Any]) -> Tally:
    """The tally inside a coverage report (as `Stub.coverage()` and the admin API give it)."""
    return {
        op["operation"]: {
            "declared": {r["status"]: r["calls"] for r in op["responses"]},
            "undeclared": dict(op["undeclared"]),
        }
        for op in report["operations"]
    }


def report_problem(data: object) -> str | None:
    """Why `data` is not a coverage report as a stub's `GET coverage` answers it (where and what), or None."""
    if not isinstance(data, dict) or not isinstance(data.get("operations"), list):
        return 'expected {"operations": [...], ...}'
    for i, op in enumerate(data["operations"]):
        where = f"operations[{i}]"
        if not isinstance(op, dict) or not isinstance(op.get("operation"), str):
            return f"{where}.operation: expected the operation's label"
        if not isinstance(op.get("responses"), list):
            return f"{where}.responses: expected a list"
        for j, response in enumerate(op["responses"]):
            if not isinstance(response, dict) or not isinstance(response.get("status"), str) or not _count(
                    response.get("calls")):
                return f"{where}.responses[{j}]: expected {{\"status\": \"200\", \"calls\": N}}"
        undeclared = op.get("undeclared")
        if not isinstance(undeclared, dict) or not all(isinstance(k, str) and _count(n) for k, n in undeclared.items()):
            return f"{where}.undeclared: expected {{\"STATUS\": N, ...}}"
    return None


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def sum_reports(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Coverage reports of several stubs (replicas serving one spec) summed into one, operations in the order first
    seen, each with its operationId."""
    tally: Tally = {}
    ids: dict[str, str | None] = {}  # operation -> its operationId
    for report in reports:
        merge(tally, tally_of(report))
        for op in report["operations"]:
            ids.setdefault(op["operation"], op.get("operationId"))
    total = figures(tally)
    operations = [{"operation": label, "operationId": ids[label],
                   "responses": [{"status": key, "calls": n} for key, n in counts["declared"].items()],
                   "undeclared": counts["undeclared"]}
                  for label, counts in tally.items()]
    return {"operations": operations, "covered": total.covered, "total": total.total,
            "percent": round(total.percent, 1)}


def coverage_rows(tally: Tally) -> list[str]:
    """The table's lines: each operation's declared responses with their calls, then the undeclared ones."""
    rows = [f"  {'operation':<30} {'response':<8} {'calls':>6}"]
    for operation, counts in tally.items():
        for status, n in counts["declared"].items():
            rows.append(f"  {operation:<30} {status:<8} {n:>6}{'' if n else '   <- never exercised'}")
        for status, n in counts["undeclared"].items():
            rows.append(f"  {operation:<30} {status:<8} {n:>6}   (not declared)")
    return rows
