"""The sweep's request for one operation, built from the spec alone, and its judgement of the answer."""

from __future__ import annotations

import base64
import json
import re
from typing import Any
from urllib.parse import quote

from sweep_oas import IGNORED_HEADERS, Document, NoValue, esc, mapping
from sweep_values import believed_valid


def plain_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value) if isinstance(value, dict | list) else str(value)


def basic_token() -> str:
    return base64.b64encode(b"sweep:sweep").decode()


def quote_all(text: str) -> str:
    return quote(text, safe="")


def serialize(where: str, name: str, p: dict, value: Any) -> Any:
    """A parameter's value as the request carries it: text (path, header) or (name, text) pairs."""
    style = p.get("style") or ("form" if where in ("query", "cookie") else "simple")
    explode = p.get("explode", style == "form")
    enc = quote_all if where == "path" else (lambda t: t)
    if isinstance(value, dict):
        pairs = [(str(k), plain_text(v)) for k, v in value.items()]
    elif isinstance(value, list):
        pairs = [("", plain_text(v)) for v in value]
    else:
        pairs = []
    if where in ("path", "header"):
        if not isinstance(value, dict | list):
            text = enc(plain_text(value))
            return {"label": f".{text}", "matrix": f";{name}={text}"}.get(style, text)
        if isinstance(value, dict):
            parts = [f"{enc(k)}={enc(v)}" for k, v in pairs] if explode else [x for k, v in pairs for x in (enc(k), enc(v))]
        else:
            parts = [enc(v) for _, v in pairs]
        if style == "label":
            return "." + ("." if explode else ",").join(parts)
        if style == "matrix":
            if isinstance(value, list) and explode:
                return "".join(f";{name}={v}" for v in parts)
            return f";{name}=" + ",".join(parts) if not (isinstance(value, dict) and explode) else ";" + ";".join(parts)
        return ",".join(parts)
    if not isinstance(value, dict | list):
        return [(name, plain_text(value))]
    if style == "deepObject" and isinstance(value, dict):
        return [(f"{name}[{k}]", v) for k, v in pairs]
    if explode and style == "form":
        return pairs if isinstance(value, dict) else [(name, v) for _, v in pairs]
    sep = {"spaceDelimited": " ", "pipeDelimited": "|"}.get(style, ",")
    flat = [x for k, v in pairs for x in (k, v)] if isinstance(value, dict) else [v for _, v in pairs]
    return [(name, sep.join(flat))]


def credentials(doc: Document, op: dict) -> tuple[dict[str, str], list, list]:
    """Headers, query pairs and cookies that satisfy the first security alternative that can be met."""
    reqs = op.get("security", doc.root.get("security"))
    if not reqs:
        return {}, [], []
    comps = doc.root.get("components") or {}
    schemes = comps.get("securitySchemes") or {}
    # An undeclared scheme is taken as met, and an alternative naming only such schemes is met by any request
    # (docs/cli.md "Other specs").
    known = [alt for alt in reqs if isinstance(alt, dict) and (not alt or any(name in schemes for name in alt))]
    if len(known) < len([alt for alt in reqs if isinstance(alt, dict)]) or not known:
        return {}, [], []
    for alt in known:
        if not isinstance(alt, dict):
            continue
        headers: dict[str, str] = {}
        query: list = []
        cookies: list = []
        try:
            for name in alt:
                if name not in schemes:
                    continue  # an undeclared scheme is not enforced (docs/cli.md "Other specs")
                scheme, _, _ = doc.deref(schemes.get(name), doc.uri, "")
                if not isinstance(scheme, dict):
                    raise NoValue(f"security scheme {name} not declared")
                kind = scheme.get("type")
                if kind == "apiKey":
                    where = scheme.get("in")
                    if where == "header":
                        headers[str(scheme.get("name"))] = "sweep-key"
                    elif where == "query":
                        query.append((str(scheme.get("name")), "sweep-key"))
                    elif where == "cookie":
                        cookies.append((str(scheme.get("name")), "sweep-key"))
                elif kind in ("http", "oauth2", "openIdConnect"):
                    sch = str(scheme.get("scheme", "bearer")) if kind == "http" else "bearer"
                    value = f"Basic {basic_token()}" if sch.lower() == "basic" else (
                        f"{'Bearer' if sch.lower() == 'bearer' else sch} sweep-token")
                    if headers.get("Authorization", value) != value:
                        raise NoValue("two schemes of one alternative need the Authorization header")
                    headers["Authorization"] = value
                else:
                    raise NoValue(f"security type {kind} not met")
        except NoValue:
            continue
        return headers, query, cookies
    raise NoValue("no security alternative can be met")


