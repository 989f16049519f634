"""Who may use the admin API: the bearer token of --admin-token, and, always, no state change from a page
on another site (a foreign Origin, a cross-site fetch, or a body that is not JSON), and on a loopback
address no admin call named for another host (a DNS-rebinding page)."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Mapping

from plantstub._json import is_json, shown
from plantstub.server.prefixes import ADMIN_PREFIX
from plantstub.webhooks.sender import WEBHOOK_HEADER

OPEN_PATHS = frozenset({ADMIN_PREFIX + "health",  # for orchestrators' probes, token or not
                        ADMIN_PREFIX})  # the live page: a file with no data in it, which asks for the token
SAFE_METHODS = frozenset({"GET", "HEAD"})


class AdminGuard:
    """Refusals for admin requests: `refusal(request)` is None when the request may go on."""

    def __init__(self, token: str | None, bound_to: str = "127.0.0.1") -> None:
        self._token = None if token is None else token.encode()
        self.token_set = token is not None  # whether any request can carry the token
        self._loopback_only = _is_loopback(bound_to)

    def carries_token(self, headers: Mapping[str, str]) -> bool:
        """Whether `request` carries the admin token (`Authorization: Bearer TOKEN`); False when none is set."""
        if self._token is None:
            return False
        # The scheme is case-insensitive (RFC 9110: `bearer` is `Bearer`) and not secret; the token is
        # compared in constant time.
        scheme, _, credentials = headers.get("Authorization", "").strip().partition(" ")
        sent = credentials.strip().encode("utf-8", "surrogateescape")
        return hmac.compare_digest(sent, self._token) and scheme.lower() == "bearer"

    def refusal(self, method: str, path: str, headers: Mapping[str, str]) -> tuple[int, str, dict[str, str]] | None:
        """(status, message, headers) of the answer that refuses an admin request, or None."""
        if path in OPEN_PATHS and method in SAFE_METHODS:
            return None
        if WEBHOOK_HEADER in headers:  # a delivery of a stub (this one, or another) never drives a stub
            return 403, (f"headers.{WEBHOOK_HEADER}: a webhook or callback that plantstub sends cannot call its "
                         "admin API"), {}
        host = headers.get("Host")
        if self._loopback_only and host is not None and not _is_loopback(_hostname(host)):
            return 403, (f"Host: {shown(host)} is not a loopback name; this stub listens on a loopback "
                         "address, so its admin API answers only to localhost or a loopback IP (a web page "
                         "of another site can make its own name point here)"), {}
        if self._token is not None and not self.carries_token(headers):
            what = "does not carry the admin token" if headers.get("Authorization") else "is missing"
            return 401, (f"Authorization: {what}; this stub's admin API needs 'Bearer <token>' "
                         "with the token of --admin-token"), {"WWW-Authenticate": 'Bearer realm="plantstub admin"'}
        if method in SAFE_METHODS:
            return None
        return _cross_site(headers)


def _hostname(host: str) -> str:
    """`localhost:4010` -> `localhost`, `[::1]:4010` -> `::1`."""
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def _is_loopback(host: str) -> bool:
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _cross_site(headers: Mapping[str, str]) -> tuple[int, str, dict[str, str]] | None:
    """Why a state-changing admin request looks like it comes from a page on another site, if it does."""
    origin = headers.get("Origin")
    if origin is not None and origin.partition("://")[2].lower() != (headers.get("Host") or "").lower():
        return 403, (f"Origin: {shown(origin)} is another site; admin calls that change state are refused "
                     "from web pages of other sites"), {}
    fetch_site = headers.get("Sec-Fetch-Site", "").lower()
    if fetch_site in ("cross-site", "same-site"):
        return 403, (f"Sec-Fetch-Site: {shown(fetch_site)}; admin calls that change state are refused "
                     "from web pages of other sites"), {}
    if headers.get("Content-Length", "0").strip() == "0" and "Transfer-Encoding" not in headers:
        return None  # no body: its declared type does not matter
    content_type = headers.get("Content-Type")
    if content_type is None:
        return 415, "Content-Type: missing for a body; admin calls take an application/json body, or none", {}
    if not is_json(content_type):
        return 415, (f"Content-Type: {shown(content_type)} is not JSON; admin calls take an application/json "
                     "body, or none"), {}
    return None
