"""Session: what one test changes and records (journal, coverage, counters, active scenario, rules from code,
store, subscriptions, deliveries) over a shared Runtime; the stub's default session is one, each sidecar session
another. Its methods are the in-process side of the control surface (plantstub.server.surface)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from plantstub._budget import Budget, OverBudget
from plantstub.contract.dynamic import Draws
from plantstub.contract.outgoing import problem
from plantstub.errors import CallAssertionError, ConfigError, ScenarioError, UnknownScenario
from plantstub.recording.call import Call, Record
from plantstub.recording.coverage import Coverage
from plantstub.recording.journal import Journal
from plantstub.scenarios.declared import DeclaredRules, NoRoom, TooManyRules
from plantstub.scenarios.library import FolderLoad, ScenarioSet
from plantstub.scenarios.load import RuleOverBudget, ScenarioLoadError, load_rule
from plantstub.scenarios.model import Rule
from plantstub.scenarios.rule_bytes import rule_bytes, value_bytes
from plantstub.scenarios.select import RuleCounters
from plantstub.server.limits import Limits
from plantstub.server.runtime import Runtime
from plantstub.webhooks.deliveries import Delivery, Sent
from plantstub.webhooks.dispatch import Webhooks
from plantstub.webhooks.outbox import GRACE, Outbox

if TYPE_CHECKING:  # each imported where it is first needed: a stub without the feature never pays for it
    from plantstub.proxy.record import Recorder, Saved  # --record
    from plantstub.recording.waiting import Expectation  # a wait for calls
    from plantstub.store import Store  # --stateful

NOT_STATEFUL = ("state: this stub keeps no records; start it with --stateful (PLANTSTUB_STATEFUL=1, "
                "Stub(stateful=True), pytest --plantstub-stateful)")

WAITERS = "waiters"  # the memory budget's kind for waits in progress
WAITER_BYTES = 4096  # a wait's own objects (the waiter, its event, its task), about


class NotStateful(LookupError):
    """A state was asked of a stub started without --stateful."""


class Session:
    """One test's state over `runtime`; `shares_file`: the stub's default session, whose journal file this
    session's calls go to as well (None: this is the default session, which opens the file); `sid`: a sidecar
    session's id (the journal file's lines name it); `seed_key`: what its dynamic answers are drawn from besides
    the stub's seed (default: its id; the default session's, the seed alone)."""

    def __init__(self, runtime: Runtime, limits: Limits, stub_memory: Budget, shares_file: Session | None = None,
                 outbox: Outbox | None = None, sid: str | None = None, seed_key: str | None = None) -> None:
        settings = runtime.settings
        self.runtime = runtime
        self.limits = limits
        # What this session's clients send, held, in bytes: every holder below draws from it (and so from the stub's).
        self.memory = Budget(limits.memory, parent=stub_memory)
        self.tally = Coverage(runtime.spec)
        self.counters = RuleCounters()
        self.scenarios: ScenarioSet = runtime.folder.current
        self.active: str | None = None
        # --stateful: the records; None otherwise, and the request path then does nothing more than before.
        self.store: Store | None = None
        if settings.stateful:
            from plantstub.store import Store

            self.store = Store(runtime.contract.resources, most_bytes=limits.store_bytes, memory=self.memory)
        self.actions = runtime.contract.resources.actions if self.store is not None else {}
        self.webhooks = Webhooks(runtime.spec, settings.webhook, limits.delivery_bytes, self.memory, outbox,
                                 settings.name_of("webhook"))
        self.sid = sid  # a sidecar session's id; None for the stub's default session
        # Dynamic answers (--dynamic, `Prefer: dynamic=true`): this session's own random streams.
        self.draws = Draws(runtime.seed, seed_key if seed_key is not None else sid)
        self.journal = Journal(settings.journal_size, settings.journal if shares_file is None else None,
                               limits.journal_bytes, settings.journal_flush, self.memory, sid, settings.name_of("journal"))
        if shares_file is not None:  # one journal file for the stub
            self.journal.file = shares_file.journal.file
        self._owns_file = shares_file is None
        # Rules from code (stub.when(...), admin POST rules): tried before the active scenario's; gone on reset.
        self.declared = DeclaredRules(self.memory)
        # --record: this session's exchanges with the real service, kept until a save writes them (a reset keeps them)
        forwarder = runtime.forwarder
        self.recorder: Recorder | None = None
        if settings.record is not None and forwarder is not None:
            from plantstub.proxy.record import Recorder

            self.recorder = Recorder(settings.record, forwarder.shown, self.memory, settings.record_secrets != "keep",
                                     settings.record_ignore_query, sid)
        if settings.scenario is not None:
            try:
                self.use(settings.scenario)
            except UnknownScenario as exc:
                raise ConfigError(f"{settings.name_of('scenario')}={settings.scenario!r}: {exc.args[0]}") from None

    # -- scenarios ---------------------------------------------------------------------------
    def use(self, name: str | None) -> None:
        """Make `name` the active scenario (None: no scenario); rule counters start again."""
        if name is not None:
            self.scenarios.get(name)
        self.scenarios = self.scenarios.activating(name)
        self.active = name
        self.counters.clear()
        if self.store is not None:  # activating a scenario seeds the store with its `state:` (or empties it)
            self.store.use_seed(None if name is None else self.scenarios.scenarios[name].state)

    def rebase(self, loaded: FolderLoad) -> list[str]:
        """Serve a good reload of the folder (--watch), keeping this session's active scenario; what to log."""
        after, notes = self.scenarios.reloaded(self.active, loaded)
        changed = self.scenarios.changed(after, loaded)
        self.scenarios = after
        self.counters.forget(changed)
        return notes

    def scenario_listing(self) -> dict[str, Any]:
        """The scenarios this session can activate, the folder's load errors and the built-ins left out."""
        current, folder = self.scenarios, self.runtime.folder
        return {
            "active": self.active,
            "folder": str(folder.path) if folder.path else None,
            "scenarios": [
                {"name": s.name, "description": s.description, "file": s.file, "rules": len(s.rules),
                 "validate_requests": s.validate_requests, "builtin": current.builtins.get(s.name) is s,
                 "missing": s.name in current.missing}  # --watch: kept, as last loaded, while its file is gone
                for s in sorted(current.scenarios.values(), key=lambda s: s.name)
            ],
            "errors": [problem(e.at, e.message) for e in folder.errors],
            "builtins_left_out": dict(current.unfit_builtins),  # built-ins that do not fit this spec, and why
        }

    def reset(self, seed_key: str | None = None) -> None:
        """Forget recorded calls, rule counters, rules from code and deliveries; start-up subscriptions come back;
        the active scenario stays, and its `state:` is restored. Dynamic answers are drawn from the start again,
        from the seed and `seed_key` when given (the pytest fixture gives the test's node id), else the key they had."""
        self.draws.restart(self.draws.key if seed_key is None else seed_key)
        self.webhooks.reset()
        self.journal.clear()
        self.counters.clear()
        self.tally.clear()
        self.declared.clear()
        if self.store is not None:  # the active scenario's `state:` as loaded now (--watch may have changed it)
            scenario = self.scenarios.scenarios.get(self.active) if self.active is not None else None
            self.store.use_seed(scenario.state if scenario is not None else None)

    # -- calls and coverage -------------------------------------------------------------------
    @property
    def calls(self) -> list[Call]:
        """The recorded calls, oldest first (a snapshot: safe while requests arrive)."""
        return self.journal.snapshot()

    def records(self) -> list[Record]:
        """The recorded calls as kept (compact: nothing parsed yet)."""
        return self.journal.records()

    def clear_calls(self) -> int:
        """Forget the recorded calls and their coverage; how many were kept."""
        count = self.journal.kept
        self.journal.clear()
        self.tally.clear()
        return count

    def coverage(self) -> dict[str, Any]:
        """For each operation and each response it declares: how many recorded calls got it."""
        return self.tally.report()

    async def wait_for_calls(self, expectation: Expectation, n: int, timeout: float) -> tuple[list[Call], str | None]:
        """Wait on the loop until `n` calls meet `expectation`: the matching calls still kept, and the failure text or
        None. :raises WaitOverBudget: when the session's memory budget cannot hold the wait."""
        from plantstub.recording.waiting import WaitOverBudget, wait_for_calls_async

        try:
            with self._waiting(expectation):
                return await wait_for_calls_async(self.journal, expectation, n, timeout)
        except OverBudget as exc:
            raise WaitOverBudget(self._no_room_to_wait(exc.size)) from None

    def wait_from_thread(self, expectation: Expectation, n: int, timeout: float) -> list[Call]:
        """Wait, blocking a thread other than the loop's, until `n` calls meet `expectation`; CallAssertionError
        after `timeout` seconds, or at once when the session's memory budget cannot hold the wait."""
        __tracebackhide__ = True
        from plantstub.recording.waiting import wait_for_calls

        try:
            with self._waiting(expectation):
                return wait_for_calls(self.journal, expectation, n, timeout)
        except OverBudget as exc:
            raise CallAssertionError(f"plantstub: wait_for_calls(): {self._no_room_to_wait(exc.size)}") from None

    def _waiting(self, expectation: Expectation) -> AbstractContextManager[None]:
        """What a wait holds of the budget while it waits: its filters as parsed, the numbers of up to twice the
        journal's count bound of calls, the waiter itself. :raises OverBudget: (on entering) when they do not fit."""
        size = WAITER_BYTES + 16 * self.journal.size + value_bytes(
            [expectation.body, expectation.headers, expectation.query, expectation.path])
        return self.memory.hold(WAITERS, size)

    def _no_room_to_wait(self, size: int) -> str:
        return self.memory.refusal(size, "this wait", "end other waits, or start the stub with a larger --max-bytes")

    # -- rules from code -----------------------------------------------------------------------
    def add_rule(self, data: Any, file: str, line: int | None = None) -> str:
        """Check one rule in the scenario format against the spec and keep it, ahead of the scenario's rules;
        its id.

        :raises ScenarioLoadError: every problem, at `file:line` and the location inside the rule;
            RuleOverBudget (one) when the session's memory budget cannot hold it: nothing is kept then.
        """
        return self.keep_rule(self.check_rule(data, file, line), data, file, line)

    def check_rule(self, data: Any, file: str, line: int | None = None) -> tuple[Rule, int]:
        """add_rule's check, touching nothing the request path reads (a thread may run it: a big rule takes a
        while): the rule and the bytes it will hold. :raises ScenarioLoadError: as add_rule."""
        try:
            self.declared.check_count()  # before the check, which may take a while
        except TooManyRules as exc:
            raise ScenarioLoadError([ScenarioError(file, line, "", str(exc))]) from None
        rule = load_rule(data, self.runtime.contract, file, line)
        source = f"{file}:{line}" if line else file
        return rule, rule_bytes(rule, data, source)

    def keep_rule(self, checked: tuple[Rule, int], data: Any, file: str, line: int | None = None) -> str:
        """Keep a rule check_rule() gave, ahead of the scenario's rules; its id. :raises RuleOverBudget: as add_rule."""
        rule, size = checked
        try:
            return self.declared.add(rule, data, f"{file}:{line}" if line else file, size).id
        except NoRoom as exc:
            raise RuleOverBudget([ScenarioError(file, line, "", str(exc))]) from None
        except TooManyRules as exc:  # others declared meanwhile (check_rule ran in a thread)
            raise ScenarioLoadError([ScenarioError(file, line, "", str(exc))]) from None

    @property
    def rules(self) -> list[dict[str, Any]]:
        """The rules from code, in the order tried: ``{"id", "source", "uses", "rule"}`` each."""
        return self.declared.listing()

    def rule_entries(self) -> Iterator[dict[str, Any]]:
        """As `rules`, not copied, for writing them (GET rules: the entries are made off the event loop)."""
        return self.declared.entries()

    def rule_entry(self, rule_id: str) -> dict[str, Any] | None:
        """One rule from code as `rules` lists it (a copy), or None when there is no such rule."""
        declared = self.declared.rules.get(rule_id)
        if declared is None:
            return None
        return {"id": rule_id, "source": declared.source, "uses": self.declared.uses_of(rule_id),
                "rule": copy.deepcopy(declared.data)}

    def rule_uses(self, rule_id: str) -> int:
        """How many calls rule `rule_id` has answered (0 when there is no such rule)."""
        return self.declared.uses_of(rule_id)

    def rule_ids(self) -> list[str]:
        """The ids of the rules from code, in the order tried."""
        return list(self.declared.rules)

    def remove_rule(self, rule_id: str) -> bool:
        """Remove one rule from code; False when there is no such rule."""
        return self.declared.remove(rule_id)

    def clear_rules(self) -> int:
        """Remove every rule from code; how many there were."""
        return self.declared.clear()

    # -- the store (--stateful) --------------------------------------------------------------
    def _store(self) -> Store:
        if self.store is None:
            raise NotStateful(NOT_STATEFUL)
        return self.store

    @property
    def state(self) -> dict[str, list[dict[str, Any]]]:
        """Every collection of the store and its records, in creation order."""
        return self._store().dump()

    def set_state(self, state: Any, checked: bool = False) -> list[tuple[str, str]]:
        """Replace the store's records with `state`; the problems (location, message) instead when it is not one.
        `checked`: state_problems() found none already."""
        store = self._store()
        if not checked:
            problems = store.problems(state)
            if problems:
                return problems
        return store.replace(state)

    def state_json(self) -> dict[str, list[bytes]]:
        """As `state`, each record as the JSON the store holds it in (nothing parsed): what GET state writes."""
        return self._store().held()

    def state_problems(self, state: Any) -> list[tuple[str, str]]:
        """What is wrong with `state` as the store's whole state; safe off the event loop (it changes nothing)."""
        return self._store().problems(state)

    # -- webhooks ---------------------------------------------------------------------------
    def subscribe(self, url: str, name: str | None = None) -> None:
        """Send webhook `name` (None: every one) to `url`. :raises SubscriptionError: a name or URL refused."""
        self.webhooks.subscribe(url, "*" if name is None else name)

    @property
    def subscriptions(self) -> dict[str, str]:
        """Webhook name (or `*`) -> the URL it goes to."""
        return self.webhooks.subscribed()

    def replace_subscriptions(self, mapping: dict[Any, Any]) -> None:
        """Every subscription at once; nothing changes when one is refused (SubscriptionError)."""
        self.webhooks.replace(mapping)

    def reset_subscriptions(self) -> dict[str, str]:
        """The start-up subscriptions (--webhook) again, and no other."""
        self.webhooks.unsubscribe()
        return self.subscriptions

    @property
    def deliveries(self) -> list[Delivery]:
        """The webhooks and callbacks sent so far (each with the receiver's answer), oldest first."""
        return self.webhooks.log.snapshot()

    def sent(self) -> list[Sent]:
        """The deliveries as held, oldest first (GET deliveries parses each off the event loop)."""
        return self.webhooks.log.kept()

    def clear_deliveries(self) -> int:
        """Forget the deliveries; how many there were."""
        return self.webhooks.clear()

    def pending_deliveries(self) -> int:
        """How many deliveries of this epoch (since the last reset) are still being sent."""
        return self.webhooks.pending

    # -- recording (--record) -------------------------------------------------------------------
    async def save_recording(self) -> Saved | None:
        """Write what this session recorded since the last save to the next file (built off the event loop); None
        when the stub records nothing. :raises OSError: the file cannot be written (what was recorded is kept)."""
        return None if self.recorder is None else await self.recorder.save(self.runtime.contract)

    async def save_at_end(self) -> int:
        """The save when the stub stops or this session ends, said on stderr; the exchanges it could not write."""
        return 0 if self.recorder is None else await self.recorder.save_at_end(self.runtime.contract)

    def save_now(self) -> int:
        """save_at_end(), with no event loop running (the stub stopped before the session ended)."""
        return 0 if self.recorder is None else self.recorder.save_at_end_here(self.runtime.contract)

    # -- health and the end ---------------------------------------------------------------------
    def problems(self) -> list[dict[str, str]]:
        """What makes the stub degraded, `{"at", "message"}` each: a journal file losing calls, deliveries not sent,
        recorded exchanges dropped or not saved."""
        found = []
        for text in self.journal.problems() + self.webhooks.problems() + (
                self.recorder.problems() if self.recorder is not None else []):
            at, _, message = text.partition(": ")  # each reads `where: what`
            found.append(problem(at, message))
        return found

    def figures(self) -> dict[str, Any]:
        """The journal's and the webhooks' figures, as GET health shows them."""
        journal, hooks = self.journal, self.webhooks
        return {
            "journal": {
                "calls": journal.kept, "pending": journal.pending, "bytes": journal.kept_bytes, "recorded": journal.recorded,
                "dropped": journal.dropped, "dropped_bytes": journal.dropped_bytes, "refused": journal.refused,
                "max_calls": journal.size, "max_bytes": journal.max_bytes, "file_lost": journal.lost,
                "epoch": journal.epoch,
            },
            "webhooks": hooks.figures(),
            "dynamic": {"seed_key": self.draws.key, "answers": self.draws.answers},
            **({"store": self.store.figures()} if self.store is not None else {}),
            **({"proxy": self.runtime.forwarder.figures()} if self.runtime.forwarder is not None else {}),
            **({"recording": self.recorder.figures()} if self.recorder is not None else {}),
            "memory": {"session": self.memory.figures(),
                       "stub": self.memory.parent.figures() if self.memory.parent is not None else None},
        }

    async def stop_sending(self, grace: float = GRACE) -> int:
        """Send the pending deliveries within `grace` seconds, then stop (on the loop); how many were not sent."""
        return await self.webhooks.close(grace)

    def sends(self) -> bool:
        """Whether the webhook sender started (and may have deliveries pending)."""
        return self.webhooks.sender.started

    def close(self) -> None:
        self.memory.release()
        if self._owns_file:  # a sidecar session shares the stub's journal file
            self.journal.close()

