"""HAR 1.2: the journal written as a HAR log (`GET /__plantstub/calls?format=har`), and a HAR file (one of
plantstub's, or saved from a browser's devtools) read back as exchanges for `plantstub import-har`."""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import cast
from urllib.parse import parse_qsl, unquote, urlsplit

from plantstub._json import BodyError, decode_json, essence, is_json, json_bytes
from plantstub._version import __version__
from plantstub.contract.model import Operation
from plantstub.contract.operations import ServedOperation
from plantstub.contract.router import Router
from plantstub.proxy.recorded_file import Exchange
from plantstub.proxy.verdict import judge
from plantstub.recording.call import Call, CallResponse, Record
from plantstub.recording.redacted import redact_call
from plantstub.redaction import Redactor

HTTP = "HTTP/1.1"


class HarError(ValueError):
    """A file that is not a HAR log; the message says what is wrong and where."""


def _text(value: object) -> str:
    """A body as HAR text: JSON written out, a lone surrogate (a body's `\\ud800` escape) kept escaped as sent."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


def _pairs(mapping: Mapping[str, object]) -> list[dict[str, str]]:
    return [{"name": str(name), "value": str(value)} for name, value in mapping.items()]


def _content_type(headers: Mapping[str, object]) -> str:
    return next((str(value) for name, value in headers.items() if str(name).lower() == "content-type"), "")


def har_entry(call: Call, base: str) -> dict[str, object]:
    """One call as a HAR entry; `base` is the stub's URL as the client called it (`http://127.0.0.1:4010`)."""
    query = "&".join(f"{name}={v}" for name, value in call.query.items()
                     for v in (value if isinstance(value, list) else [value]))
    request: dict[str, object] = {
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
    answer: CallResponse = call.response or {"status": None, "headers": {}, "body": None}  # pending: nothing sent
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


def har_pieces(records: Iterable[Record], base: str, redact: bool = True) -> Iterator[bytes]:
    """The calls as a HAR 1.2 document, written one entry at a time (an admin answer streams it: nothing but the entry
    being written is held). `redact`: secrets REDACTED, by the rule of plantstub/redaction.py."""
    creator = json_bytes({"name": "plantstub", "version": __version__})
    yield b'{"log":{"version":"1.2","creator":%s,"entries":[' % creator
    for i, record in enumerate(records):
        call = record.view()
        entry = har_entry(redact_call(call)[0] if redact else call, base)
        yield json_bytes(entry) if i == 0 else b"," + json_bytes(entry)
    yield b"]}}"


# -- reading a HAR file ---------------------------------------------------------------------------------------
def _entries(data: object) -> list[object]:
    log = data.get("log") if isinstance(data, dict) else None
    entries = log.get("entries") if isinstance(log, dict) else None
    if not isinstance(entries, list):
        raise HarError("not a HAR log: expected {\"log\": {\"entries\": [...]}}")
    return entries


def _body_text(content: object) -> str | None:
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


def _json(text: str | None) -> tuple[bool, object]:
    if not text:
        return True, None
    try:
        return True, decode_json(text.encode("utf-8"))
    except BodyError:
        return False, None


def _header(headers: object, name: str) -> str | None:
    if isinstance(headers, list):
        for item in headers:
            if isinstance(item, dict) and str(item.get("name", "")).lower() == name:
                return str(item.get("value", ""))
    return None


@dataclass
class HarRead:
    """What a HAR log gives a scenario: the exchanges that can become rules, the entries left out (with why), and
    advice when none of its paths is the spec's (`--base` to pass)."""

    exchanges: list[Exchange] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    advice: str | None = None


def _prefix(read: list[tuple[int, str, str, str, dict[str, object], dict[str, object]]], router: Router) -> str | None:
    """The path prefix most entries are served under when taking it off makes them the spec's (`/v1`), or None."""
    found: Counter[str] = Counter()
    for _, method, _, path, _, _ in read:
        parts = path.split("/")
        for cut in range(2, min(len(parts), 5)):
            rest = "/" + "/".join(parts[cut:])
            if router.route(method, rest).operation is not None:
                found["/".join(parts[:cut])] += 1
                break
    return found.most_common(1)[0][0] if found else None


def read_har(data: object, router: Router, served: Mapping[Operation, ServedOperation], base: str = "",
             redact: bool = True) -> HarRead:
    """The exchanges of a HAR log that a scenario of this spec can answer, and the entries left out with why: the
    ones to hosts other than the one most entries of the spec's paths went to, paths the spec does not have,
    bodies that are not JSON, answers that broke the contract. `base`: a path prefix the service is served under
    (`/v1`), taken off. `redact`: the messages left out carry no secret (plantstub/redaction.py)."""
    entries = _entries(data)
    read: list[tuple[int, str, str, str, dict[str, object], dict[str, object]]] = []
    result = HarRead()
    for i, entry in enumerate(entries):
        request = entry.get("request") if isinstance(entry, dict) else None
        response = entry.get("response") if isinstance(entry, dict) else None
        if not isinstance(request, dict) or not isinstance(response, dict) or not isinstance(request.get("url"), str):
            result.left_out.append(f"entries[{i}]: not a HAR entry (request.url and response are needed)")
            continue
        try:
            parts = urlsplit(request["url"])
        except ValueError as exc:  # `http://[::1` and such
            result.left_out.append(f"entries[{i}]: request.url is not a URL ({exc})")
            continue
        path = parts.path or "/"
        if base and (path == base or path.startswith(base.rstrip("/") + "/")):
            path = path[len(base.rstrip("/")):] or "/"
        method = request.get("method", "GET")
        read.append((i, method.upper() if isinstance(method, str) else "?", parts.netloc, path, request, response))
    routed = Counter(host for _, method, host, path, _, _ in read if router.route(method, path).operation is not None)
    host = routed.most_common(1)[0][0] if routed else None
    if host is None and read:
        prefix = _prefix(read, router)
        result.advice = (f"no entry's path is one of the spec's; they are served under {prefix}: pass --base {prefix}"
                         if prefix is not None else "no entry's path is one of the spec's (is it the right --spec? "
                         "a service served under a prefix such as /v1 needs --base /v1)")
    for i, method, netloc, path, request, response in read:
        label = f"entries[{i}] {method} {path}"
        route = router.route(method, path)
        if host is not None and netloc != host:
            result.left_out.append(f"{label}: another host ({netloc or 'none'}; the spec's calls went to {host})")
            continue
        if route.operation is None:
            result.left_out.append(f"{label}: not an operation of the spec")
            continue
        post = request.get("postData")
        sent = _body_text(post)
        ok, body = _json(sent)
        if sent and (not ok or (isinstance(post, dict) and post.get("mimeType") and not is_json(str(post["mimeType"])))):
            result.left_out.append(f"{label}: its request body is not JSON")
            continue
        content = response.get("content")
        mime = content.get("mimeType") if isinstance(content, dict) else None
        mime = _header(response.get("headers"), "content-type") or (str(mime) if mime else None)
        text = _body_text(content)
        if text and not is_json(mime):
            result.left_out.append(f"{label}: its answer is not JSON ({essence(mime) or 'no media type'})")
            continue
        status = response.get("status")
        if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
            result.left_out.append(f"{label}: no status (the browser got no answer)")
            continue
        payload = (text or "").encode("utf-8", "surrogatepass")
        query = tuple(parse_qsl(urlsplit(cast(str, request["url"])).query, keep_blank_values=True))  # text: see above
        problems, answer = judge(served[route.operation], status, mime, payload)
        if problems:
            redactor = Redactor()
            if redact:
                redactor.value(body)
                redactor.value(answer)
                redactor.pairs(query)
            said = f"{method} {unquote(path)} -> {status}: broke the contract"  # as --record says it
            result.left_out.extend(redactor.scrub(f"{said}: {problem}") for problem in problems)
            continue
        raw = (sent or "").encode("utf-8", "surrogatepass") if isinstance(body, dict) else b""
        result.exchanges.append(Exchange(method, unquote(path), query, raw, status, mime if payload else None, payload))
    return result

