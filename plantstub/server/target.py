"""A request's target as the stub reads it, whatever carried it: the path (dot segments removed, RFC 3986 5.2.4), the
path as sent, the query. One home for the target's rules: what is not a path, a dot segment hidden behind an encoded
slash, a doubled slash after a session's prefix."""

from __future__ import annotations

import re
from typing import NamedTuple

from yarl import URL

from plantstub._json import cut
from plantstub.contract.outgoing import Outgoing, error_reply

_DOT = re.compile(r"(?:^|/)(?:\.|%2[eE]){1,2}(?=/|$)")  # a `.` or `..` segment, its dots as sent or escaped


_new = tuple.__new__  # a NamedTuple made from a tuple: no frame of its __new__, on every request
_NO_QUERY: dict[str, list[str]] = {}  # a target's query when it has none (never changed: IncomingRequest reads it)


class Target(NamedTuple):
    """What a target names: `path` decoded, `raw_path` as sent (percent-escapes kept), `query` every value of each
    name, `raw_query` as sent ("" when none)."""

    path: str
    raw_path: str
    query: dict[str, list[str]]
    raw_query: str


def not_a_path(target: str) -> Outgoing:
    """The 400 of a target that names no path (`CONNECT host:443`, `OPTIONS *`)."""
    return error_reply(400, f"request: the target {target!r} is not a path such as /plants (plantstub is not a proxy)")


def as_recorded(target: str) -> str:
    """`target` as a refused call records it: bytes that are not UTF-8 (which aiohttp's pure-Python parser passes on
    as lone surrogates) shown as U+FFFD, as an unparsable request line's are (server/unread.py)."""
    return target if target.isascii() else target.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def read_target(target: str, url: URL | None = None) -> Target | Outgoing:
    """`target` (the request line's, or a path within a session's prefix) as the stub reads it, or the 400 refusing it.
    `url`: the parser's reading of it, when at hand (yarl reads escapes and queries)."""
    if not target.isascii() and target != as_recorded(target):  # raw bytes that are not UTF-8 (the C parser refuses
        sent = target.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")  # any raw byte itself)
        return error_reply(400, f"request: the target '{cut(sent, 200)}' is not UTF-8; percent-encode its bytes "
                                "(%ff)")
    if target[:1] == "/" and "%" not in target and "?" not in target and "#" not in target and "/." not in target:
        return _new(Target, (target, target, _NO_QUERY, ""))  # nearly every request: its own path, nothing to decode
    if not target.startswith("/") and "://" not in target:  # `host:443` (CONNECT), `*` (OPTIONS)
        return not_a_path(target)
    if url is None:
        try:
            url = URL(target, encoded=True) if target.startswith("/") else URL(target)
        except ValueError:
            return not_a_path(target)
    elif not target.startswith("/") and not url.absolute:
        return not_a_path(target)
    raw_path = url.raw_path
    if not raw_path.startswith("/"):  # an absolute target with no path: `http://host`
        raw_path = "/" + raw_path
    if ("." in raw_path or "%2" in raw_path) and _DOT.search(raw_path):
        raw_path = remove_dot_segments(raw_path)
        url = URL.build(path=raw_path, query_string=url.raw_query_string, encoded=True)
    path = url.path
    if "." in path and _DOT.search(path):  # `..%2F`: a dot segment once its slash is decoded
        return error_reply(400, f"path: {target[:200]!r} hides a dot segment behind an escaped slash (%2F); send "
                                "the path without it")
    if not url.raw_query_string:
        return Target(path, raw_path, _NO_QUERY, "")
    query = {name: url.query.getall(name) for name in url.query}
    return Target(path, raw_path, query, url.raw_query_string if query else "")


def remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4 on a path as sent: `.` and `..` segments (their dots escaped too) gone, never above the root."""
    kept: list[str] = []
    segments = path.split("/")[1:]
    for i, segment in enumerate(segments):
        dots = segment.replace("%2e", ".").replace("%2E", ".")
        last = i == len(segments) - 1
        if dots == ".":
            if last:
                kept.append("")
        elif dots == "..":
            if kept:
                kept.pop()
            if last:
                kept.append("")
        else:
            kept.append(segment)
    return "/" + "/".join(kept)
