"""--proxy: a request nothing else answers, sent to the real service, and its answer brought back unchanged with
the verdict of the contract on it (`upstream` in the call). One aiohttp client per stub, made on first use."""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict, cast

from aiohttp import (
    ClientConnectorCertificateError,
    ClientConnectorError,
    ClientError,
    ClientPayloadError,
    ClientResponse,
    ClientResponseError,
    ClientSession,
    ClientSSLError,
    ClientTimeout,
    DummyCookieJar,
    ServerDisconnectedError,
    TCPConnector,
)
from multidict import CIMultiDict, MultiMapping
from yarl import URL

from plantstub._json import NO_BODY
from plantstub.config import Settings, shown_url
from plantstub.contract.operations import ServedOperation
from plantstub.contract.outgoing import ErrorRecord, Outgoing, error_reply, unanswered
from plantstub.errors import ConfigError
from plantstub.incoming import IncomingRequest
from plantstub.proxy.record import Recorder
from plantstub.proxy.verdict import judge
from plantstub.recording.verdict import Upstream
from plantstub.webhooks.own import OwnAddresses, ip_of


def trusting(ca: Path | None, flag: str = "") -> ssl.SSLContext:
    """A client's TLS context: certificates verified against the system's CAs, and `ca`'s (a PEM file) when given;
    ConfigError naming `flag` when `ca` cannot be read as CA certificates."""
    context = ssl.create_default_context()
    if ca is not None:
        try:
            context.load_verify_locations(ca)
        except (OSError, ssl.SSLError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ConfigError(f"{flag}={str(ca)!r}: cannot load it as CA certificates ({reason}); expected a PEM "
                              "file") from None
    return context


# RFC 9110 7.6.1: meant for one connection, never passed on (and what the connection's own framing sets).
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
                        "te", "trailer", "trailers", "transfer-encoding", "upgrade"})
# Not sent on: what aiohttp's client sets for the upstream's connection, and the stub's own headers. Accept-Encoding
# is the client's: bodies travel decoded, so the stub can check them (the answer then carries no Content-Encoding).
_NOT_SENT = HOP_BY_HOP | {"host", "content-length", "expect", "accept-encoding"}
_NOT_RETURNED = HOP_BY_HOP | {"content-length", "content-encoding"}
_OURS = "x-plantstub-"
_CHUNK = 64 * 1024
_TLS_CLOSE = 0.25  # seconds the TLS connections to the real service get to close at stop (aiohttp's own advice)
# What no header may hold, as our own answers' headers cannot (aiohttp refuses to write them): a control character
# but tab. Checked on the service's headers before any is sent on.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TOKENS = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?:\t[!#$%&'*+\-.^_`|~0-9A-Za-z]+)*")  # names joined by tabs


class _TooBig(Exception):
    """The upstream's body is over --max-body."""


class ClientLeft(Exception):
    """The client closed its connection while the real service thought: the forwarded request was cancelled. `out`
    (a 499) and `upstream` are what the call records; no answer goes out."""

    def __init__(self, out: Outgoing, upstream: Upstream) -> None:
        super().__init__(cast(ErrorRecord, out.body)["message"])  # our 499's Error record
        self.out = out
        self.upstream = upstream


class _Unsendable(Exception):
    """The upstream's answer has a header that cannot be sent on; the message says which and why."""


def unsendable(headers: Mapping[str, str]) -> str | None:
    """Why one of the service's answer headers cannot be sent on to the client (a control character in its value, a
    name that is not a token), or None when each can."""
    if _CONTROL.search("\t".join(headers.values())) is None and _TOKENS.fullmatch("\t".join(headers.keys())):
        return None  # the usual answer: two searches at C speed
    for name, value in headers.items():
        if _TOKEN.fullmatch(name) is None:
            return f"a header whose name {name[:60]!r} is not a token (RFC 9110 5.1)"
        found = _CONTROL.search(value)
        if found is not None:
            return (f"the header {name[:60]}, whose value holds a control character ({found.group()!r} at "
                    f"{found.start()}), which no HTTP header may carry")
    return None


def _connection_named(headers: MultiMapping[str]) -> set[str]:
    """The headers a Connection header names: hop-by-hop for this connection alone."""
    return {name.strip().lower() for value in headers.getall("Connection", ()) for name in value.split(",")}


def sent_on(headers: MultiMapping[str]) -> CIMultiDict[str]:
    """The request's headers as the upstream gets them: without hop-by-hop ones and the stub's own."""
    named = _connection_named(headers)
    return CIMultiDict((name, value) for name, value in headers.items()
                       if (low := name.lower()) not in _NOT_SENT and low not in named and not low.startswith(_OURS))


def brought_back(headers: MultiMapping[str]) -> CIMultiDict[str]:
    """The upstream's answer headers as the client gets them: without hop-by-hop ones and the framing."""
    named = _connection_named(headers)
    return CIMultiDict((name, value) for name, value in headers.items()
                       if (low := name.lower()) not in _NOT_RETURNED and low not in named)


