"""The stub's own listening addresses, which a callback URL taken from a request never reaches: an IP literal is
checked before sending, a name where aiohttp resolves it (so what is checked is what is connected to)."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

from aiohttp.abc import AbstractResolver
from aiohttp.resolver import DefaultResolver

IP = ipaddress.IPv4Address | ipaddress.IPv6Address


def ip_of(host: str) -> IP | None:
    """`host` as an IP address (an IPv4-mapped IPv6 one as IPv4, a zone left out); None when it is a name."""
    try:
        ip = ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _local(ip: IP) -> bool:
    """Whether `ip` is an address of this machine (a socket binds to it only then); no I/O, no wait."""
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((str(ip), 0))
    except OSError:
        return False
    return True


class OwnAddresses:
    """Where the stub listens, as (IP, port) pairs once it does (`listen()`); `reaches(host, port)` says whether an
    address would reach it: the bound IP, an unspecified one (0.0.0.0, ::), any loopback IP when bound to one, any
    address of this machine when bound to all of them, at the port it listens on."""

    def __init__(self) -> None:
        self.bound: list[tuple[IP, int]] = []

    def listen(self, sockets: list[Any]) -> None:
        """The addresses of the listening sockets (aiohttp runner's `addresses`: (host, port, ...) each)."""
        for address in sockets:
            if isinstance(address, tuple) and len(address) >= 2 and (ip := ip_of(str(address[0]))) is not None:
                self.bound.append((ip, int(address[1])))

    def reaches(self, host: str, port: int) -> bool:
        ip = ip_of(host)
        if ip is None:
            return False
        for bound, at in self.bound:
            if at != port:
                continue
            if ip == bound or ip.is_unspecified or (bound.is_loopback and ip.is_loopback):
                return True
            if bound.is_unspecified and (ip.is_loopback or _local(ip)):
                return True
        return False


class OwnAddress(OSError):
    """A name that resolves only to the stub's own addresses."""


class GuardedResolver(AbstractResolver):
    """aiohttp's resolver, with the stub's own addresses left out of every answer: a name that resolves only to
    them raises OwnAddress, so nothing connects there (a DNS answer cannot change between check and use)."""

    def __init__(self, own: OwnAddresses) -> None:
        self.own = own
        self.inner = DefaultResolver()

    async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET) -> Any:
        found = await self.inner.resolve(host, port, family)
        kept = [entry for entry in found if not self.own.reaches(entry["host"], entry["port"])]
        if found and not kept:
            raise OwnAddress(found[0]["host"])  # the first address, to name it
        return kept

    async def close(self) -> None:
        await self.inner.close()
