"""The request a rule is verified with, and a rule that is not sent: the values `plantstub verify` passes between
building, sending, judging and reporting."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from multidict import CIMultiDict

from plantstub._json import NO_BODY, json_bytes
from plantstub.contract.model import Operation
from plantstub.incoming import IncomingRequest

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
NOT_SENT = "not_sent"
NOT_VERIFIABLE = "not_verifiable"


@dataclass(frozen=True, slots=True)
class Request:
    """The request a rule is verified with. `headers` are the rule's and the spec's (--header's are the client's)."""

    method: str
    path: str  # percent-decoded, as the rule matches it
    raw_path: str  # percent-encoded, appended to --against
    query: tuple[tuple[str, str], ...]
    headers: tuple[tuple[str, str], ...]
    body: object  # a JSON value, or NO_BODY
    op: Operation
    breaks: tuple[str, ...] = ()  # the request's own contract problems, when the rule is made to catch them
    withheld: frozenset[str] = frozenset()  # --header names (lower case) not sent: the rule wants them absent

    @property
    def raw_query(self) -> str:
        return urlencode(self.query, quote_via=quote)

    @property
    def target(self) -> str:
        """Path and query as sent (percent-encoded)."""
        return self.raw_path + (f"?{self.raw_query}" if self.query else "")

    @property
    def shown(self) -> str:
        """`GET /plants?limit=2`: how a line names it."""
        query = "&".join(f"{name}={value}" for name, value in self.query)
        return f"{self.method} {self.path}" + (f"?{query}" if query else "")

    @property
    def raw(self) -> bytes:
        return b"" if self.body is NO_BODY else json_bytes(self.body)

    def incoming(self, extra: Iterable[tuple[str, str]] = ()) -> IncomingRequest:
        """The request as the stub reads one: for the contract check, the rule's match and its reply's templates."""
        query: dict[str, list[str]] = {}
        for name, value in self.query:
            query.setdefault(name, []).append(value)
        return IncomingRequest(self.method, self.path, query, CIMultiDict(sent_headers(self, extra)), self.raw,
                               self.raw_path, self.raw_query)


def sent_headers(request: Request, extra: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers a request goes with: --header's (`extra`), but those the rule's request sets or leaves out."""
    own = {name.lower() for name, _ in request.headers} | request.withheld
    return [*((n, v) for n, v in extra if n.lower() not in own), *request.headers]


@dataclass(frozen=True, slots=True)
class Unsent:
    """A rule that is not sent: `outcome` (not_sent, not_verifiable), why, and the request when one was built."""

    outcome: str
    reason: str
    label: str  # `POST /plants`: the request, else the rule's method and path
    request: Request | None = None
