"""--cors: answer browsers' CORS preflights and let pages of any origin read the stub's answers.

The admin API stays out of it: a page of another site can neither preflight nor read it.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

from aiohttp import web

from plantstub.contract.router import Router
from plantstub.server.wire import Written

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
MAX_AGE = "600"  # seconds a browser may reuse a preflight answer
SHOWN = 1000  # the longest list of request headers echoed back
# Headers a page can always read; the others are exposed by name.
_SAFELISTED = frozenset({"cache-control", "content-language", "content-length", "content-type", "expires",
                         "last-modified", "pragma"})


def is_preflight(request: web.BaseRequest) -> bool:
    """Whether `request` is a browser's CORS preflight (OPTIONS asking for a method), with or without --cors."""
    return request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers


def preflight(request: web.BaseRequest, router: Router) -> web.Response:
    """204 allowing the method asked for (so the real request reaches the stub and gets its true
    answer, a 405 included), the path's declared methods, and the headers asked for."""
    wanted = request.headers["Access-Control-Request-Method"].strip().upper()
    route = router.route("OPTIONS", request.rel_url.raw_path)
    methods = {wanted, *route.allow}
    if route.operation is not None:
        methods.add("OPTIONS")
    headers = {
        "Access-Control-Allow-Origin": request.headers["Origin"],
        "Access-Control-Allow-Credentials": "true",
        "Access-Control-Allow-Methods": ", ".join(sorted(m for m in methods if m.isalpha())),
        "Access-Control-Max-Age": MAX_AGE,
        "Vary": "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
    }
    asked = request.headers.get("Access-Control-Request-Headers", "")
    if asked and len(asked) <= SHOWN:
        headers["Access-Control-Allow-Headers"] = asked
    return web.Response(status=204, headers=headers)


def allow_origin(request: web.BaseRequest, response: web.StreamResponse) -> None:
    """Let the requesting page read `response` (and its headers)."""
    if response.prepared:  # a fault already on the wire: nothing to add
        return
    if type(response) is Written and response.allow(request.headers["Origin"]):
        return  # the usual answer: its head with these headers made once per origin (server/wire.py)
    headers = response.headers
    headers["Access-Control-Allow-Origin"] = request.headers["Origin"]
    headers["Access-Control-Allow-Credentials"] = "true"
    exposed = sorted({name for name in headers if name.lower() not in _SAFELISTED and
                      not name.lower().startswith("access-control-")})
    if exposed:
        headers["Access-Control-Expose-Headers"] = ", ".join(exposed)
    headers["Vary"] = f"{headers['Vary']}, Origin" if "Vary" in headers else "Origin"


def with_cors(handler: Handler, router: Router, admin_prefix: str) -> Handler:
    """`handler`, answering preflights itself and adding CORS headers to the stub's answers."""

    @functools.wraps(handler)  # its __wrapped__: the pipeline's handle, which server/sessions.py looks for
    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        if "Origin" not in request.headers or request.path.startswith(admin_prefix):
            return await handler(request)
        if is_preflight(request):
            return preflight(request, router)
        response = await handler(request)
        allow_origin(request, response)
        return response

    return handle
