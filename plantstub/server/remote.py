"""RemoteStub: a running stub (a sidecar) driven over its admin API, with the methods of the in-process Stub.

WireMock's HttpAdminClient idea: one control surface, two transports. Calls come back as `Call` objects, so
assertions fail with the same text as in process (`CallChecks`).
"""

from __future__ import annotations

import asyncio
import http.client
import json
from typing import Any
from urllib.parse import urlsplit

from plantstub.errors import CallAssertionError, PlantstubError, ScenarioError, UnknownScenario
from plantstub.recording.call import Call
from plantstub.recording.checks import CallChecks
from plantstub.recording.waiting import expectation_of
from plantstub.scenarios.declared import DeclaresRules
from plantstub.server.prefixes import ADMIN_PREFIX, SESSION_PREFIX
from plantstub.webhooks.deliveries import Delivery, DeliveryChecks

TIMEOUT = 10.0  # seconds for one admin call
_NOTHING = object()


class AdminClient:
    """JSON over HTTP to one stub's admin API (a new connection per call: nothing to go stale between tests)."""

    def __init__(self, url: str, admin_token: str | None = None, timeout: float = TIMEOUT) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            raise PlantstubError(f"Stub.connect({url!r}): not the base URL of a stub (expected http://HOST:PORT, "
                                 "optionally with /__session/ID)")
        self.url = url.rstrip("/")
        self._parts = parts
        self._token = admin_token
        self.timeout = timeout

    def send(self, method: str, name: str, body: Any = _NOTHING, headers: dict[str, str] | None = None,
             timeout: float | None = None) -> tuple[int, Any]:
        """(status, decoded JSON) of `method` on the admin route `name` (e.g. `calls`)."""
        parts = self._parts
        connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        connection = connection_class(parts.hostname or "", parts.port, timeout=timeout or self.timeout)
        headers = {"Accept": "application/json", **(headers or {})}
        if self._token is not None:
            headers["Authorization"] = f"Bearer {self._token}"
        payload = None
        if body is not _NOTHING:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        target = parts.path.rstrip("/") + ADMIN_PREFIX + name
        try:
            connection.request(method, target, body=payload, headers=headers)
            response = connection.getresponse()
            status, raw = response.status, response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise PlantstubError(f"cannot reach the stub at {self.url}: {exc}") from None
        finally:
            connection.close()
        try:
            return status, json.loads(raw)
        except ValueError:
            raise PlantstubError(f"{method} {self.url}{ADMIN_PREFIX}{name} answered {status} with a body that is "
                                 f"not JSON ({raw[:80]!r}): is a plantstub listening at {self.url}?") from None

    def expect(self, method: str, name: str, body: Any = _NOTHING, ok: tuple[int, ...] = (200,)) -> Any:
        """The answer of a call that should succeed; PlantstubError with the stub's own message otherwise."""
        status, data = self.send(method, name, body)
        if status not in ok:
            raise PlantstubError(f"{method} {self.url}{ADMIN_PREFIX}{name} answered {status}: {message_of(data)}")
        return data


def message_of(data: Any) -> str:
    """The `message` of an Error record, else the answer as it came."""
    return str(data.get("message")) if isinstance(data, dict) and "message" in data else repr(data)[:200]


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
        self.url = self.admin.url
        self.admin_token = admin_token
        self._root, _, self.session_id = self.url.partition(SESSION_PREFIX)
        self._ends_session = ends_session

    @classmethod
    def connect(cls, url: str, admin_token: str | None = None) -> RemoteStub:
        """`Stub.connect(url, admin_token)`: a view of the stub running at `url`, checked to answer as one."""
        return cls(url, admin_token).start()

    def __repr__(self) -> str:
        return f"<RemoteStub {self.url}>"

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> RemoteStub:
        """Check that a plantstub answers at `url` (its health route)."""
        status, data = self.admin.send("GET", "health")
        if not isinstance(data, dict) or "status" not in data or "journal" not in data:
            raise PlantstubError(f"{self.url} answered {status} to GET {ADMIN_PREFIX}health, not as a plantstub does")
        return self

    def stop(self) -> None:
        """End the session this view was made for (`session()`); the stub itself keeps running."""
        if self._ends_session:
            self._ends_session = False
            root = AdminClient(self._root, self.admin_token)
            root.expect("DELETE", f"sessions/{self.session_id}", ok=(200, 404))

    def __enter__(self) -> RemoteStub:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def __aenter__(self) -> RemoteStub:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await asyncio.to_thread(self.stop)

    def session(self) -> RemoteStub:
        """A new isolated session of the stub, with its own `url`; `stop()` or its `with` block ends it.

        :raises PlantstubError: when the stub serves --max-sessions already (the message names the cap).
        """
        opened = AdminClient(self._root, self.admin_token).expect("POST", "sessions", ok=(201,))
        return RemoteStub(f"{self._root}{SESSION_PREFIX}{opened['id']}", self.admin_token, ends_session=True)

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
            raise PlantstubError(f"PUT {self.url}{ADMIN_PREFIX}scenario answered {status}: {message_of(data)}")

    def reset(self) -> None:
        """Forget recorded calls and rule counters."""
        self.admin.expect("POST", "reset")

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
            raise PlantstubError(f"POST {self.url}{ADMIN_PREFIX}rules answered {status}: {message_of(data)}")
        return str(data["id"])

    @property
    def rules(self) -> list[dict[str, Any]]:
        """The rules from code, in the order tried: ``{"id", "source", "uses", "rule"}`` each."""
        result: list[dict[str, Any]] = self.admin.expect("GET", "rules")["rules"]
        return result

    def remove_rule(self, rule_id: str) -> bool:
        """Remove one rule from code; False when there is no such rule."""
        return self.admin.expect("DELETE", f"rules/{rule_id}", ok=(200, 404)).get("deleted") == 1

    def wait_for_calls(self, n: int, timeout: float = 5.0, **filters: Any) -> list[Call]:
        """Wait until `n` calls like this have been recorded (the stub waits, woken by each call); as in process.

        :raises CallAssertionError: after `timeout` seconds, with the same text as in process.
        """
        __tracebackhide__ = True
        expectation_of(filters, "wait_for_calls(): ")  # an unknown filter: the same TypeError as in process
        status, data = self.admin.send("POST", "calls/wait", {"n": n, "timeout": timeout, **filters},
                                       timeout=TIMEOUT + float(timeout))
        if status == 400:
            raise ValueError(message_of(data).removeprefix("body."))
        if status in (422, 507):  # the filters' $regex spent the wait's budget, or no memory for it: as in process
            raise CallAssertionError(f"plantstub: wait_for_calls(): {message_of(data).removeprefix('body: ')}")
        if status != 200:
            raise PlantstubError(f"POST {self.url}{ADMIN_PREFIX}calls/wait answered {status}: {message_of(data)}")
        if not data["arrived"]:
            raise CallAssertionError(data["message"])
        return [Call.from_dict(c) for c in data["calls"]]

    # -- webhooks ---------------------------------------------------------------------------------
    def subscribe(self, url: str, name: str | None = None) -> None:
        """Send webhook `name` (None: every one) to `url`, beside the subscriptions there are (admin PUT webhooks)."""
        subscriptions = {**self.admin.expect("GET", "webhooks"), "*" if name is None else name: url}
        status, data = self.admin.send("PUT", "webhooks", subscriptions)
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
