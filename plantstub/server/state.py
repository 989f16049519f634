"""Control: the stub's one mutable state (spec, journal, scenarios), shared by the admin API and Stub."""

from __future__ import annotations

from typing import Any

from plantstub.config import Settings
from plantstub.contract.load import load_spec
from plantstub.contract.model import Operation, Spec
from plantstub.contract.operations import ServedOperation, serve
from plantstub.contract.router import Router
from plantstub.errors import ConfigError, ScenarioError
from plantstub.recording.coverage import Coverage
from plantstub.recording.journal import Journal
from plantstub.scenarios.contract import ScenarioContract
from plantstub.scenarios.load import load_builtin_scenarios, load_scenarios
from plantstub.scenarios.model import Scenario
from plantstub.scenarios.select import RuleCounters, RuleIndex


class UnknownScenario(LookupError):
    """A scenario name that is not loaded; the message lists the known ones."""


class Control:
    """Everything a running stub knows; built once before the server starts, then mutated in place."""

    def __init__(self, settings: Settings, spec: Spec | None = None) -> None:
        self.settings = settings
        self.spec = spec if spec is not None else load_spec(settings.spec)
        self.router = Router(self.spec)
        self.served: dict[Operation, ServedOperation] = serve(self.spec)
        for served in self.served.values():
            served.check  # noqa: B018 - compile every validator now: a broken schema stops start-up, no request pays
        self.coverage = Coverage(self.spec)
        self.counters = RuleCounters()
        self.scenarios: dict[str, Scenario] = {}
        self.indexes: dict[str, RuleIndex] = {}
        self.load_errors: list[ScenarioError] = []
        self.active: str | None = None
        # Only the folder it was given: Stub() and create_app() never read ./scenarios on their own.
        self.scenarios_dir = settings.scenarios
        # Checks rules at load, and templated replies once rendered, with the schemas compiled above.
        self.contract = ScenarioContract(self.spec, self.served)
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
        self.journal = Journal(settings.journal_size, settings.journal, settings.journal_bytes, settings.journal_flush)

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

    def reload_scenarios(self) -> list[ScenarioError]:
        """Load the folder again (--watch): install it when it loads cleanly; else keep the last good set
        and publish the errors (admin `GET scenarios`). Returns the errors."""
        assert self.scenarios_dir is not None
        scenarios, errors = load_scenarios(self.scenarios_dir, self.spec, self.contract)
        if errors:
            self.load_errors = list(errors)
        else:
            self.set_scenarios(scenarios, [])
        return errors

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

    def coverage_report(self) -> dict[str, Any]:
        """For each operation and each response it declares: how many recorded calls got it."""
        return self.coverage.report()

    def close(self) -> None:
        self.journal.close()
