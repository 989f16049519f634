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

from plantstub.errors import PlantstubError, ScenarioError, UnknownScenario
from plantstub.recording.call import Call
from plantstub.recording.checks import CallChecks
from plantstub.scenarios.load import ScenarioLoadError
from plantstub.server.admin import ADMIN_PREFIX
from plantstub.server.sessions import SESSION_PREFIX

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

    def send(self, method: str, name: str, body: Any = _NOTHING) -> tuple[int, Any]:
        """(status, decoded JSON) of `method` on the admin route `name` (e.g. `calls`)."""
        parts = self._parts
        connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        connection = connection_class(parts.hostname or "", parts.port, timeout=self.timeout)
        headers = {"Accept": "application/json"}
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


class RemoteStub(CallChecks):
    """A running stub driven over HTTP: `Stub.connect(url, admin_token=None)`, or `session()` of one.

    The same methods as an in-process Stub: `calls`, `use`, `reset`, `coverage`, `state`, `set_state`, the
    assertions and `session()`; `stop()` (and leaving a `with` block) ends a session made by `session()`
    and leaves the stub itself running.
    """

    __test__ = False

    def __init__(self, url: str, admin_token: str | None = None, *, ends_session: bool = False) -> None:
        self.admin = AdminClient(url, admin_token)
        self.url = self.admin.url
        self.admin_token = admin_token
        self._root, _, self.session_id = self.url.partition(SESSION_PREFIX)
        self._ends_session = ends_session

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
            raise ScenarioLoadError([ScenarioError("stub.set_state()", None, p["at"], p["message"])
                                     for p in data["problems"]])
        if status != 200:
            raise PlantstubError(message_of(data))
