"""The requests of `plantstub verify`, sent with aiohttp's client to --against and nowhere else: redirects not
followed, no cookies kept, each request's whole exchange (its answer read to the end) within one deadline, answers
bounded in size. Every failure comes back as a sentence in our words."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from aiohttp import ClientSession, ClientTimeout, DummyCookieJar, TCPConnector
from multidict import CIMultiDict
from yarl import URL

from plantstub._version import __version__
from plantstub.config import shown_url
from plantstub.proxy.forward import failure, trusting
from plantstub.verify.request import Request, sent_headers

MAX_ANSWER = 16 * 1024 * 1024  # bytes of one answer read; a bigger one is a failure, not a memory problem
_CHUNK = 64 * 1024


@dataclass(frozen=True, slots=True)
class Answer:
    """What the service answered: status, headers, the body's bytes (decoded if compressed), seconds taken."""

    status: int
    headers: CIMultiDict[str]
    payload: bytes
    seconds: float

    @property
    def content_type(self) -> str | None:
        return self.headers.get("Content-Type")


@dataclass(frozen=True, slots=True)
class NoAnswer:
    """Why the service gave no answer to read: refused, unreachable, timed out, TLS, broken off, too big."""

    reason: str
    seconds: float


class _TooBig(Exception):
    pass


class Sender:
    """One client for one run: the base URL, the --header pairs, the deadline of each request."""

    def __init__(self, base: str, headers: tuple[tuple[str, str], ...], timeout: float, ca: Path | None = None) -> None:
        self.base = URL(base)
        self.ca = ca
        self.shown = shown_url(base)
        self.headers = headers
        self.timeout = timeout
        self._client: ClientSession | None = None

    async def __aenter__(self) -> Sender:
        # connect and sock_read inside the deadline; asyncio.wait_for (send()) bounds the whole exchange, a
        # service dripping its answer a byte at a time included.
        self._client = ClientSession(
            # https: aiohttp's own context of the system's CAs, made once; --ca's besides them when given
            connector=TCPConnector(limit=8, ssl=True if self.ca is None else trusting(self.ca, "--ca")),
            timeout=ClientTimeout(total=None, connect=self.timeout, sock_read=self.timeout),
            cookie_jar=DummyCookieJar(), auto_decompress=True,
            headers={"User-Agent": f"plantstub-verify/{__version__}"},
        )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._client is not None:
            await self._client.close()
            if self.base.scheme == "https":
                await asyncio.sleep(0.25)  # the TLS connections close on the loop (aiohttp's graceful shutdown)

    def url(self, request: Request) -> URL:
        """Where `request` goes: the base URL's path and the request's path and query, on the base's origin."""
        url = URL(f"{str(self.base).rstrip('/')}{request.target}", encoded=True)
        if url.origin() != self.base.origin():  # a path cannot name another host, but say so if it ever did
            raise ValueError(f"{request.target} would leave {self.shown}")
        return url

    async def send(self, request: Request) -> Answer | NoAnswer:
        started = time.perf_counter()
        shown = f"{self.shown}{request.target}"
        try:
            url = self.url(request)
            status, headers, payload = await asyncio.wait_for(self._exchange(request, url), self.timeout)
        except Exception as exc:  # noqa: BLE001 - every way the service can fail is an answer of ours
            return NoAnswer(self._failure(exc, shown), time.perf_counter() - started)
        return Answer(status, headers, payload, time.perf_counter() - started)

    async def _exchange(self, request: Request, url: URL) -> tuple[int, CIMultiDict[str], bytes]:
        assert self._client is not None, "Sender is used as `async with Sender(...)`"
        headers = CIMultiDict(sent_headers(request, self.headers))
        async with self._client.request(request.method, url, headers=headers, data=request.raw or None,
                                        allow_redirects=False) as answer:
            declared = answer.content_length
            if declared is not None and declared > MAX_ANSWER and "Content-Encoding" not in answer.headers:
                raise _TooBig
            parts: list[bytes] = []
            size = 0
            while chunk := await answer.content.read(_CHUNK):
                size += len(chunk)
                if size > MAX_ANSWER:
                    raise _TooBig
                parts.append(chunk)
            return answer.status, CIMultiDict(answer.headers), b"".join(parts)

    def _failure(self, exc: BaseException, shown: str) -> str:
        """What went wrong, in our words (the proxy's, for what the way to the service can do)."""
        if isinstance(exc, _TooBig):
            return f"the answer of {shown} is larger than {MAX_ANSWER} bytes; not read"
        if isinstance(exc, asyncio.TimeoutError):
            return f"{shown} did not answer in full within {self.timeout:g} s (--request-timeout)"
        if isinstance(exc, ValueError):
            return str(exc)
        return failure(exc, shown, trust="") or f"sending to {shown} failed: {type(exc).__name__}"
