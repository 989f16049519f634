"""RemoteStub: a running stub (a sidecar) driven over its admin API, with the methods of the in-process Stub.

WireMock's HttpAdminClient idea: one control surface, two transports. Calls come back as `Call` objects, so
assertions fail with the same text as in process (`CallChecks`).
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

from plantstub._words import plural
from plantstub.client.admin import TIMEOUT, AdminClient, AtCapacity, message_of
from plantstub.errors import CallAssertionError, PlantstubError, ScenarioError, SubscriptionError, UnknownScenario
from plantstub.recording.assertions import Expectation, checked
from plantstub.recording.call import Call
from plantstub.recording.checks import CallChecks
from plantstub.recording.waiting import expectation_of
from plantstub.scenarios.declared import DeclaresRules, RuleHandle
from plantstub.server.prefixes import ADMIN_PREFIX, SESSION_HEADER, SESSION_PREFIX
from plantstub.webhooks.deliveries import Delivery, DeliveryChecks

TOKEN_HINT = "the admin_token argument; PLANTSTUB_ADMIN_TOKEN for the pytest fixture"


class RemoteStub(CallChecks, DeclaresRules, DeliveryChecks):
    """A running stub driven over HTTP: `Stub.connect(url, admin_token=None)`, or `session()` of one.

    The same methods as an in-process Stub: `calls`, `use`, `reset`, `coverage`, `state`, `set_state`, `when`,
    `declare`, `rules`, `remove_rule`, `wait_for_calls`, the assertions and `session()`; `stop()` (and leaving a `with` block) ends a session made by `session()`
    and leaves the stub itself running.
    """

    _poll = 0.02  # each look at the deliveries is an admin call

    __test__ = False

    def __init__(self, url: str, admin_token: str | None = None, *, ends_session: bool = False) -> None:
        self.admin = AdminClient(url, admin_token)
        self.admin_token = admin_token
        self._given = url  # as the caller wrote it, for the messages of connect()
        self._root, _, sid = self.admin.url.partition(SESSION_PREFIX)
        # Every URL ends with '/', the stub's as a session's, so that it works as a base URL (aiohttp's base_url
        # demands it) and `url + "/plants"` still works (the stub reads the doubled slash where they meet as one).
        self.url = f"{self.admin.url}/"
        self.session_id: str | None = sid or None
        self._ends_session = ends_session
        self.instance: str | None = None  # which opening of the session id this view's is (session())
        self.ended_answers: int | None = None  # the dynamic answers the session had drawn when it ended (session())
        self._default_seen: tuple[int, int] | None = None  # the default session's (epoch, recorded) at watch_default()

    @property
    def headers(self) -> dict[str, str]:
        """``{"X-Plantstub-Session": id}`` for a session (for a client whose base URL is fixed); {} for the stub."""
        return {SESSION_HEADER: self.session_id} if self.session_id else {}

    @classmethod
    def connect(cls, url: str, admin_token: str | None = None) -> RemoteStub:
        """`Stub.connect(url, admin_token)`: a view of the stub running at `url`, checked to answer as one."""
        return cls(url, admin_token).start()

    def __repr__(self) -> str:
        return f"<RemoteStub {self.url}>"

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> RemoteStub:
        """Check, in one request, that a plantstub answers at `url` and takes the admin token (its `scenarios` route,
        which --admin-token guards)."""
        status, data = self.admin.send("GET", "scenarios")
        if status == 401 and isinstance(data, dict) and "--admin-token" in str(data.get("message")):
            given = "no admin token was given" if self.admin_token is None else "the admin token given is not its token"
            raise PlantstubError(f"Stub.connect({self._given!r}): the stub runs with --admin-token and {given}; pass "
                                 f"the token of its --admin-token ({TOKEN_HINT})")
        if status != 200 or not isinstance(data, dict) or "active" not in data or "scenarios" not in data:
            raise PlantstubError(f"{self._given} answered {status} to GET {ADMIN_PREFIX}scenarios, not as a plantstub "
                                 f"does: {message_of(data)}")
        return self

    def stop(self) -> None:
        """End the session this view was made for (`session()`); the stub itself keeps running."""
        self.end_session()

    def end_session(self) -> str | None:
        """End the session made by `session()`, as stop() does; why it was lost before, or None when the session
        that ended is the one opened (not a fresh one of the same id: a replica behind a load balancer that stopped
        hands the id to another, which opens it anew)."""
        if not self._ends_session:
            return None
        self._ends_session = False
        # The header routes the ending as the session's own calls are routed: a balancer hashing on the id sends it
        # to the replica that serves the session.
        status, data = AdminClient(self._root, self.admin_token).send(
            "DELETE", f"sessions/{self.session_id}", headers=self.headers)
        if status == 404:
            return "the stub has no session of that id any more (it ended: its replica stopped or restarted, it " \
                   "was unused for --session-idle, or something ended it with DELETE)"
        if status != 200 or not isinstance(data, dict):
            raise PlantstubError(f"DELETE {self._root}{ADMIN_PREFIX}sessions/{self.session_id} answered {status}: "
                                 f"{message_of(data)}")
        drawn = data.get("dynamic_answers")
        self.ended_answers = drawn if isinstance(drawn, int) else None
        if self.instance is not None and data.get("instance") != self.instance:
            return "the stub answering for that id holds another session of it, not the one opened for the test: " \
                   "the test's session ended early (its replica stopped or restarted behind a load balancer, it was " \
                   "unused for --session-idle, or something ended it with DELETE) and a later call opened the id " \
                   "anew; the calls, rules and records before that are gone"
        return None

    def __enter__(self) -> RemoteStub:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def __aenter__(self) -> RemoteStub:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await asyncio.to_thread(self.stop)

    def session(self, seed_key: str | None = None) -> RemoteStub:
        """A new isolated session of the stub, with its own `url`; `stop()` or its `with` block ends it.
        `seed_key`: its dynamic answers are drawn from the stub's seed and this key (default: the session's id).

        :raises PlantstubError: when the stub serves --max-sessions already (the message names the cap).
        """
        # The id is chosen here and sent in the header too, so that a load balancer hashing on it (docs/scale.md)
        # opens the session on the replica that will serve its calls.
        sid = secrets.token_urlsafe(12)
        body = {"id": sid} if seed_key is None else {"id": sid, "seed_key": seed_key}
        status, opened = AdminClient(self._root, self.admin_token).send(
            "POST", "sessions", body, headers={SESSION_HEADER: sid})
        if status == 503:
            raise AtCapacity(message_of(opened))
        if status != 201:
            raise PlantstubError(f"POST {self._root}{ADMIN_PREFIX}sessions answered {status}: {message_of(opened)}")
        view = RemoteStub(f"{self._root}{SESSION_PREFIX}{sid}/", self.admin_token, ends_session=True)
        view.instance = opened.get("instance") if isinstance(opened, dict) else None
        return view

    # -- calls that missed the session ---------------------------------------------------------------
    def watch_default(self) -> None:
        """Note how many calls the stub's default session has had, so that a failed assertion of this session can
        say when calls reached the default session instead (a client that dropped the /__session/ID prefix)."""
        self._default_seen = self._default_figures()

    def _default_figures(self) -> tuple[int, int] | None:
        status, data = AdminClient(self._root, self.admin_token).send("GET", "health")
        journal = data.get("journal") if status in (200, 503) and isinstance(data, dict) else None
        if not isinstance(journal, dict) or not isinstance(journal.get("recorded"), int):
            return None
        return int(journal.get("epoch", 0)), journal["recorded"]

    def _missed(self, failure: CallAssertionError, expectation: Expectation) -> CallAssertionError:
        """`failure` with a line on the calls like `expectation` the default session got since watch_default(), when
        there are any. Only those count: other clients of the sidecar (other xdist workers, other jobs) send calls
        there too, and a hint about them would blame a client that kept its prefix."""
        seen = self._default_seen
        try:
            now = self._default_figures() if seen is not None else None
            if seen is None or now is None or now[1] == 0 or now == seen:
                return failure
            since = f"?since={seen[1]}" if now[0] == seen[0] else ""  # reset meanwhile: every call since counts
            got = AdminClient(self._root, self.admin_token).expect("GET", f"calls{since}")
        except PlantstubError:
            return failure
        n = sum(1 for c in got if expectation.matches(Call.from_dict(c))) if isinstance(got, list) else 0
        if n <= 0:
            return failure
        return CallAssertionError(
            f"{failure}\nplantstub: {plural(n, 'call')} reached the sidecar's default session during this "
            f"test: does your client drop the {SESSION_PREFIX}{self.session_id} prefix? urljoin(url, \"/plants\") and "
            "aiohttp's base_url with \"/plants\" do; join \"plants\" (no leading slash), or send the test's "
            f"session header with each request (plantstub.headers: {SESSION_HEADER}: {self.session_id}).")

    def assert_called(self, method: str | None = None, path: str | None = None, *, times: int | None = None,
                      **criteria: Any) -> list[Call]:
        __tracebackhide__ = True
        try:
            return super().assert_called(method, path, times=times, **criteria)
        except CallAssertionError as exc:
            failure = self._missed(exc, checked("assert_called(): ", method=method, path=path, **criteria))
        raise failure  # outside the except block: no chained traceback

    # -- control ----------------------------------------------------------------------------
    @property
    def calls(self) -> list[Call]:
        """The recorded calls, oldest first."""
        return [Call.from_dict(c) for c in self.admin.expect("GET", "calls")]

    def use(self, name: str | None) -> None:
        """Make scenario `name` active (None: no scenario); its rule counters start again.

        :raises UnknownScenario: for a name the stub has not loaded (the message lists those it has).
        """
        status, data = self.admin.send("PUT", "scenario", {"name": name})
        if status == 404:
            raise UnknownScenario(message_of(data).removeprefix("body.name: "))
        if status != 200:
            raise PlantstubError(f"PUT {self.admin.url}{ADMIN_PREFIX}scenario answered {status}: {message_of(data)}")

    def reset(self, seed_key: str | None = None) -> None:
        """Forget recorded calls and rule counters; dynamic answers are drawn from the start again (from the seed and
        `seed_key` when given), as in process."""
        if seed_key is None:
            self.admin.expect("POST", "reset")
        else:
            self.admin.expect("POST", "reset", {"seed_key": seed_key})

    @property
    def seed(self) -> int:
        """The stub's seed of dynamic answers (its --seed, else the one it chose at start), as its health says."""
        return int(self.admin.expect("GET", "health", ok=(200, 503))["seed"])

    @property
    def dynamic_answers(self) -> int:
        """How many dynamic answers this session drew since it opened or was last reset."""
        return int(self.admin.expect("GET", "health", ok=(200, 503))["dynamic"]["answers"])

    def coverage(self) -> dict[str, Any]:
        result: dict[str, Any] = self.admin.expect("GET", "coverage")
        return result

    @property
    def state(self) -> dict[str, list[dict[str, Any]]]:
        """Every collection and its records in creation order (a stub started with --stateful)."""
        status, data = self.admin.send("GET", "state")
        if status != 200:
            raise PlantstubError(message_of(data))
        result: dict[str, list[dict[str, Any]]] = data
        return result

    def set_state(self, state: dict[str, list[dict[str, Any]]]) -> None:
        """Replace the records; ScenarioError with every problem, as in process."""
        status, data = self.admin.send("PUT", "state", state)
        if status == 400 and isinstance(data, dict) and data.get("problems"):
            from plantstub.scenarios.load import ScenarioLoadError  # on failure only: it imports the spec's loaders

            raise ScenarioLoadError([ScenarioError("stub.set_state()", None, p["at"], p["message"])
                                     for p in data["problems"]])
        if status != 200:
            raise PlantstubError(message_of(data))

    # -- rules from code, waiting -------------------------------------------------------------------
    def _add_rule(self, rule: dict[str, Any], file: str, line: int | None) -> str:
        __tracebackhide__ = True
        source = {"X-Plantstub-Source": f"{file}:{line}" if line else file}
        status, data = self.admin.send("POST", "rules", rule, source)
        if status == 400 and isinstance(data, dict) and data.get("problems"):
            from plantstub.scenarios.load import ScenarioLoadError

            raise ScenarioLoadError([ScenarioError(file, line, _in_rule(p["at"]), p["message"]) for p in data["problems"]])
        if status != 201:
            raise PlantstubError(f"POST {self.admin.url}{ADMIN_PREFIX}rules answered {status}: {message_of(data)}")
        return str(data["id"])

    @property
    def rules(self) -> list[RuleHandle]:
        """The rules from code, in the order tried: a RuleHandle each, as in process."""
        return self._handles(self.admin.expect("GET", "rules")["rules"])

    def _rule_uses(self, rule_id: str) -> int:
        entry = self.admin.expect("GET", f"rules/{rule_id}", ok=(200, 404))
        return int(entry.get("uses", 0))  # a 404: removed, or a reset

    def remove_rule(self, rule_id: str | RuleHandle) -> bool:
        """Remove one rule from code (its id or handle); False when there is no such rule."""
        return self.admin.expect("DELETE", f"rules/{rule_id}", ok=(200, 404)).get("deleted") == 1

    def wait_for_calls(self, n: int, timeout: float = 5.0, **filters: Any) -> list[Call]:
        """Wait until `n` calls like this have been recorded (the stub waits, woken by each call); as in process.

        :raises CallAssertionError: after `timeout` seconds, with the same text as in process.
        """
        __tracebackhide__ = True
        expectation = expectation_of(filters, "wait_for_calls(): ")  # an unknown filter: the TypeError in process
        status, data = self.admin.send("POST", "calls/wait", {"n": n, "timeout": timeout, **filters},
                                       timeout=TIMEOUT + float(timeout))
        if status == 400:
            raise ValueError(message_of(data).removeprefix("body."))
        if status in (422, 507):  # the filters' $regex spent the wait's budget, or no memory for it: as in process
            raise CallAssertionError(f"plantstub: wait_for_calls(): {message_of(data).removeprefix('body: ')}")
        if status != 200:
            raise PlantstubError(f"POST {self.admin.url}{ADMIN_PREFIX}calls/wait answered {status}: {message_of(data)}")
        if not data["arrived"]:
            raise self._missed(CallAssertionError(data["message"]), expectation)
        return [Call.from_dict(c) for c in data["calls"]]

    # -- webhooks ---------------------------------------------------------------------------------
    def subscribe(self, url: str, name: str | None = None) -> None:
        """Send webhook `name` (None: every one) to `url`, beside the subscriptions there are (admin PUT webhooks).

        :raises SubscriptionError: for a name the spec does not declare or a URL that is not http(s), as in process.
        """
        key = "*" if name is None else name
        status, data = self.admin.send("PUT", "webhooks", {**self.admin.expect("GET", "webhooks"), key: url})
        if status == 400:  # worded for the admin body (`body: ...`, `body.NAME: ...`): said of our arguments
            message = message_of(data)
            for said, ours in (("body: ", "name: "), (f"body.{key}: ", "url: ")):
                if message.startswith(said):
                    raise SubscriptionError(ours + message.removeprefix(said))
        if status != 200:
            raise PlantstubError(message_of(data))

    @property
    def deliveries(self) -> list[Delivery]:
        """The webhooks and callbacks sent so far (each with the receiver's answer), oldest first."""
        return [Delivery(**d) for d in self.admin.expect("GET", "deliveries")]

    def reset_subscriptions(self) -> dict[str, str]:
        """Only the stub's start-up subscriptions again (its --webhook); returns them."""
        result: dict[str, str] = self.admin.expect("DELETE", "webhooks")
        return result

    def pending_deliveries(self) -> int:
        """How many webhooks and callbacks are still being sent."""
        pending: int = self.admin.expect("GET", "health").get("webhooks", {}).get("pending", 0)
        return pending

    def _pending_deliveries(self) -> int:
        return self.pending_deliveries()


def _in_rule(at: str) -> str:
    """A problem's location inside the rule (`match.path`) from its location in the admin request (`body.match.path`)."""
    return at.removeprefix("body").removeprefix(".")
