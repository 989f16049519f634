"""What the stub sends, ready for the wire, and the Error record: the one shape of every error answer."""

from __future__ import annotations

from typing import NamedTuple, TypedDict

from plantstub._json import JSON, NO_BODY, json_bytes


class Outgoing(NamedTuple):
    """A response ready to send: `body` is what the journal shows, `payload` the bytes on the wire.

    A NamedTuple: immutable, and made faster than a frozen dataclass for every answer. `headers` is never changed
    in place (a changed answer is a new Outgoing)."""

    status: int
    body: object = NO_BODY
    payload: bytes = b""
    content_type: str | None = JSON
    headers: dict[str, str] = {}  # noqa: RUF012 - never mutated: a NamedTuple's default
    ours: str | None = None  # our Error record's text: the stub's own error answer (error_shapes.py may reshape it)
    more: tuple[tuple[str, str], ...] = ()  # header lines beyond `headers` (a name sent again: a proxied Set-Cookie)


def json_reply(status: int, body: object, headers: dict[str, str] | None = None, content_type: str = JSON) -> Outgoing:
    return Outgoing(status, body, json_bytes(body), content_type, headers or {})


class _Record(TypedDict):
    error: int
    message: str


class ErrorRecord(_Record, total=False):
    """The Error record: `{"error": status, "message": ...}`, and the problems apart when there are several."""

    problems: list[dict[str, str]]  # each a problem()


def error_body(status: int, message: str) -> ErrorRecord:
    """The Error record, the spec's own error shape: {"error": status, "message": ...}."""
    return {"error": status, "message": message}


def problem(at: str, message: str) -> dict[str, str]:
    """One problem of a list a client receives (an Error record's `problems`, health, load errors): where, and what."""
    return {"at": at, "message": message}


def error_reply(status: int, message: str, headers: dict[str, str] | None = None) -> Outgoing:
    """An Error record, ready to send."""
    body = error_body(status, message)
    return Outgoing(status, body, json_bytes(body), JSON, headers or {}, message)


def unanswered(before: str, stopped: bool = False) -> Outgoing:
    """The 499 a call records when no answer went out (answered_by `client_left`), the one text of it: the client closed
    the connection (or, `stopped`, the stub stopped) before `before` (`sending the whole body`, `the answer was
    sent`)."""
    who = "the stub stopped" if stopped else "the client closed the connection"
    return error_reply(499, f"request: {who} before {before}; no answer went out")