class ProxyFigures(TypedDict):
    """Health's `proxy`: the real service's URL (no password), calls forwarded, answers that broke the contract,
    calls it never answered."""

    url: str
    forwarded: int
    broke_contract: int
    failed: int


def _ended(task: asyncio.Future[Any]) -> None:
    """A forwarded request cancelled because its client left: what it ended with is read (asyncio would log an error
    it ended by, in the turn its cancellation came, as never retrieved)."""
    if not task.cancelled():
        task.exception()


class Forwarder:
    """The stub's way to the real service: where (`url`), how long it may take, how big an answer may be; the
    figures health shows."""

    def __init__(self, settings: Settings) -> None:
        assert settings.proxy is not None
        self.url = settings.proxy
        self.shown = shown_url(settings.proxy)
        self.timeout = settings.proxy_timeout
        self.max_body = settings.max_body
        self.ca = settings.proxy_ca
        self.ca_named = settings.name_of("proxy_ca")  # how the user gave it (--proxy-ca, PLANTSTUB_PROXY_CA...)
        self.forwarded = 0
        self.broke = 0  # answers that broke the contract
        self.failed = 0  # no answer: refused, unreachable, timed out, TLS, unreadable, too big
        self._client: ClientSession | None = None

    def figures(self) -> ProxyFigures:
        return {"url": self.shown, "forwarded": self.forwarded, "broke_contract": self.broke, "failed": self.failed}

    def _session(self) -> ClientSession:
        if self._client is None:
            self._client = ClientSession(
                connector=TCPConnector(limit=100, ssl=trusting(self.ca)),
                timeout=ClientTimeout(total=self.timeout), auto_decompress=True, cookie_jar=DummyCookieJar(),
                skip_auto_headers=("User-Agent", "Accept", "Content-Type"),  # the client's own, or none, as it sent them
            )
        return self._client

    def check(self) -> None:
        """Stop the start when --proxy-ca cannot be read (ConfigError), rather than fail every forwarded call."""
        trusting(self.ca, self.ca_named)

    async def check_not_itself(self, own: OwnAddresses) -> None:
        """Stop the start (ConfigError) when --proxy names the stub itself (`own`: where it listens): every request
        forwarded would come back to it and be forwarded again, until --proxy-timeout ends the whole chain."""
        url = URL(self.url)
        host, port = url.host or "", url.port or 0
        if ip_of(host) is not None:
            addresses = [host]
        else:  # a name (localhost): where it resolves now
            try:
                found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except OSError:  # it does not resolve: each forwarded call says so (a 502)
                return
            addresses = [str(entry[4][0]) for entry in found]
        if any(own.reaches(address, port) for address in addresses):
            raise ConfigError(f"--proxy: {self.shown!r} is this stub's own address; every request forwarded would "
                              "come back to it (expected the real service's base URL)")

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()
            if self.url.startswith("https:"):  # the TLS connections' shutdown ends on the loop (aiohttp's graceful
                await asyncio.sleep(_TLS_CLOSE)  # shutdown): else a socket is left for the collector (aiohttp 3.11)

    async def forward(self, incoming: IncomingRequest, served: ServedOperation, lost: asyncio.Future[None] | None,
                      recorder: Recorder | None = None) -> tuple[Outgoing, Upstream]:
        """Send `incoming` on: the answer (as recorded and as it is sent back) and the upstream's verdict. `lost`: done
        once the client leaves (None: the transport cannot tell), which cancels the forwarded request (ClientLeft).
        `recorder`: the session's (--record), given the exchange."""
        query = f"?{incoming.raw_query}" if incoming.raw_query else ""
        target = f"{self.url}{incoming.raw_path or incoming.path}{query}"
        shown = f"{self.shown}{incoming.raw_path or incoming.path}{query}"
        self.forwarded += 1
        # The front's headers: a multidict (a repeated header and `Connection`'s names are read as sent).
        headers_sent = sent_on(cast("MultiMapping[str]", incoming.headers))
        exchange = self._exchange(incoming.method, URL(target, encoded=True), headers_sent, incoming.raw)
        try:
            if lost is None:
                status, headers, payload = await exchange
            else:  # a client that leaves stops the wait: the service's connection is not held for nobody
                sending = asyncio.ensure_future(exchange)
                await asyncio.wait((sending, lost), return_when=asyncio.FIRST_COMPLETED)
                if not sending.done():
                    sending.cancel()
                    sending.add_done_callback(_ended)  # it may still end by an error of its own: read, not logged
                    out = unanswered(f"{shown} answered (the forwarded request was cancelled)")
                    message = cast(ErrorRecord, out.body)["message"]  # our 499's Error record
                    if recorder is not None:
                        recorder.failed(incoming, message)
                    raise ClientLeft(out, {"url": shown, "status": None, "valid": False, "errors": [message]})
                status, headers, payload = sending.result()
        except ClientLeft:
            raise
        except Exception as exc:  # noqa: BLE001 - every way the upstream can fail is a 502, never our 500
            self.failed += 1
            message = f"upstream: {self._failure(exc, shown)}"
            out = error_reply(502, message)
            verdict: Upstream = {"url": shown, "status": None, "valid": False, "errors": [message]}
            if recorder is not None:  # a message written to a file carries no query string
                recorder.failed(incoming, f"upstream: {self._failure(exc, shown.partition('?')[0])}")
            return out, verdict
        content_type = headers.get("Content-Type")
        problems, body = judge(served, status, content_type, payload)
        if problems:
            self.broke += 1
        verdict = {"url": shown, "status": status, "valid": not problems, "errors": problems}
        if recorder is not None:
            recorder.add(incoming, status, content_type, payload, body, problems)
        recorded: dict[str, str] = {}
        repeated: list[tuple[str, str]] = []  # a name the answer sends more than once (Set-Cookie): each line kept
        for name, value in headers.items():
            if name.lower() != "content-type":
                if name in recorded:
                    repeated.append((name, value))
                else:
                    recorded[name] = value
        out = Outgoing(status, body if payload else NO_BODY, payload, content_type if payload else None, recorded,
                       more=tuple(repeated))
        return out, verdict

    async def _exchange(self, method: str, url: URL, headers: CIMultiDict[str],
                        raw: bytes) -> tuple[int, CIMultiDict[str], bytes]:
        """One request to the service: its answer's status, headers (hop-by-hop ones left out) and body."""
        async with self._session().request(method, url, headers=headers, data=raw or None,
                                           allow_redirects=False) as answer:
            payload = await self._read(answer)
            headers = brought_back(answer.headers)
            refused = unsendable(headers)
            if refused is not None:
                raise _Unsendable(refused)
            return answer.status, headers, payload

    async def _read(self, answer: ClientResponse) -> bytes:
        """The upstream's body, decoded, refused past --max-body (before it is read when its length says so)."""
        declared = answer.content_length
        if declared is not None and declared > self.max_body and "Content-Encoding" not in answer.headers:
            raise _TooBig
        parts: list[bytes] = []
        size = 0
        while True:
            chunk = await answer.content.read(_CHUNK)
            if not chunk:
                return b"".join(parts)
            size += len(chunk)
            if size > self.max_body:
                raise _TooBig
            parts.append(chunk)

    def _failure(self, exc: BaseException, shown: str) -> str:
        """What went wrong, in our words: refused, unreachable, timed out, TLS, an answer that cannot be read."""
        if isinstance(exc, _TooBig):
            return f"the answer of {shown} is larger than the limit of {self.max_body} bytes (--max-body)"
        if isinstance(exc, _Unsendable):
            return f"the answer of {shown} has {exc}; it is not sent on"
        if isinstance(exc, asyncio.TimeoutError):
            return f"{shown} did not answer within {self.timeout:g} s (--proxy-timeout); timed out"
        return failure(exc, shown) or f"forwarding to {shown} failed: {type(exc).__name__}: {_reason(exc)}"


