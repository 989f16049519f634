"""AdminClient: JSON over HTTP to one running stub's admin API, with the standard library's http.client only."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
from typing import Any
from urllib.parse import urlsplit

from plantstub.errors import PlantstubError
from plantstub.server.prefixes import ADMIN_PREFIX

TIMEOUT = 10.0  # seconds for one admin call
_NOTHING = object()


class AtCapacity(PlantstubError):
    """`session()` was refused with 503: the stub serves its --max-sessions already (the message names the cap)."""


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
             timeout: float | None = None, deadline: float | None = None) -> tuple[int, Any]:
        """(status, decoded JSON) of `method` on the admin route `name` (e.g. `calls`). `timeout`: seconds each step
        may take; `deadline`: seconds the whole call may (a server that drips its answer a byte at a time)."""
        parts = self._parts
        connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        connection = connection_class(parts.hostname or "", parts.port, timeout=timeout or self.timeout)
        cut = threading.Event()  # set when the deadline passed and the call was cut
        timer = None if deadline is None else threading.Timer(deadline, _cut, (connection, cut))
        headers = {"Accept": "application/json", **(headers or {})}
        if self._token is not None:
            headers["Authorization"] = f"Bearer {self._token}"
        payload = None
        if body is not _NOTHING:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        target = parts.path.rstrip("/") + ADMIN_PREFIX + name
        try:
            if timer is not None:
                timer.start()
            connection.request(method, target, body=payload, headers=headers)
            response = connection.getresponse()
            status, raw = response.status, response.read()
        except (OSError, http.client.HTTPException) as exc:
            if cut.is_set():
                raise PlantstubError(f"{self.url} did not answer {method} {ADMIN_PREFIX}{name} within {deadline:g} s"
                                     ) from None
            raise PlantstubError(f"cannot reach the stub at {self.url}: {exc}") from None
        finally:
            if timer is not None:
                timer.cancel()
            connection.close()
        if cut.is_set():  # what came before the cut is not the answer
            raise PlantstubError(f"{self.url} did not answer {method} {ADMIN_PREFIX}{name} within {deadline:g} s")
        try:
            return status, json.loads(raw)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than Python's stack
            raise PlantstubError(f"{method} {self.url}{ADMIN_PREFIX}{name} answered {status} with a body that is "
                                 f"not JSON ({raw[:80]!r}): is a plantstub listening at {self.url}?") from None

    def expect(self, method: str, name: str, body: Any = _NOTHING, ok: tuple[int, ...] = (200,)) -> Any:
        """The answer of a call that should succeed; PlantstubError with the stub's own message otherwise."""
        status, data = self.send(method, name, body)
        if status not in ok:
            raise PlantstubError(f"{method} {self.url}{ADMIN_PREFIX}{name} answered {status}: {message_of(data)}")
        return data


def _cut(connection: http.client.HTTPConnection, cut: threading.Event) -> None:
    """End a call past its deadline: its socket shut, so the read waiting on it returns."""
    cut.set()
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):  # closed already
            sock.shutdown(socket.SHUT_RDWR)


def message_of(data: Any) -> str:
    """The `message` of an Error record, else the answer as it came."""
    return str(data.get("message")) if isinstance(data, dict) and "message" in data else repr(data)[:200]
