"""Control: the stub's one mutable state (spec, journal, scenarios), shared by the admin API and Stub."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from plantstub._gc import collector_paused
from plantstub.config import Settings
from plantstub.contract.load import load_spec
from plantstub.contract.model import Operation, Spec
from plantstub.contract.operations import ServedOperation, serve
from plantstub.contract.router import Router
from plantstub.errors import ConfigError, ScenarioError, UnknownScenario
from plantstub.recording.coverage import Coverage, Tally, merge, report_of
from plantstub.recording.journal import Journal
from plantstub.scenarios.contract import ScenarioContract
from plantstub.scenarios.declared import MAX_RULES, DeclaredRule, DeclaredRules
from plantstub.scenarios.load import ScenarioLoadError, load_builtin_scenarios, load_rule, load_scenarios
from plantstub.scenarios.model import Scenario
from plantstub.scenarios.select import RuleCounters, RuleIndex, same_rules
from plantstub.scenarios.watch import FolderSnapshot
from plantstub.store import Store
from plantstub.store.records import MAX_BYTES
from plantstub.webhooks.dispatch import Webhooks

NOT_STATEFUL = ("state: this stub keeps no records; start it with --stateful (PLANTSTUB_STATEFUL=1, "
                "Stub(stateful=True), pytest --plantstub-stateful)")

SESSION_SHARE = 16  # a session keeps at most 1/16 of the stub's bytes of calls, records and deliveries


class NotStateful(LookupError):
    """A state was asked of a stub started without --stateful."""


@dataclass
class FolderLoad:
    """The scenarios folder loaded off the event loop, ready to install in one step on it."""

    scenarios: dict[str, Scenario]
    indexes: dict[str, RuleIndex]
    errors: list[ScenarioError]
    # name -> the installed scenario it answers like (same rules): its rule counters carry on
    unchanged: dict[str, Scenario] = field(default_factory=dict)


class Control:
    """Everything a running stub knows; built once before the server starts, then mutated in place."""

    def __init__(self, settings: Settings, spec: Spec | None = None, *, shared: Control | None = None) -> None:
        """`shared`: the stub's main Control, whose spec, scenarios and settings a session Control reads."""
        self.settings = settings
        self.main = shared
        with collector_paused():
            self.spec: Spec = (shared.spec if shared else spec if spec is not None
                               else load_spec(settings.spec, root=settings.spec_root))
            self.router: Router = shared.router if shared else Router(self.spec)
            # Default answers are built now (serve() warns about the operations left without one), with every
            # schema compiled once for the spec; each request check is put together on the first request of its
            # operation (a tenth of a millisecond: its schemas are compiled already). A broken schema stopped
            # load_spec.
            self.served: dict[Operation, ServedOperation] = shared.served if shared else serve(self.spec)
        self.coverage = Coverage(self.spec)
        self.counters = RuleCounters()
        self.scenarios: dict[str, Scenario] = {}
        self.indexes: dict[str, RuleIndex] = {}
        self.load_errors: list[ScenarioError] = []
        self.active: str | None = None
        # The active scenario kept, last loaded, while the folder no longer defines it: name -> its file.
        self.missing: dict[str, str] = {}
        self._own: dict[str, Scenario] = {}  # the folder's scenarios (and a kept missing one)
        self._own_indexes: dict[str, RuleIndex] = {}
        # Only the folder it was given: Stub() and create_app() never read ./scenarios on their own.
        self.scenarios_dir = settings.scenarios
        # Checks rules at load, and templated replies once rendered, with the schemas compiled above.
        self.contract: ScenarioContract = (shared.contract if shared else
                                           ScenarioContract(self.spec, self.served, self.router))
        self.builtins: dict[str, Scenario]
        self.unfit_builtins: dict[str, str]
        self.builtins, self.unfit_builtins = (
            (shared.builtins, shared.unfit_builtins) if shared else load_builtin_scenarios(self.spec, self.contract))
        self._builtin_indexes: dict[str, RuleIndex] = (shared._builtin_indexes if shared else
                                 {name: RuleIndex(s) for name, s in self.builtins.items()})
        # --stateful: the records; None otherwise, and the request path then does nothing more than before.
        # A session's memory bounds are a share of the stub's: --max-sessions of them cannot each take the whole.
        share = 1 if shared is None else SESSION_SHARE
        self.store = Store(self.contract.resources, most_bytes=MAX_BYTES // share) if settings.stateful else None
        self.actions = self.contract.resources.actions if self.store is not None else {}
        # --watch: the files as they are before the first load, so an edit made meanwhile is seen as one.
        self.snapshot: FolderSnapshot | None = None
        # The stub's sessions (its main Control only): /__session/{id} and X-Plantstub-Session.
        self.sessions = Sessions(self) if shared is None else None
        if shared is not None:  # a session: the scenarios the stub has loaded now (a reload reaches it later)
            own = {n: s for n, s in shared._own.items() if n not in shared.missing}
            self._install(own, {n: shared._own_indexes[n] for n in own}, {})
            self.load_errors = list(shared.load_errors)
        elif self.scenarios_dir is not None:
            if not self.scenarios_dir.is_dir():
                raise ConfigError(f"--scenarios={str(self.scenarios_dir)!r}: no such folder")
            if settings.watch:
                self.snapshot = FolderSnapshot(self.scenarios_dir)
                self.snapshot.scan()
            loaded = self.load_folder()
            if loaded.errors:
                raise ConfigError("scenarios cannot load:\n" + "\n".join(map(str, loaded.errors)))
            self._install(loaded.scenarios, loaded.indexes, {})
        else:
            self._install({}, {}, {})
        if settings.scenario is not None:
            try:
                self.use(settings.scenario)
            except UnknownScenario as exc:
                raise ConfigError(f"--scenario={settings.scenario!r}: {exc.args[0]}") from None
        self.webhooks = Webhooks(self.spec, settings.webhook)  # a --webhook NAME the spec lacks: SubscriptionError
        self.webhooks.log.max_bytes //= share
        self.journal = Journal(settings.journal_size, settings.journal if shared is None else None,
                               max(settings.journal_bytes // share, 1), settings.journal_flush)
        if shared is not None:  # one journal file for the stub: a session's calls go to it too
            self.journal.file = shared.journal.file
        # Rules from code (stub.when(...), admin POST rules): tried before the active scenario's; gone on reset.
        self.declared = DeclaredRules()

    # -- scenarios ---------------------------------------------------------------------------
    def _install(self, own: dict[str, Scenario], indexes: dict[str, RuleIndex], missing: dict[str, str]) -> None:
        """Swap in a scenario set (the folder's over the built-ins: a folder's scenario of the same name
        wins) by replacing references, so a request sees the old set or the new one, never a mix."""
        self._own, self._own_indexes, self.missing = own, indexes, missing
        self.scenarios = {**self.builtins, **own}
        self.indexes = {**self._builtin_indexes, **indexes}
        self.contract.rendered.clear()

    def load_folder(self) -> FolderLoad:
        """Load the folder and index its rules, touching nothing a request reads: safe in a thread while
        the event loop serves (install() then swaps the result in on the loop)."""
        assert self.scenarios_dir is not None
        before = self._own
        scenarios, errors = load_scenarios(self.scenarios_dir, self.spec, self.contract)
        if errors:
            return FolderLoad({}, {}, errors)
        unchanged = {name: old for name, s in scenarios.items()
                     if (old := before.get(name)) is not None and same_rules(old, s)}
        return FolderLoad(scenarios, {name: RuleIndex(s) for name, s in scenarios.items()}, [], unchanged)

    def install(self, loaded: FolderLoad) -> list[str]:
        """Install a reload (--watch), on the event loop; returns what to log.

        A broken folder installs nothing: the last good set keeps serving, the errors are published
        (admin `GET scenarios`). The active scenario stays active, as last loaded, while the folder no
        longer defines it (a file deleted, a `git checkout` half-way), and is loaded again when it is back.
        Rule counters carry on for each scenario whose rules did not change; the others start afresh.
        """
        if loaded.errors:
            self.load_errors = list(loaded.errors)
            return [*map(str, loaded.errors), f"kept the last good scenarios ({len(self.scenarios)})"]
        own, indexes, missing = dict(loaded.scenarios), dict(loaded.indexes), {}
        notes = []
        active = self.active
        if active is not None and active not in own and active in self._own:
            kept = self._own[active]
            gone = f"no longer defines {active!r}" if any(s.file == kept.file for s in own.values()) else "is gone"
            own[active], indexes[active], missing[active] = kept, self._own_indexes[active], kept.file
            notes.append(f"{kept.file} {gone}; the active scenario {active!r} stays active as last loaded "
                         "until its file is back")
        elif active in self.missing:
            notes.append(f"the active scenario {active!r} is back ({own[active].file}); loaded, still active")
        previous = self.scenarios
        self._install(own, indexes, missing)
        self.load_errors = []
        self.counters.forget({
            name for name, old in previous.items()
            if self.scenarios.get(name) is not old and loaded.unchanged.get(name) is not old
        })
        if self.sessions is not None:  # every session serves the reloaded set, keeping its own active scenario
            for session in self.sessions.controls():
                session.install(loaded)
        notes.append(f"reloaded {len(loaded.scenarios)} scenario(s) from {self.scenarios_dir}")
        return notes

    def reload_scenarios(self) -> list[str]:
        """load_folder() then install(), in one go (for callers without an event loop)."""
        return self.install(self.load_folder())

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
        if self.missing and name not in self.missing:  # a kept scenario is kept only while active
            own = {n: s for n, s in self._own.items() if n not in self.missing}
            self._install(own, {n: i for n, i in self._own_indexes.items() if n in own}, {})
        self.active = name
        self.counters.clear()
        if self.store is not None:  # activating a scenario seeds the store with its `state:` (or empties it)
            self.store.use_seed(None if name is None else self.scenarios[name].state)

    def reset(self) -> None:
        """Forget recorded calls, rule counters, rules from code and deliveries; start-up subscriptions come back;
        the active scenario stays, and its `state:` is restored."""
        self.webhooks.reset()
        self.journal.clear()
        self.counters.clear()
        self.coverage.clear()
        self.declared.clear()
        if self.store is not None:  # the active scenario's `state:` as loaded now (--watch may have changed it)
            scenario = self.scenarios.get(self.active) if self.active is not None else None
            self.store.use_seed(scenario.state if scenario is not None else None)

    # -- rules from code -----------------------------------------------------------------------
    def add_rule(self, data: Any, file: str, line: int | None = None) -> DeclaredRule:
        """Check one rule in the scenario format against the spec and keep it, ahead of the scenario's rules.

        :raises ScenarioLoadError: every problem, at `file:line` and the location inside the rule.
        """
        if len(self.declared.rules) >= MAX_RULES:
            message = f"{MAX_RULES:,} rules from code are declared already; remove some (or reset) first"
            raise ScenarioLoadError([ScenarioError(file, line, "", message)])
        rule = load_rule(data, self.contract, file, line)
        return self.declared.add(rule, data, f"{file}:{line}" if line else file)

    # -- the store (--stateful) --------------------------------------------------------------
    def _store(self) -> Store:
        if self.store is None:
            raise NotStateful(NOT_STATEFUL)
        return self.store

    def state(self) -> dict[str, list[dict[str, Any]]]:
        """Every collection of the store and its records, in creation order."""
        return self._store().dump()

    def set_state(self, state: Any) -> list[tuple[str, str]]:
        """Replace the store's records with `state`; the problems (location, message) instead when it is not one."""
        store = self._store()
        problems = store.problems(state)
        if not problems:
            store.replace(state)
        return problems

    def coverage_report(self) -> dict[str, Any]:
        """For each operation and each response it declares: how many recorded calls got it."""
        return self.coverage.report()

    def close(self) -> None:
        if self.main is None:  # a session shares the stub's journal file
            self.journal.close()


class SessionLimit(LookupError):
    """A new session was asked for while --max-sessions are live; the message names the cap."""


class Sessions:
    """The stub's live sessions by id, least recently used first; each is a Control of its own that shares
    the main Control's spec, scenarios and settings. Idle ones end when the table is next touched, and
    leave their coverage to the stub's total."""

    def __init__(self, main: Control) -> None:
        self.main = main
        self.idle = main.settings.session_idle
        self.cap = main.settings.max_sessions
        self._live: dict[str, tuple[Control, float]] = {}  # id -> (control, last used), least recent first
        self.ended = 0
        self.ended_tally: Tally = {}  # the coverage of the sessions that ended
        self._closing: set[asyncio.Task[None]] = set()  # ended sessions' webhook senders, stopping

    def get(self, sid: str, now: float | None = None) -> Control:
        """Session `sid`, created on first use, marked used now.

        :raises SessionLimit: when it is new and --max-sessions are live.
        """
        now = time.monotonic() if now is None else now
        self.expire(now)
        entry = self._live.pop(sid, None)  # popped and put back: the table stays in order of last use
        control = entry[0] if entry is not None else self._create(sid)
        self._live[sid] = (control, now)
        return control

    def _create(self, sid: str) -> Control:
        if len(self._live) >= self.cap:
            raise SessionLimit(
                f"session {sid!r}: this stub already serves {self.cap} sessions, its cap (--max-sessions, "
                f"PLANTSTUB_MAX_SESSIONS); end one with DELETE /__plantstub/sessions/ID, or wait: a session "
                f"unused for {self.idle:g} s ends (--session-idle)")
        return Control(self.main.settings, shared=self.main)

    def expire(self, now: float | None = None) -> None:
        """End the sessions unused for longer than --session-idle."""
        limit = (time.monotonic() if now is None else now) - self.idle
        while self._live:
            sid, (_, used) = next(iter(self._live.items()))
            if used > limit:
                break
            self.end(sid)

    def end(self, sid: str) -> bool:
        """End session `sid` (its coverage stays in the total); False when there is none."""
        entry = self._live.pop(sid, None)
        if entry is None:
            return False
        control = entry[0]
        merge(self.ended_tally, control.coverage.tally())
        control.close()
        if control.webhooks.sender.queue is not None:  # its sender started: stop its workers, on the loop
            try:
                task = asyncio.get_running_loop().create_task(control.webhooks.close())
            except RuntimeError:  # no loop runs here (the stub stopped): its workers stopped with it
                pass
            else:
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)
        self.ended += 1
        return True

    async def close(self) -> None:
        """End every session's webhook sender (the stub stops)."""
        for control in self.controls():
            await control.webhooks.close()
        for task in list(self._closing):
            await task

    def controls(self) -> list[Control]:
        return [control for control, _ in self._live.values()]

    def listing(self) -> list[tuple[str, Control, float]]:
        """(id, control, seconds since last use) of each live session, most recently used first."""
        now = time.monotonic()
        self.expire(now)
        return [(sid, control, now - used) for sid, (control, used) in reversed(self._live.items())]

    def __len__(self) -> int:
        return len(self._live)

    def total_coverage(self) -> dict[str, Any]:
        """Coverage summed over the main Control, the live sessions and those that ended."""
        tally: Tally = {}
        merge(tally, self.ended_tally)
        for control in (self.main, *self.controls()):
            merge(tally, control.coverage.tally())
        return report_of(self.main.spec, tally)
