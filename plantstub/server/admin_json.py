"""The admin API's one JSON writer and one body reader, so every admin answer and refusal reads alike."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from plantstub._json import BodyError, TooDeep, decode_json, json_bytes
from plantstub.contract.outgoing import error_body
from plantstub.server.response import too_large, unreadable


def reply(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """`value` as a JSON answer (orjson, never NaN or Infinity)."""
    return web.Response(body=json_bytes(value), status=status, headers=headers, content_type="application/json")


def error(status: int, message: str, headers: dict[str, str] | None = None,
          problems: list[dict[str, str]] | None = None) -> web.Response:
    """An Error record; `problems`: each of them apart, `{"at": location, "message": ...}`."""
    body = error_body(status, message)
    if problems is not None:
        body["problems"] = problems
    return reply(body, status, headers)


async def read_json(request: web.BaseRequest, max_body: int, example: str) -> Any:
    """The request's JSON body (None when empty), parsed as request bodies are (strict, depth-bounded); a
    web.Response to send instead when it cannot be read: 413 over --max-body, 400 with `example` otherwise."""
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        return error(413, too_large(max_body))
    except web.RequestPayloadError:  # gzip that does not inflate, broken chunked framing
        return error(400, unreadable(request))
    if not raw:
        return None
    try:
        return decode_json(raw)
    except TooDeep as exc:
        return error(400, f"body: {exc}")
    except BodyError:
        return error(400, f"body: not valid JSON; send {example}")
