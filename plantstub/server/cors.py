"""--cors: answer browsers' CORS preflights and let pages of any origin read the stub's answers; the one home of the
CORS headers, which each transport's writer adds (server/front.py decides who gets them).

The admin API stays out of it: a page of another site can neither preflight nor read it.
"""

from __future__ import annotations

from collections.abc import Mapping

from plantstub.contract.outgoing import Outgoing
from plantstub.contract.router import Router
from plantstub.server.response import FORBIDDEN

MAX_AGE = "600"  # seconds a browser may reuse a preflight answer
SHOWN = 1000  # the longest list of request headers echoed back
# Headers a page can always read; the others are exposed by name.
_SAFELISTED = frozenset({"cache-control", "content-language", "content-length", "content-type", "expires",
                         "last-modified", "pragma"})


def origin_of(headers: Mapping[str, str]) -> str | None:
    """The Origin to let read an answer: the request's, when it can be written back as a header."""
    origin = headers.get("Origin")
    return None if origin is None or FORBIDDEN.search(origin) is not None else origin


def is_preflight(method: str, headers: Mapping[str, str]) -> bool:
    """Whether a request is a browser's CORS preflight (OPTIONS asking for a method), with or without --cors."""
    return method == "OPTIONS" and "Access-Control-Request-Method" in headers


def preflight(headers: Mapping[str, str], raw_path: str, router: Router) -> Outgoing:
    """204 allowing the method asked for (so the real request reaches the stub and gets its true
    answer, a 405 included), the path's declared methods, and the headers asked for."""
    wanted = headers["Access-Control-Request-Method"].strip().upper()
    route = router.route("OPTIONS", raw_path.partition("?")[0])
    methods = {wanted, *route.allow}
    if route.operation is not None:
        methods.add("OPTIONS")
    allowed = {
        "Access-Control-Allow-Origin": headers.get("Origin", "*"),
        "Access-Control-Allow-Credentials": "true",
        "Access-Control-Allow-Methods": ", ".join(sorted(m for m in methods if m.isalpha())),
        "Access-Control-Max-Age": MAX_AGE,
        "Vary": "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
    }
    asked = headers.get("Access-Control-Request-Headers", "")
    if asked and len(asked) <= SHOWN:
        allowed["Access-Control-Allow-Headers"] = asked
    return Outgoing(204, content_type=None, headers=allowed)


def allow_origin(origin: str, headers: Mapping[str, str]) -> list[tuple[str, str]]:
    """An answer's `headers` with those that let a page of `origin` read it (and its headers), in the order written."""
    out = [(name, value) for name, value in headers.items() if name.lower() != "vary"]
    out.append(("Access-Control-Allow-Origin", origin))
    out.append(("Access-Control-Allow-Credentials", "true"))
    exposed = sorted({name for name in headers if name.lower() not in _SAFELISTED and name.lower() != "vary"
                      and not name.lower().startswith("access-control-")})
    if exposed:
        out.append(("Access-Control-Expose-Headers", ", ".join(exposed)))
    vary = next((value for name, value in headers.items() if name.lower() == "vary"), None)
    out.append(("Vary", "Origin" if vary is None else f"{vary}, Origin"))
    return out