def failure(exc: BaseException, shown: str, trust: str = "; if it is signed by your own CA, trust that with --proxy-ca "
            "FILE") -> str | None:
    """How a request to the real service at `shown` failed on its way, in our words: TLS, refused, unreachable, closed,
    unreadable, broken off (`plantstub verify` words its own the same). None: for the caller to word (a timeout, a
    limit, anything else). `trust`: what to do about a certificate that does not verify."""
    if isinstance(exc, ClientConnectorCertificateError):
        cert = exc.certificate_error
        why = getattr(cert, "verify_message", None) or getattr(cert, "reason", None) or _reason(cert)
        return f"TLS with {shown} failed: its certificate does not verify ({why}){trust}"
    if isinstance(exc, (ClientSSLError, ssl.SSLError)):
        cause = exc.os_error if isinstance(exc, ClientSSLError) else exc
        return f"TLS with {shown} failed ({getattr(cause, 'reason', None) or _reason(cause)})"
    if isinstance(exc, ClientConnectorError):
        if isinstance(exc.os_error, ConnectionRefusedError):
            return f"{shown} refused the connection; is the real service running?"
        return f"{shown} cannot be reached: {_reason(exc.os_error)}"
    if isinstance(exc, ServerDisconnectedError):
        return f"{shown} closed the connection without answering"
    if isinstance(exc, ClientResponseError):
        return f"the answer of {shown} could not be read as HTTP (a header over 8190 bytes, or malformed)"
    if isinstance(exc, ClientPayloadError):
        return f"the answer of {shown} broke off before its body was complete"
    if isinstance(exc, (ClientError, OSError)):
        return f"{shown} cannot be reached: {_reason(exc)}"
    return None


def _reason(exc: BaseException | None) -> str:
    text = str(exc) if exc is not None else ""
    return (text or type(exc).__name__)[:300]
