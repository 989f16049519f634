"""HAR 1.2: the journal written as a HAR log (`GET /__plantstub/calls?format=har`), and a HAR file (one of
plantstub's, or saved from a browser's devtools) read back as exchanges for `plantstub import-har`."""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from plantstub._json import BodyError, decode_json, essence, is_json
from plantstub._version import __version__
from plantstub.contract.model import Operation
from plantstub.contract.operations import ServedOperation
from plantstub.contract.router import Router
from plantstub.proxy.record import Exchange
from plantstub.proxy.verdict import judge
from plantstub.recording.call import Call

HTTP = "HTTP/1.1"


class HarError(ValueError):
    """A file that is not a HAR log; the message says what is wrong and where."""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _pairs(mapping: Any) -> list[dict[str, str]]:
    return [{"name": str(name), "value": str(value)} for name, value in mapping.items()]


def _content_type(headers: Any) -> str:
    return next((str(value) for name, value in headers.items() if str(name).lower() == "content-type"), "")


def har_entry(call: Call, base: str) -> dict[str, Any]:
    """One call as a HAR entry; `base` is the stub's URL as the client called it (`http://127.0.0.1:4010`)."""
    query = "&".join(f"{name}={v}" for name, value in call.query.items()
                     for v in (value if isinstance(value, list) else [value]))
    request: dict[str, Any] = {
        "method": call.method, "url": f"{base}{call.path}" + (f"?{query}" if query else ""), "httpVersion": HTTP,
        "cookies": [], "headers": _pairs(call.headers),
        "queryString": [{"name": name, "value": v} for name, value in call.query.items()
                        for v in (value if isinstance(value, list) else [value])],
        "headersSize": -1, "bodySize": 0,
    }
    if call.body is not None:
        text = _text(call.body)
        request["postData"] = {"mimeType": _content_type(call.headers) or "application/json", "text": text}
        request["bodySize"] = len(text.encode())
    answer = call.response or {}
    headers = answer.get("headers") or {}
    body = answer.get("body")
    text = "" if body is None else _text(body)
    response = {
        "status": answer.get("status") or 0, "statusText": "", "httpVersion": HTTP, "cookies": [],
        "headers": _pairs(headers),
        "content": {"size": len(text.encode()), "mimeType": _content_type(headers), "text": text},
        "redirectURL": "", "headersSize": -1, "bodySize": len(text.encode()),
    }
    return {
        "startedDateTime": call.time, "time": 0, "request": request, "response": response, "cache": {},
        "timings": {"send": 0, "wait": 0, "receive": 0},
        "_plantstub": {"seq": call.seq, "valid": call.valid, "errors": list(call.errors), "proxied": call.proxied,
                       "upstream": call.upstream, "answered_by": call.answered_by,
                       **({"fault": answer["fault"]} if answer.get("fault") else {})},
    }


def har_log(calls: Iterable[Call], base: str) -> dict[str, Any]:
    """The calls as a HAR 1.2 document."""
    return {"log": {"version": "1.2", "creator": {"name": "plantstub", "version": __version__},
                    "entries": [har_entry(call, base) for call in calls]}}


# -- reading a HAR file ---------------------------------------------------------------------------------------
def _entries(data: Any) -> list[Any]:
    log = data.get("log") if isinstance(data, dict) else None
    entries = log.get("entries") if isinstance(log, dict) else None
    if not isinstance(entries, list):
        raise HarError("not a HAR log: expected {\"log\": {\"entries\": [...]}}")
    return entries


def _body_text(content: Any) -> str | None:
    """A HAR body's text (base64 decoded when it says so); None when the body is absent or not text."""
    if not isinstance(content, dict) or not isinstance(content.get("text"), str):
        return None
    text = content["text"]
    if content.get("encoding") == "base64":
        try:
            return base64.b64decode(text, validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return None
    return text


def _json(text: str | None) -> tuple[bool, Any]:
    if not text:
        return True, None
    try:
        return True, decode_json(text.encode("utf-8"))
    except BodyError:
        return False, None


def _header(headers: Any, name: str) -> str | None:
    if isinstance(headers, list):
        for item in headers:
            if isinstance(item, dict) and str(item.get("name", "")).lower() == name:
                return str(item.get("value", ""))
    return None


def read_har(data: Any, router: Router, served: Mapping[Operation, ServedOperation],
             base: str = "") -> tuple[list[Exchange], list[str]]:
    """The exchanges of a HAR log that a scenario of this spec can answer, and the entries left out with why: the
    ones to hosts other than the one most entries of the spec's paths went to, paths the spec does not have,
    bodies that are not JSON. `base`: a path prefix the service is served under (`/v1`), taken off."""
    entries = _entries(data)
    read: list[tuple[int, str, str, str, dict[str, Any], dict[str, Any]]] = []
    left_out: list[str] = []
    for i, entry in enumerate(entries):
        request = entry.get("request") if isinstance(entry, dict) else None
        response = entry.get("response") if isinstance(entry, dict) else None
        if not isinstance(request, dict) or not isinstance(response, dict) or not isinstance(request.get("url"), str):
            left_out.append(f"entries[{i}]: not a HAR entry (request.url and response are needed)")
            continue
        parts = urlsplit(request["url"])
        path = parts.path or "/"
        if base and (path == base or path.startswith(base.rstrip("/") + "/")):
            path = path[len(base.rstrip("/")):] or "/"
        read.append((i, str(request.get("method", "GET")).upper(), parts.netloc, path, request, response))
    routed = Counter(host for _, method, host, path, _, _ in read if router.route(method, path).operation is not None)
    host = routed.most_common(1)[0][0] if routed else None
    exchanges: list[Exchange] = []
    for i, method, netloc, path, request, response in read:
        label = f"entries[{i}] {method} {path}"
        route = router.route(method, path)
        if netloc != host:
            left_out.append(f"{label}: another host ({netloc or 'none'}; the spec's calls went to {host})")
            continue
        if route.operation is None:
            left_out.append(f"{label}: not an operation of the spec")
            continue
        post = request.get("postData")
        sent = _body_text(post)
        ok, body = _json(sent)
        if sent and (not ok or (isinstance(post, dict) and post.get("mimeType") and not is_json(post["mimeType"]))):
            left_out.append(f"{label}: its request body is not JSON")
            continue
        content = response.get("content")
        mime = content.get("mimeType") if isinstance(content, dict) else None
        mime = _header(response.get("headers"), "content-type") or (str(mime) if mime else None)
        text = _body_text(content)
        if text and not is_json(mime):
            left_out.append(f"{label}: its answer is not JSON ({essence(mime) or 'no media type'})")
            continue
        status = response.get("status")
        if not isinstance(status, int) or not 100 <= status <= 599:
            left_out.append(f"{label}: no status (the browser got no answer)")
            continue
        payload = (text or "").encode("utf-8")
        problems, answer = judge(served[route.operation], status, mime, payload)
        exchanges.append(Exchange(method, unquote(path), body, status, mime if payload else None, answer,
                                  tuple(f"broke the contract: {p}" for p in problems)))
    return exchanges, left_out
