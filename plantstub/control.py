"""Control: the stub's one mutable state (spec, journal, scenarios), shared by the admin API and Stub."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .config import Settings
from .errors import ConfigError, ScenarioError
from .journal import Journal
from .matching import RuleCounters, RuleIndex
from .replies import Answers
from .routing import Router
from .spec import Operation, Spec, load_spec
from .validation import RequestCheck

if TYPE_CHECKING:
    from .scenario import Scenario


class UnknownScenario(LookupError):
    """A scenario name that is not loaded; the message lists the known ones."""


class Control:
    """Everything a running stub knows; built once before the server starts, then mutated in place."""

    def __init__(self, settings: Settings, spec: Spec | None = None) -> None:
        self.settings = settings
        self.spec = spec if spec is not None else load_spec(settings.spec)
        self.router = Router(self.spec)
        # Compile every validator now: a broken schema stops start-up, and no request pays for it.
        self.checks: dict[int, RequestCheck] = {id(op): RequestCheck(op) for op in self.spec.operations}
        self.answers = Answers()
        self.coverage: dict[tuple[int, str], int] = {}
        self.counters = RuleCounters()
        self.scenarios: dict[str, Scenario] = {}
        self.indexes: dict[str, RuleIndex] = {}
        self.load_errors: list[ScenarioError] = []
        self.active: str | None = None
        # Only the folder it was given: Stub() and create_app() never read ./scenarios on their own.
        self.scenarios_dir = settings.scenarios
        from .scenario_contract import Contract
        from .scenario_loader import load_builtin_scenarios, load_scenarios

        self.contract = Contract(self.spec)  # checks rules at load, and templated replies once rendered
        self.builtins, self.unfit_builtins = load_builtin_scenarios(self.spec, self.contract)
        own: dict[str, Scenario] = {}
        if self.scenarios_dir is not None:
            if not self.scenarios_dir.is_dir():
                raise ConfigError(f"--scenarios={str(self.scenarios_dir)!r}: no such folder")
            own, errors = load_scenarios(self.scenarios_dir, self.spec, self.contract)
            if errors:
                raise ConfigError("scenarios cannot load:\n" + "\n".join(map(str, errors)))
        self.set_scenarios(own, [])
        if settings.scenario is not None:
            try:
                self.use(settings.scenario)
            except UnknownScenario as exc:
                raise ConfigError(f"--scenario={settings.scenario!r}: {exc.args[0]}") from None
        self.journal = Journal(settings.journal_size, settings.journal)

    def check_for(self, op: Operation) -> RequestCheck:
        return self.checks[id(op)]

    # -- scenarios ---------------------------------------------------------------------------
    def set_scenarios(self, scenarios: dict[str, Scenario], errors: list[ScenarioError]) -> None:
        """Install a freshly loaded set from the folder, over the built-ins (a folder's scenario of the
        same name wins); keeps the active name when it still exists."""
        self.scenarios = {**self.builtins, **scenarios}
        self.contract.rendered.clear()
        self.indexes = {name: RuleIndex(s) for name, s in self.scenarios.items()}
        self.load_errors = list(errors)
        if self.active is not None and self.active not in self.scenarios:
            self.active = None
        self.counters.clear()

    def scenario(self, name: str) -> Scenario:
        try:
            return self.scenarios[name]
        except KeyError:
            known = ", ".join(sorted(self.scenarios)) or "none loaded"
            if name in self.unfit_builtins:
                raise UnknownScenario(
                    f"the built-in scenario {name!r} does not fit this spec ({self.unfit_builtins[name]}); "
                    f"known: {known}"
                ) from None
            raise UnknownScenario(f"unknown scenario {name!r} (known: {known})") from None

    def use(self, name: str | None) -> None:
        """Make `name` the active scenario (None: no scenario); rule counters start again."""
        if name is not None:
            self.scenario(name)
        self.active = name
        self.counters.clear()

    def reset(self) -> None:
        """Forget recorded calls and rule counters; the active scenario stays."""
        self.journal.clear()
        self.counters.clear()
        self.coverage.clear()

    # -- coverage ----------------------------------------------------------------------------
    def count(self, op: Operation | None, status: int | None) -> None:
        """Count one recorded call of `op` towards the declared response it got."""
        if op is None:
            return
        key = "fault" if status is None else (op.response_for(status).status if op.response_for(status) else str(status))
        slot = (id(op), key)
        self.coverage[slot] = self.coverage.get(slot, 0) + 1

    def coverage_report(self) -> dict:
        """For each operation and each response it declares: how many recorded calls got it."""
        operations = []
        covered = total = 0
        for op in self.spec.operations:
            responses = []
            for key in op.responses:
                n = self.coverage.get((id(op), key), 0)
                responses.append({"status": key, "calls": n})
                total += 1
                covered += n > 0
            undeclared = {
                key: n for (op_id, key), n in self.coverage.items() if op_id == id(op) and key not in op.responses
            }
            operations.append({
                "operation": op.label, "operationId": op.operation_id, "responses": responses,
                "undeclared": undeclared,
            })
        percent = round(100.0 * covered / total, 1) if total else 100.0
        return {"operations": operations, "covered": covered, "total": total, "percent": percent}

    def close(self) -> None:
        self.journal.close()
