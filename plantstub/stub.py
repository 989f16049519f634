"""Stub: the server on a free port in a background thread, for tests in any event loop (or none)."""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from plantstub._gc import collector_paused
from plantstub.config import Settings, build_settings
from plantstub.contract.load import load_spec
from plantstub.errors import PlantstubError, ScenarioError
from plantstub.recording.call import Call
from plantstub.recording.checks import CallChecks
from plantstub.recording.waiting import expectation_of, wait_for_calls
from plantstub.scenarios.declared import DeclaresRules
from plantstub.scenarios.load import ScenarioLoadError
from plantstub.server.remote import RemoteStub
from plantstub.server.runner import start
from plantstub.server.sessions import SESSION_PREFIX, new_id
from plantstub.server.state import Control, NotStateful, Sessions
from plantstub.webhooks.deliveries import Delivery, DeliveryChecks

_R = TypeVar("_R")


def _finish_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what still runs (a reply waiting out its delay) and let it end, as asyncio.run() does.

    Closing the loop over a pending task makes Python print "Task was destroyed but it is pending!"
    into the user's test run; a cancelled handler still records its call on the way out.
    """
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())


class Stub(CallChecks, DeclaresRules, DeliveryChecks):
    """A running plantstub, each instance standing alone.

    ``with Stub(scenarios="scenarios", scenario="flaky") as stub: ...`` (or ``async with``) starts it
    on a free port; ``stub.url`` is its base URL.

    :param spec: OpenAPI document to serve (default: the bundled Plant Store).
    :param scenarios: folder of scenario files.
    :param scenario: scenario active at start.
    :param port: port to listen on (default 0: a free one; PLANTSTUB_PORT is not read here).
    :param settings: a complete Settings instead of the keyword arguments.
    :param options: other Settings fields (spec_root, stateful, host, journal, journal_size, max_body, read_timeout,
        log_format; webhook: a list of "URL" or "NAME=URL" subscriptions); ``stateful=True`` makes the stub
        remember what it is told (``stub.state``).
    """

    __test__ = False

    def __init__(
        self,
        *,
        spec: str | Path | None = None,
        scenarios: str | Path | None = None,
        scenario: str | None = None,
        port: int = 0,
        settings: Settings | None = None,
        **options: Any,
    ) -> None:
        if settings is None:
            settings = build_settings({"spec": spec, "scenarios": scenarios, "scenario": scenario, "port": port, **options})
        self.settings = settings
        self.url = ""
        self._control: Control | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._session: tuple[Sessions, str] | None = None  # a view made by session(): its table and id

    @staticmethod
    def connect(url: str, admin_token: str | None = None) -> RemoteStub:
        """Drive a running stub (a sidecar) over its admin API, with the methods of an in-process Stub.

        :param url: its base URL, e.g. ``http://localhost:4010`` (or a session's, ``.../__session/ID``).
        :param admin_token: the token of its --admin-token, when it has one.
        :raises PlantstubError: when nothing answers there as a plantstub.
        """
        return RemoteStub(url, admin_token).start()

    def session(self) -> Stub:
        """An isolated view of this stub: its own journal, counters, scenario and state, and its own `url`
        (``<url>/__session/<new id>``); leaving its ``with`` block (or ``stop()``) ends the session."""
        main = self.control.main or self.control
        assert main.sessions is not None  # a main Control always has its table
        sid = new_id()
        view = Stub(settings=self.settings)
        view._control = self._in_loop(main.sessions.get, sid)
        view._thread, view._loop, view._session = self._thread, self._loop, (main.sessions, sid)
        view.url = f"{self.url.partition(SESSION_PREFIX)[0]}{SESSION_PREFIX}{sid}"
        return view

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Stub:
        """Start serving (spec and scenario errors raise here, in the caller's thread)."""
        if self._thread is not None:
            return self
        with collector_paused():  # as Control loads: a collection while a big spec loads walks it all again
            spec = load_spec(self.settings.spec, root=self.settings.spec_root, cache=self.settings.spec_cache)
        control = self._control = Control(self.settings, spec)
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = self._loop = asyncio.new_event_loop()
            try:
                running = loop.run_until_complete(start(control, self.settings.host, self.settings.port))
            except BaseException as exc:  # noqa: BLE001 - reported to the caller below, in its thread
                failure.append(exc)
                ready.set()
                loop.close()
                return
            self.url = running.url
            self._stop = asyncio.Event()
            ready.set()
            try:
                loop.run_until_complete(self._stop.wait())
            finally:
                loop.run_until_complete(running.stop())
                _finish_tasks(loop)
                loop.close()

        self._thread = threading.Thread(target=run, name="plantstub", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread = None
            control.close()
            exc = failure[0]
            if isinstance(exc, OSError):
                raise PlantstubError(f"cannot listen on {self.settings.host}:{self.settings.port}: {exc}") from exc
            raise exc
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread (the journal file, if any, is flushed and closed); a session
        view ends its session instead."""
        if self._session is not None:
            sessions, sid = self._session
            if self._thread is not None and self._thread.is_alive():
                self._in_loop(sessions.end, sid)
            return
        if self._thread is None:
            return
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
        self._thread = None

    def __enter__(self) -> Stub:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def __aenter__(self) -> Stub:
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await asyncio.to_thread(self.stop)

    # -- control ----------------------------------------------------------------------------
    @property
    def control(self) -> Control:
        if self._control is None:
            raise PlantstubError("the stub is not started; use `with Stub(...) as stub:` or stub.start()")
        return self._control

    def _in_loop(self, fn: Callable[..., _R], *args: Any) -> _R:
        # State belongs to the server's loop: mutate it there, and wait for it.
        if self._loop is None or self._thread is None:
            return fn(*args)

        async def call() -> _R:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(call(), self._loop).result(10)

    @property
    def calls(self) -> list[Call]:
        """The recorded calls, oldest first (a snapshot: safe while requests arrive)."""
        return self.control.journal.snapshot()

    def use(self, name: str | None) -> None:
        """Make scenario `name` active (None: no scenario); its rule counters start again."""
        self._in_loop(self.control.use, name)

    def reset(self) -> None:
        """Forget recorded calls, rule counters, rules from code and deliveries; subscriptions are those of the start
        again."""
        self._in_loop(self.control.reset)

    def coverage(self) -> dict[str, Any]:
        return self._in_loop(self.control.coverage_report)

    # -- rules from code ------------------------------------------------------------------------
    def _add_rule(self, rule: dict[str, Any], file: str, line: int | None) -> str:
        return self._in_loop(self.control.add_rule, copy.deepcopy(rule), file, line).id

    @property
    def rules(self) -> list[dict[str, Any]]:
        """The rules from code, in the order tried: ``{"id", "source", "uses", "rule"}`` each."""
        return self._in_loop(self.control.declared.listing)

    def remove_rule(self, rule_id: str) -> bool:
        """Remove one rule from code; False when there is no such rule."""
        return self._in_loop(self.control.declared.remove, rule_id)

    # -- the store (stateful=True) -------------------------------------------------------------
    @property
    def state(self) -> dict[str, list[dict[str, Any]]]:
        """Every collection and its records in creation order, ``{"/plants": [...]}`` (a copy)."""
        try:
            return self._in_loop(self.control.state)
        except NotStateful as exc:
            raise PlantstubError(str(exc)) from None

    def set_state(self, state: dict[str, list[dict[str, Any]]]) -> None:
        """Replace the records (a reset restores the active scenario's `state:`).

        :raises ScenarioError: every problem, as a scenario's `state:` would get them, one per line.
        """
        try:
            problems = self._in_loop(self.control.set_state, state)
        except NotStateful as exc:
            raise PlantstubError(str(exc)) from None
        if problems:
            raise ScenarioLoadError([ScenarioError("stub.set_state()", None, w, m) for w, m in problems])

    # -- webhooks ---------------------------------------------------------------------------
    def subscribe(self, url: str, name: str | None = None) -> None:
        """Send webhook `name` (a key of the spec's `webhooks`; None: every one) to `url` (http or https).

        :raises SubscriptionError: for a name the spec does not declare or a URL that is not http(s).
        """
        self._in_loop(self.control.webhooks.subscriptions.subscribe, url, "*" if name is None else name, "url")

    @property
    def deliveries(self) -> list[Delivery]:
        """The webhooks and callbacks sent so far (each with the receiver's answer), oldest first."""
        return self.control.webhooks.log.snapshot()

    def _pending_deliveries(self) -> int:
        return self.control.webhooks.sender.pending

    # -- waiting ------------------------------------------------------------------------------
    def wait_for_calls(self, n: int, timeout: float = 5.0, **filters: Any) -> list[Call]:
        """Wait until `n` calls like this have been recorded (counting those already there); returns every
        matching call. Blocks the calling thread: from an async test, ``await asyncio.to_thread(...)``.

        :param filters: those of assert_called: method, path, headers, query, body (partial, matchers), status.
        :raises CallAssertionError: after `timeout` seconds, with what arrived and the closest calls.
        """
        __tracebackhide__ = True
        return wait_for_calls(self.control.journal, expectation_of(filters, "wait_for_calls(): "), n, timeout)
