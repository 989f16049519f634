"""Stub: the server on a free port in a background thread, for tests in any event loop (or none)."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from plantstub.client.remote import RemoteStub
from plantstub.config import Settings, build_settings, keyword_name
from plantstub.errors import PlantstubError, ScenarioError
from plantstub.recording.call import Call
from plantstub.recording.checks import CallChecks
from plantstub.recording.waiting import expectation_of
from plantstub.scenarios.declared import DeclaresRules, RuleHandle
from plantstub.scenarios.load import ScenarioLoadError
from plantstub.server.prefixes import SESSION_HEADER, SESSION_PREFIX
from plantstub.server.runner import Running, start
from plantstub.server.runtime import load
from plantstub.server.session import NotStateful, Session
from plantstub.server.sessions import new_id
from plantstub.server.surface import SessionControl, StubControl
from plantstub.server.table import Sessions
from plantstub.server.tls import Throwaway, server_context
from plantstub.webhooks.deliveries import Delivery, DeliveryChecks

_R = TypeVar("_R")
if TYPE_CHECKING:  # the arguments of a function called on the server's loop, typed as the function's (PEP 646)
    from typing_extensions import TypeVarTuple, Unpack

    _Args = TypeVarTuple("_Args")


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


class _Background:
    """A stub's server in a thread of its own, running its event loop; shared by the stub and its session views."""

    def __init__(self, settings: Settings) -> None:
        # tls=True: a throwaway CA and certificate, removed at stop (`ca_file` is what clients trust)
        self.tls = Throwaway(settings.host) if settings.tls else None
        if self.tls is not None:
            settings = dataclasses.replace(settings, tls_cert=self.tls.cert_file, tls_key=self.tls.key_file)
        # A str, not a Path: requests' verify= takes a path only as a str, and httpx reads anything but a str or a
        # bool as an SSLContext.
        self.ca_file = None if self.tls is None else str(self.tls.ca_file)
        self.settings = settings
        try:
            self.context = server_context(settings)
            self.sessions = Sessions(load(settings))  # spec and scenario errors raise here, in the caller's thread
        except BaseException:
            if self.tls is not None:
                self.tls.close()
            raise
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = self._loop = asyncio.new_event_loop()
            try:
                running = loop.run_until_complete(start(self.sessions, self.settings.host, self.settings.port,
                                                        self.context))
            except BaseException as exc:  # noqa: BLE001 - reported to the caller below, in its thread
                failure.append(exc)
                ready.set()
                loop.close()
                return
            self._serve(loop, running, ready)

        self._thread = threading.Thread(target=run, name="plantstub", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread = None
            self.sessions.default.close()
            if self.tls is not None:
                self.tls.close()
            exc = failure[0]
            if isinstance(exc, OSError):
                raise PlantstubError(f"cannot listen on {self.settings.host}:{self.settings.port}: {exc}") from exc
            raise exc

    def _serve(self, loop: asyncio.AbstractEventLoop, running: Running, ready: threading.Event) -> None:
        self.url = running.url
        self._stop = asyncio.Event()
        ready.set()
        try:
            loop.run_until_complete(self._stop.wait())
        finally:
            loop.run_until_complete(running.stop())
            _finish_tasks(loop)
            loop.close()

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def call(self, fn: Callable[[Unpack[_Args]], _R], *args: Unpack[_Args]) -> _R:
        """`fn(*args)` on the server's loop, where state belongs, waiting for it (directly once stopped)."""
        if self._loop is None or not self.alive():
            return fn(*args)

        async def call() -> _R:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(call(), self._loop).result(10)

    def open(self, sid: str, seed_key: str | None = None) -> Session:
        return self.call(functools.partial(self.sessions.open, sid, seed_key=seed_key))

    def end(self, sid: str) -> None:
        if self.alive():
            self.call(self.sessions.end, sid)

    def stop(self) -> None:
        """Stop serving and wait for the thread (the journal file, if any, is flushed and closed)."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)
        self._thread = None
        if self.tls is not None:
            self.tls.close()


class Stub(CallChecks, DeclaresRules, DeliveryChecks):
    """A running plantstub, each instance standing alone.

    ``with Stub(scenarios="scenarios", scenario="flaky") as stub: ...`` (or ``async with``) starts it
    on a free port; ``stub.url`` is its base URL, ending with ``/`` (``http://127.0.0.1:PORT/``).

    :param spec: OpenAPI document to serve (default: the bundled Plant Store).
    :param scenarios: folder of scenario files.
    :param scenario: scenario active at start.
    :param port: port to listen on (default 0: a free one; PLANTSTUB_PORT is not read here).
    :param settings: a complete Settings instead of the keyword arguments.
    :param options: other Settings fields (spec_root, stateful, host, journal, journal_size, max_body, read_timeout,
        log_format; webhook: a list of "URL" or "NAME=URL" subscriptions); ``stateful=True`` makes the stub
        remember what it is told (``stub.state``); ``dynamic=True`` varies its default answers, from ``seed``
        (``stub.seed``).
        remember what it is told (``stub.state``); ``proxy="https://..."`` forwards what nothing else answers to the
        real service, checking its answers (docs/real-service.md); ``tls=True`` serves HTTPS with a throwaway
        certificate whose CA is ``stub.ca_file`` (needs ``trustme``: ``pip install 'plantstub[tls]'``).
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
        **options: object,
    ) -> None:
        if settings is None:
            settings = build_settings({"spec": spec, "scenarios": scenarios, "scenario": scenario, "port": port, **options},
                                      explicit_name=keyword_name)
        self.settings = settings
        self.url = ""
        self.ca_file: str | None = None  # tls=True: the throwaway CA's certificate (a PEM file's path), for clients
        self.session_id: str | None = None  # a session view's id (`session()`); None: the stub's default session
        self._server: _Background | None = None
        self._session: Session | None = None  # kept once stopped: its calls can still be read

    @staticmethod
    def connect(url: str, admin_token: str | None = None) -> RemoteStub:
        """Drive a running stub (a sidecar) over its admin API, with the methods of an in-process Stub.

        :param url: its base URL, e.g. ``http://localhost:4010`` (or a session's, ``.../__session/ID``).
        :param admin_token: the token of its --admin-token, when it has one.
        :raises PlantstubError: when nothing answers there as a plantstub.
        """
        return RemoteStub.connect(url, admin_token)

    def session(self, seed_key: str | None = None) -> Stub:
        """An isolated view of this stub: its own journal, counters, scenario and state, and its own `url`
        (``<url>__session/<new id>/``); leaving its ``with`` block (or ``stop()``) ends the session. `seed_key`: its
        dynamic answers are drawn from the stub's seed and this key (default: the session's id)."""
        if self._server is None:
            raise PlantstubError("the stub is not serving; a session is opened on a started stub (`with Stub(...) as "
                                 "stub: stub.session()`)")
        return _SessionView(self._server, self.settings, self.url.partition(SESSION_PREFIX)[0].rstrip("/"), seed_key)

    @property
    def headers(self) -> dict[str, str]:
        """``{"X-Plantstub-Session": id}`` for a session view (for a client whose base URL is fixed); {} otherwise."""
        return {SESSION_HEADER: self.session_id} if self.session_id else {}

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Stub:
        """Start serving (spec and scenario errors raise here, in the caller's thread)."""
        if self._server is not None:
            return self
        server = _Background(self.settings)
        server.start()
        # A base URL: `url + "plants"`, urljoin(url, "plants") and aiohttp's base_url work, as with a session's URL;
        # so does `url + "/plants"` (the stub reads a doubled slash at the start of a path as one).
        self._server, self._session, self.url = server, server.sessions.default, server.url + "/"
        self.ca_file = server.ca_file
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread (the journal file, if any, is flushed and closed)."""
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> Stub:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def __aenter__(self) -> Stub:
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await asyncio.to_thread(self.stop)

    # -- control: the session's surface, called on the server's loop ---------------------------------
    def _live(self) -> Session:
        if self._session is None:
            raise PlantstubError("the stub is not started; use `with Stub(...) as stub:` or stub.start()")
        return self._session

    def _call(self, fn: Callable[[Unpack[_Args]], _R], *args: Unpack[_Args]) -> _R:
        # State belongs to the server's loop: mutate it there, and wait for it.
        return fn(*args) if self._server is None else self._server.call(fn, *args)

    @property
    def seed(self) -> int:
        """The seed of dynamic answers (``dynamic=True``, ``Prefer: dynamic=true``): the one given, else the one
        chosen at start; ``Stub(dynamic=True, seed=stub.seed)`` gives the same answers to the same calls again."""
        return self._live().runtime.seed

    @property
    def calls(self) -> list[Call]:
        """The recorded calls, oldest first (a snapshot: safe while requests arrive)."""
        return self._live().calls

    def use(self, name: str | None) -> None:
        """Make scenario `name` active (None: no scenario); its rule counters start again."""
        self._call(self._live().use, name)

    def reset(self, seed_key: str | None = None) -> None:
        """Forget recorded calls, rule counters, rules from code and deliveries; subscriptions are those of the start
        again. Dynamic answers are drawn from the start again: from the seed and `seed_key` when given (the pytest
        fixture gives each test's node id), else from the key they had."""
        self._call(self._live().reset, seed_key)

    @property
    def dynamic_answers(self) -> int:
        """How many dynamic answers this stub (or session) drew since it started or was last reset."""
        return self._live().draws.answers

    def coverage(self) -> dict[str, Any]:
        return self._call(self._live().coverage)

    # -- rules from code ------------------------------------------------------------------------
    def _add_rule(self, rule: dict[str, Any], file: str, line: int | None) -> str:
        return self._call(self._live().add_rule, copy.deepcopy(rule), file, line)

    @property
    def rules(self) -> list[RuleHandle]:
        """The rules from code, in the order tried: a RuleHandle each (``id``, ``uses``, ``remove()``, ``source``,
        ``rule``), as ``when(...).reply(...)`` and ``declare()`` give them."""
        return self._handles(self._call(_rules_of, self._live()))

    def _rule_uses(self, rule_id: str) -> int:
        return self._live().rule_uses(rule_id)  # one int read: no need to go through the loop

    def remove_rule(self, rule_id: str | RuleHandle) -> bool:
        """Remove one rule from code (its id or handle); False when there is no such rule."""
        return self._call(self._live().remove_rule, str(rule_id))

    # -- the store (stateful=True) -------------------------------------------------------------
    @property
    def state(self) -> dict[str, list[dict[str, Any]]]:
        """Every collection and its records in creation order, ``{"/plants": [...]}`` (a copy)."""
        try:
            return self._call(_state_of, self._live())
        except NotStateful as exc:
            raise PlantstubError(str(exc)) from None

    def set_state(self, state: dict[str, list[dict[str, Any]]]) -> None:
        """Replace the records (a reset restores the active scenario's `state:`).

        :raises ScenarioError: every problem, as a scenario's `state:` would get them, one per line.
        """
        try:
            problems = self._call(self._live().set_state, state)
        except NotStateful as exc:
            raise PlantstubError(str(exc)) from None
        if problems:
            raise ScenarioLoadError([ScenarioError("stub.set_state()", None, w, m) for w, m in problems])

    # -- webhooks ---------------------------------------------------------------------------
    def subscribe(self, url: str, name: str | None = None) -> None:
        """Send webhook `name` (a key of the spec's `webhooks`; None: every one) to `url` (http or https).

        :raises SubscriptionError: for a name the spec does not declare or a URL that is not http(s).
        """
        self._call(self._live().subscribe, url, name)

    def reset_subscriptions(self) -> dict[str, str]:
        """Only the start-up subscriptions again (``webhook=[...]``); returns them."""
        return self._call(self._live().reset_subscriptions)

    @property
    def deliveries(self) -> list[Delivery]:
        """The webhooks and callbacks sent so far (each with the receiver's answer), oldest first."""
        return self._live().deliveries

    def pending_deliveries(self) -> int:
        """How many webhooks and callbacks are still being sent."""
        return self._live().pending_deliveries()

    def _pending_deliveries(self) -> int:
        return self.pending_deliveries()

    # -- waiting ------------------------------------------------------------------------------
    def wait_for_calls(self, n: int, timeout: float = 5.0, **filters: object) -> list[Call]:
        """Wait until `n` calls like this have been recorded (counting those already there); returns every
        matching call. Blocks the calling thread: from an async test, ``await asyncio.to_thread(...)``.

        :param filters: those of assert_called: method, path, headers, query, body (partial, matchers), status.
        :raises CallAssertionError: after `timeout` seconds, with what arrived and the closest calls.
        """
        __tracebackhide__ = True
        return self._live().wait_from_thread(expectation_of(filters, "wait_for_calls(): "), n, timeout)


class _SessionView(Stub):
    """`Stub.session()`: one more session of a running stub, served by the same thread; stop() ends it."""

    def __init__(self, server: _Background, settings: Settings, root: str, seed_key: str | None = None) -> None:
        super().__init__(settings=settings)
        self._sid = self.session_id = new_id()
        self._server = server
        self._session = server.open(self._sid, seed_key)
        self.url = f"{root}{SESSION_PREFIX}{self._sid}/"  # a base URL, as the stub's
        self.ca_file = server.ca_file

    def start(self) -> Stub:
        return self

    def stop(self) -> None:
        """End the session (the stub itself keeps serving)."""
        if self._server is not None:
            self._server.end(self._sid)


def _rules_of(session: Session) -> list[dict[str, Any]]:
    return session.rules


def _state_of(session: Session) -> dict[str, list[dict[str, Any]]]:
    return session.state


def _one_surface(stub: Stub, remote: RemoteStub, session: Session) -> tuple[StubControl, StubControl, SessionControl]:
    """Never called: mypy checks here that the in-process Stub, the HTTP RemoteStub and a Session each implement
    the control surface (plantstub.server.surface)."""
    return stub, remote, session
