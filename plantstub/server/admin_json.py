"""The admin API's one JSON writer and one body reader, so every admin answer and refusal reads alike. A big body is
parsed off the event loop, a value at a time."""

from __future__ import annotations

import asyncio
import re
from typing import cast

from plantstub._json import JSON, MAX_NESTING, BodyError, TooDeep, decode_json, json_bytes, nests_deeper, scan_json
from plantstub.contract.outgoing import Outgoing, error_body
from plantstub.incoming import IncomingRequest

PIECES_BYTES = 64 * 1024  # an admin body larger than this is parsed in a thread, in pieces
OUTER_LEVELS = 2  # the levels walked here: `{"/plants": [record, ...]}`, each record parsed alone
_SPACE = re.compile(r"[ \t\n\r]*")


def reply(value: object, status: int = 200, headers: dict[str, str] | None = None) -> Outgoing:
    """`value` as a JSON answer (orjson, never NaN or Infinity)."""
    return Outgoing(status, value, json_bytes(value), JSON, headers or {})


def error(status: int, message: str, headers: dict[str, str] | None = None,
          problems: list[dict[str, str]] | None = None) -> Outgoing:
    """An Error record; `problems`: each of them apart, `{"at": location, "message": ...}`."""
    body = error_body(status, message)
    if problems is not None:
        body["problems"] = problems
    return reply(body, status, headers)


async def read_json(request: IncomingRequest, example: str) -> object:
    """The request's JSON body (None when empty), parsed as request bodies are (strict, depth-bounded); an Outgoing
    to send instead when it cannot be read: a 400 saying what and where, with `example`. (The transport read the body
    within --max-body.)"""
    raw = request.raw
    if not raw:
        return None
    try:
        if len(raw) > PIECES_BYTES:  # 40 MB parsed at once would hold the event loop (and the GIL) for a second
            return await asyncio.to_thread(decode_in_pieces, raw)
        return decode_json(raw)
    except TooDeep as exc:
        return error(400, f"body: {exc}")
    except BodyError as exc:  # NaN and Infinity included: nothing read here can be echoed as what JSON is not
        return error(400, f"body: {exc}; send {example}")


class _Elsewhere(Exception):
    """Not read here: decode_json() reads the whole body instead, and words what is wrong with it."""


def decode_in_pieces(raw: bytes) -> object:
    """decode_json() of a big body, in pieces: the outer OUTER_LEVELS of objects and arrays walked here, each value
    inside parsed alone, so a thread parsing it lets the GIL go between values (the event loop runs meanwhile)."""
    try:
        text = raw.decode("utf-8")
        at = _skip(text, 1 if text.startswith("\ufeff") else 0)
        value, end = _value(text, at, OUTER_LEVELS)
        if _skip(text, end) != len(text) or nests_deeper(value, MAX_NESTING):
            raise _Elsewhere
        return value
    except (UnicodeDecodeError, _Elsewhere, StopIteration, ValueError, RecursionError):
        return decode_json(raw)  # its words for what is wrong


def _skip(text: str, at: int) -> int:
    found = _SPACE.match(text, at)
    return at if found is None else found.end()


def _value(text: str, at: int, levels: int) -> tuple[object, int]:
    opening = text[at : at + 1]
    if levels and opening == "{":
        members: dict[str, object] = {}
        at = _skip(text, at + 1)
        if text.startswith("}", at):
            return members, at + 1
        while True:
            if not text.startswith('"', at):
                raise _Elsewhere
            key, at = scan_json(text, at)  # a string: it starts with a quote
            at = _skip(text, at)
            if not text.startswith(":", at):
                raise _Elsewhere
            members[cast(str, key)], at = _value(text, _skip(text, at + 1), levels - 1)
            at = _skip(text, at)
            if text.startswith("}", at):
                return members, at + 1
            if not text.startswith(",", at):
                raise _Elsewhere
            at = _skip(text, at + 1)
    if levels and opening == "[":
        items: list[object] = []
        at = _skip(text, at + 1)
        if text.startswith("]", at):
            return items, at + 1
        while True:
            item, at = _value(text, at, levels - 1)
            items.append(item)
            at = _skip(text, at)
            if text.startswith("]", at):
                return items, at + 1
            if not text.startswith(",", at):
                raise _Elsewhere
            at = _skip(text, at + 1)
    return scan_json(text, at)