def json_like(media: str) -> bool:
    base = media.split(";")[0].strip().lower()
    return base == "application/json" or base.endswith("+json") or base in ("*/*", "application/*")


def body_for(doc: Document, op: dict, uri: str, ptr: str) -> tuple[str, bytes] | None:
    """(Content-Type, bytes) of a body believed valid; None when the operation needs none."""
    if "requestBody" not in op:
        return None
    rb, uri, ptr = doc.deref(op["requestBody"], uri, f"{ptr}/requestBody")
    content = rb.get("content") if isinstance(rb, dict) else None
    if not isinstance(content, dict) or not content:
        return None
    order = sorted(content, key=lambda m: (not json_like(m), "form" not in m, not m.startswith("text/")))
    media = order[0]
    required = rb.get("required") is True
    if not required and not json_like(media):
        return None
    holder, muri, mptr = doc.deref(content[media], uri, f"{ptr}/content/{esc(media)}")
    holder = holder if isinstance(holder, dict) else {}
    try:
        value = believed_valid(doc, holder, muri, mptr)
    except NoValue:
        if not required:
            return None
        raise
    base = media.split(";")[0].strip().lower()
    if json_like(media):
        ctype = media if "*" not in base else "application/json"
        return ctype, json.dumps(value).encode()
    if base in ("application/x-www-form-urlencoded", "multipart/form-data"):
        encoding = mapping(holder, "encoding")
        for k, v in (value.items() if isinstance(value, dict) else []):
            nested = isinstance(v, dict) or (isinstance(v, list) and any(isinstance(x, dict | list) for x in v))
            ctype = str(mapping(encoding, k).get("contentType", ""))
            if nested and not json_like(ctype):
                raise NoValue(f"form field {k} holds an object: its serialization is ambiguous")
    if base == "application/x-www-form-urlencoded":
        from urllib.parse import urlencode
        pairs = [(k, plain_text(x)) for k, v in (value.items() if isinstance(value, dict) else [])
                 for x in (v if isinstance(v, list) and not isinstance(v, str) else [v])]
        return media, urlencode(pairs).encode()
    if base == "multipart/form-data":
        boundary = "sweepboundary14"
        parts = []
        for k, v in (value.items() if isinstance(value, dict) else []):
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{plain_text(v)}\r\n')
        return f"multipart/form-data; boundary={boundary}", ("".join(parts) + f"--{boundary}--\r\n").encode()
    if base.startswith("text/") or isinstance(value, str):
        return (media if "*" not in base else "application/octet-stream"), plain_text(value).encode()
    raise NoValue(f"body media type {media} not built")


def template_path(path: str, values: dict[str, str]) -> str:
    """The path with its `{name}`s filled; literal characters that are not path characters percent-encoded."""
    out = []
    for i, part in enumerate(re.split(r"(\{[^{}]*\})", path)):
        if i % 2:
            name = part[1:-1]
            # A `{name}` nothing declares holds any text (docs/cli.md "Other specs").
            out.append(values.get(name, "sweep"))
        else:
            out.append(quote(part, safe="/:@!$&'()*+,;=-._~%"))
    return "".join(out)


