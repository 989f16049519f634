"""The scenarios a stub can activate (the built-ins under the folder's), and the rules of a reload (--watch)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from plantstub._fields import ByFields
from plantstub.contract.model import Spec
from plantstub.errors import ScenarioError, UnknownScenario
from plantstub.scenarios.contract import ScenarioContract
from plantstub.scenarios.load import load_builtin_scenarios, load_scenarios
from plantstub.scenarios.model import Scenario
from plantstub.scenarios.select import RuleIndex, same_rules
from plantstub.scenarios.watch import FolderSnapshot


@dataclass(frozen=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class FolderLoad(ByFields):
    """The scenarios folder loaded off the event loop, ready to install in one step on it."""

    scenarios: dict[str, Scenario]
    indexes: dict[str, RuleIndex]
    errors: list[ScenarioError]
    # name -> the installed scenario it answers like (same rules): its rule counters carry on
    unchanged: dict[str, Scenario] = field(default_factory=dict)


class Shipped(NamedTuple):
    """The built-in scenarios read: those that fit the spec, their rule indexes, and why each other one does not."""

    scenarios: dict[str, Scenario]
    indexes: dict[str, RuleIndex]
    unfit: dict[str, str]


class Builtins:
    """The built-in scenarios that fit the spec, their rule indexes, and why each other one does not: read on first use
    (listing, naming or activating a scenario), so that a start that uses none never parses their files."""

    def __init__(self, spec: Spec, contract: ScenarioContract) -> None:
        self._spec = spec
        self._contract = contract
        self._lock = threading.Lock()  # one read, whichever thread asks first (the loop's, or a test's through Stub)
        self._loaded: Shipped | None = None

    def loaded(self) -> Shipped:
        loaded = self._loaded
        if loaded is None:
            with self._lock:
                if self._loaded is None:
                    scenarios, unfit = load_builtin_scenarios(self._spec, self._contract)
                    self._loaded = Shipped(scenarios, {name: RuleIndex(s) for name, s in scenarios.items()}, unfit)
                loaded = self._loaded
        return loaded


@dataclass(frozen=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class ScenarioSet(ByFields):
    """One session's scenarios: the built-ins, then the folder's (a folder's scenario of the same name wins).

    A value: a reload builds a new one and swaps the reference, so a request sees the old set or the new
    one, never a mix. `missing`: the active scenario kept, as last loaded, while the folder no longer
    defines it (name -> its file).
    """

    shipped: Builtins
    own: Mapping[str, Scenario] = field(default_factory=dict)
    own_indexes: Mapping[str, RuleIndex] = field(default_factory=dict)
    missing: Mapping[str, str] = field(default_factory=dict)

    @property
    def builtins(self) -> Mapping[str, Scenario]:
        return self.shipped.loaded().scenarios

    @property
    def unfit_builtins(self) -> Mapping[str, str]:
        return self.shipped.loaded().unfit

    @cached_property
    def scenarios(self) -> Mapping[str, Scenario]:
        return {**self.builtins, **self.own}

    @cached_property
    def indexes(self) -> Mapping[str, RuleIndex]:
        return {**self.shipped.loaded().indexes, **self.own_indexes}

    def with_own(self, own: Mapping[str, Scenario], indexes: Mapping[str, RuleIndex],
                 missing: Mapping[str, str] | None = None) -> ScenarioSet:
        return ScenarioSet(self.shipped, own, indexes, missing or {})

    def get(self, name: str) -> Scenario:
        """The scenario `name`; UnknownScenario names those there are (and why a built-in is left out)."""
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

    def activating(self, name: str | None) -> ScenarioSet:
        """This set once `name` is made active: a kept missing scenario is kept only while it is active."""
        if not self.missing or name in self.missing:
            return self
        own = {n: s for n, s in self.own.items() if n not in self.missing}
        return self.with_own(own, {n: i for n, i in self.own_indexes.items() if n in own})

    def reloaded(self, active: str | None, loaded: FolderLoad) -> tuple[ScenarioSet, list[str]]:
        """The set after a good reload, for a session whose active scenario is `active`, and what to log.

        The active scenario stays active, as last loaded, while the folder no longer defines it (a file
        deleted, a `git checkout` half-way), and is loaded again when it is back.
        """
        own, indexes, missing = dict(loaded.scenarios), dict(loaded.indexes), {}
        notes = []
        if active is not None and active not in own and active in self.own:
            kept = self.own[active]
            gone = f"no longer defines {active!r}" if any(s.file == kept.file for s in own.values()) else "is gone"
            own[active], indexes[active], missing[active] = kept, self.own_indexes[active], kept.file
            notes.append(f"{kept.file} {gone}; the active scenario {active!r} stays active as last loaded "
                         "until its file is back")
        elif active is not None and active in self.missing:
            notes.append(f"the active scenario {active!r} is back ({own[active].file}); loaded, still active")
        return self.with_own(own, indexes, missing), notes

    def changed(self, after: ScenarioSet, loaded: FolderLoad) -> set[str]:
        """The scenarios whose rule counters start afresh going from this set to `after`: those that changed
        rules (a scenario reloaded with the same rules carries on)."""
        return {name for name, old in self.scenarios.items()
                if after.scenarios.get(name) is not old and loaded.unchanged.get(name) is not old}


class ScenarioFolder:
    """The scenarios folder of a stub (None: only the built-ins), and its last good load, which every new
    session starts from. `errors`: the last reload's, published until a good one (admin GET scenarios)."""

    def __init__(self, path: Path | None, spec: Spec, contract: ScenarioContract) -> None:
        self.path = path
        self.spec = spec
        self.contract = contract
        self.current = ScenarioSet(Builtins(spec, contract))
        self.errors: list[ScenarioError] = []
        # Each name's last loaded scenario, also once its file is gone: a session may keep it active meanwhile.
        self.seen: dict[str, Scenario] = {}
        self.snapshot: FolderSnapshot | None = None  # --watch: the files as they were last loaded

    def watch(self) -> None:
        """Take the files' snapshot before the first load, so an edit made meanwhile is seen as one."""
        if self.path is not None:
            self.snapshot = FolderSnapshot(self.path)
            self.snapshot.scan()

    def load(self) -> FolderLoad:
        """Load the folder and index its rules, touching nothing a request reads: safe in a thread while
        the event loop serves (install() then swaps the result in on the loop)."""
        assert self.path is not None
        before = self.seen
        scenarios, errors = load_scenarios(self.path, self.spec, self.contract)
        if errors:
            return FolderLoad({}, {}, errors)
        unchanged = {name: old for name, s in scenarios.items()
                     if (old := before.get(name)) is not None and same_rules(old, s)}
        return FolderLoad(scenarios, {name: RuleIndex(s) for name, s in scenarios.items()}, [], unchanged)

    def install(self, loaded: FolderLoad) -> bool:
        """Make a load the one new sessions start from; False (the errors published) when it is broken."""
        self.errors = list(loaded.errors)
        if loaded.errors:
            return False
        self.current = self.current.with_own(loaded.scenarios, loaded.indexes)
        self.seen = {**self.seen, **loaded.scenarios}
        self.contract.rendered.clear()
        return True