def build_request(doc: Document, method: str, path: str, op: dict, uri: str, ptr: str, common: list) -> dict:
    """The request believed valid for one operation: method, target, headers, body."""
    params: dict[tuple[str, str], tuple[dict, str, str]] = {}
    own = [(p, uri, f"{ptr}/parameters/{i}") for i, p in enumerate(op.get("parameters") or [])]
    for p, puri, pptr in common + own:
        p, puri, pptr = doc.deref(p, puri, pptr)
        if isinstance(p, dict):
            params[(str(p.get("name")), str(p.get("in")))] = (p, puri, pptr)
    path_values: dict[str, str] = {}
    headers, query, cookies = credentials(doc, op)
    for (name, where), (p, puri, pptr) in params.items():
        if where != "path" and p.get("required") is not True:
            continue
        if where == "header" and name.lower() in IGNORED_HEADERS:
            continue
        if isinstance(p.get("content"), dict) and p["content"]:
            media = next(iter(p["content"]))
            value = believed_valid(doc, p["content"][media], puri, f"{pptr}/content/{esc(media)}", nonempty=True)
            text = json.dumps(value) if json_like(media) else plain_text(value)
            serial: Any = quote_all(text) if where == "path" else text if where == "header" else [(name, text)]
        else:
            value = believed_valid(doc, p, puri, pptr, nonempty=True)
            serial = serialize(where, name, p, value)
        if where == "path":
            path_values[name] = serial
        elif where == "header":
            headers[name] = serial
        elif where == "query":
            query.extend(serial)
        elif where == "cookie":
            cookies.extend(serial)
    body = body_for(doc, op, uri, ptr)
    if body:
        headers["Content-Type"] = body[0]
    if cookies:
        headers["Cookie"] = "; ".join(f"{k}={quote(v, safe='')}" for k, v in cookies)
    target = template_path(path, path_values)
    if query:
        from urllib.parse import urlencode
        target += "?" + urlencode(query, quote_via=quote)
    for value in headers.values():
        value.encode("latin-1")  # a value urllib cannot send raises UnicodeEncodeError
    return {"method": method.upper(), "target": target, "headers": headers, "body": body[1] if body else None}


def media_for(content: dict, ctype: str) -> str | None:
    base = ctype.split(";")[0].strip().lower()
    keys = {k: k.split(";")[0].strip().lower() for k in content}
    for wanted in (base, base.split("/")[0] + "/*", "*/*"):
        for key, kbase in keys.items():
            if kbase == wanted:
                return key
    return None


def judge(doc: Document, method: str, op: dict, uri: str, ptr: str, status: int, ctype: str, body: bytes) -> tuple[str, str]:
    """(class, detail) of one answer to a request believed valid."""
    text = body[:300].decode("utf-8", "replace")
    responses = mapping(op, "responses")
    if not any(not str(k).startswith("x-") for k in responses):
        # An operation that declares no responses (allowed in 3.1) is answered 204 with no body (docs/cli.md).
        if status == 204 and not body:
            return "ok", ""
        return "undeclared status", f"{status} (declared: none; plantstub's docs say 204 with no body)"
    declares_success = any(str(k)[:1] == "2" or str(k) == "default" for k in responses)
    chosen = str(status) in responses or f"{status // 100}XX" in responses or f"{status // 100}xx" in responses
    # An operation that declares no 2xx and no default is answered with a declared 3xx/4xx/5xx (issue 14): that
    # is its answer, judged as one, not a refusal of the request.
    if status >= 500 and (declares_success or not chosen):
        return "server error", f"{status}: {text}"
    if 400 <= status < 500 and (declares_success or not chosen):
        try:
            message = json.loads(body).get("message", text)
        except Exception:
            message = text
        return "wrongful 4xx", f"{status}: {str(message)[:400]}"
    key = next((k for k in (str(status), f"{status // 100}XX", f"{status // 100}xx", "default") if k in responses), None)
    if key is None:
        return "undeclared status", f"{status} (declared: {', '.join(map(str, responses))})"
    resp, ruri, rptr = doc.deref(responses[key], uri, f"{ptr}/responses/{esc(key)}")
    content = resp.get("content") if isinstance(resp, dict) else None
    if not isinstance(content, dict) or not content or method == "head":
        return "ok", ""
    if "*" in ctype.split(";")[0]:
        return "invalid 2xx body", f"{status} answered Content-Type {ctype!r}: a media range, not a media type"
    media = media_for(content, ctype)
    if media is None:
        if not body:
            return "ok", ""
        return "invalid 2xx body", f"{status} Content-Type {ctype!r} not among {list(content)}"
    holder = content[media]
    if (not json_like(media) and not json_like(ctype)) or not isinstance(holder, dict) or "schema" not in holder:
        return "ok", ""
    if not body:
        return "invalid 2xx body", f"{status} {ctype}: empty body where a schema is declared"
    try:
        value = json.loads(body)
    except ValueError:
        if not json_like(ctype):
            return "ok", ""
        return "invalid 2xx body", f"{status} {ctype}: not JSON: {text[:100]}"
    error = doc.errors(value, ruri, f"{rptr}/content/{esc(media)}/schema", "response")
    return ("invalid 2xx body", f"{status} {error}") if error else ("ok", "")
