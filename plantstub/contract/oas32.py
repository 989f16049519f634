"""What OpenAPI 3.2 adds to a document, as the loader reads it: the QUERY method and `additionalOperations`, the
`$self` URI references may use, tags nested under their `parent`, and the list of the 3.2 fields plantstub does not
serve, said once at start (never dropped without a word).

Served elsewhere: `in: querystring` (contract/params.py), `itemSchema` of sequential media types
(contract/streams.py), an Example's `dataValue` and `serializedValue`, `components.mediaTypes` (followed as any
`$ref` is). Read as the documentation they are: a tag's `summary` and `kind`, a server's `name`, a security
scheme's `deprecated`, `oauth2MetadataUrl` and device authorization flow (an OAuth2 scheme is a bearer token
to a stub), a discriminator's `defaultMapping` (a discriminator chooses nothing in JSON Schema).
"""

from __future__ import annotations

import os
import re
from typing import Protocol
from urllib.parse import urljoin

from plantstub._json import essence, shown
from plantstub.contract.model import METHODS, METHODS_32, Parameter
from plantstub.contract.securities import expect
from plantstub.contract.streams import is_sequential
from plantstub.errors import SpecError

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP method, as RFC 9110 spells a token
_URLENCODED = "application/x-www-form-urlencoded"
# The methods aiohttp's C HTTP parser (llhttp) reads, as sent (upper case); it refuses any other request line as
# unparsable before plantstub sees it. Its pure-Python parser (AIOHTTP_NO_EXTENSIONS=1) reads any token.
_LLHTTP = frozenset((
    "DELETE", "GET", "HEAD", "POST", "PUT", "CONNECT", "OPTIONS", "TRACE", "COPY", "LOCK", "MKCOL", "MOVE", "PROPFIND",
    "PROPPATCH", "SEARCH", "UNLOCK", "BIND", "REBIND", "UNBIND", "ACL", "REPORT", "MKACTIVITY", "CHECKOUT", "MERGE",
    "M-SEARCH", "NOTIFY", "SUBSCRIBE", "UNSUBSCRIBE", "PATCH", "PURGE", "MKCALENDAR", "LINK", "UNLINK", "SOURCE", "QUERY",
))


class _Reader(Protocol):
    """What contract/load.py's loader offers to read a parameter's content."""

    warnings: list[str]

    def deref(self, node: object, base: str, where: str) -> tuple[object, str]: ...

    def schema(self, node: object, base: str, where: str, direction: str = "request") -> dict | bool | None: ...


def operations(item: dict[str, object], where: str, v32: bool, warnings: list[str]) -> list[tuple[str, object, str]]:
    """(method, Operation, location) of each operation of a Path Item: its fixed fields (`query` too in 3.2) and,
    in 3.2, each entry of `additionalOperations`, whose key is the method as sent (`COPY`)."""
    found = [(method, item[method], f"{where}.{method}") for method in (METHODS_32 if v32 else METHODS) if method in item]
    if not v32:
        for field in ("query", "additionalOperations"):
            if field in item:  # a 3.2 document labelled 3.1 or 3.0: said, not dropped without a word
                warnings.append(f"{where}.{field}: `{field}` is OpenAPI 3.2's, and this document is an earlier"
                                " version; set aside (`openapi: 3.2.0` serves it)")
        return found
    extra = item.get("additionalOperations")
    if extra is None:
        return found
    if not isinstance(extra, dict):
        raise SpecError(f"{where}.additionalOperations: expected a mapping of HTTP methods to Operations, found"
                        f" {type(extra).__name__} {shown(extra)}")
    for method, node in extra.items():
        here = f"{where}.additionalOperations.{method}"
        if not isinstance(method, str) or not _TOKEN.fullmatch(method):
            warnings.append(f"{here}: {shown(method)} is not an HTTP method name; set aside")
        elif method.lower() in METHODS_32:
            warnings.append(f"{here}: {method} has its own field in a Path Item ({method.lower()}), which"
                            " additionalOperations must not repeat; set aside")
        elif any(m.upper() == method.upper() for m, _, _ in found):
            warnings.append(f"{here}: {method} is declared twice on this path; the first is served")
        else:
            found.append((method, node, here))
            if method not in _LLHTTP and not os.environ.get("AIOHTTP_NO_EXTENSIONS"):
                warnings.append(f"{here}: aiohttp's C HTTP parser refuses a request with the method {method} before"
                                " plantstub sees it (400); it is served when aiohttp runs its pure-Python parser"
                                " (AIOHTTP_NO_EXTENSIONS=1)")
    return found


def self_base(doc: dict[str, object], uri: str, warnings: list[str]) -> str | None:
    """The URI the document's `$self` gives it (relative to where it was read), when it has one."""
    written = doc.get("$self")
    if written is None:
        return None
    if not isinstance(written, str) or "#" in written:
        warnings.append(f"$self: {shown(written)} is not a URI without a fragment; set aside")
        return None
    return urljoin(uri, written)


def as_read(target: str, own: str, uri: str) -> str:
    """A `$ref` target written with the document's `$self` URI (`own`), as the file it names: the document itself,
    or a file beside it (no URL is fetched)."""
    if target.startswith(own) and target[len(own):len(own) + 1] in ("", "#"):
        return uri + target[len(own):]
    folder = urljoin(own, ".")
    if target.startswith(folder) and folder != own:
        return urljoin(uri, ".") + target[len(folder):]
    return target


def querystring(reader: _Reader, raw: dict[str, object], base: str, where: str) -> Parameter:
    """An `in: querystring` parameter: the whole query string as one value of its one `content` media type."""
    content = raw.get("content")
    if isinstance(content, dict) and len(content) == 1:
        media, node = next(iter(content.items()))
        node, media_base = reader.deref({} if node is None else node, base, f"{where}.content.{media}")
        schema = expect(dict, node, f"{where}.content.{media}", "a Media Type mapping").get("schema")
        at = f"{where}.content.{media}.schema"
    else:
        media, media_base, schema, at = _URLENCODED, base, raw.get("schema"), f"{where}.schema"
        reader.warnings.append(f"{where}: in: querystring takes its media type from `content`, with one entry;"
                               f" read as {_URLENCODED}")
    return Parameter(name=str(raw["name"]), location="querystring", required=raw.get("required", False) is True,
                     schema=reader.schema(schema, media_base, at), explode=False, style="", media=str(media))


def querystring_warnings(params: list[Parameter], where: str) -> list[str]:
    """An `in: querystring` parameter beside `in: query` ones, or a second one (the specification's MUST NOTs):
    each is still checked, and the document is told."""
    whole = [p for p in params if p.location == "querystring"]
    if not whole:
        return []
    out = []
    if len(whole) > 1:
        out.append(f"{where}: {len(whole)} `in: querystring` parameters ({', '.join(shown(p.name) for p in whole)}):"
                   " each reads the whole query")
    named = [p.name for p in params if p.location == "query"]
    if named:
        out.append(f"{where}: `in: query` parameters ({', '.join(map(shown, named))}) beside the `in: querystring`"
                   f" parameter {shown(whole[0].name)}: both are checked")
    return out


def tag_warnings(doc: dict[str, object]) -> list[str]:
    """A tag whose `parent` names no declared tag, or whose parents lead back to it (the specification's MUSTs)."""
    tags = doc.get("tags")
    if not isinstance(tags, list):
        return []
    parents = {str(t["name"]): t.get("parent") for t in tags if isinstance(t, dict) and "name" in t}
    out = []
    for i, (name, parent) in enumerate(parents.items()):
        if parent is None:
            continue
        if parent not in parents:
            out.append(f"tags[{i}]: parent {shown(parent)} of tag {shown(name)} is not a declared tag")
            continue
        seen = [name]
        while parent is not None and parent in parents and parent not in seen:
            seen.append(parent)
            parent = parents[parent]
        if parent == name:
            out.append(f"tags[{i}]: tag {shown(name)} is its own ancestor ({' -> '.join(map(str, [*seen, name]))})")
    return out


def media_aside(media: dict[str, object], name: str, where: str) -> list[str]:
    """The 3.2 fields of one Media Type Object that plantstub does not serve, each with its place."""
    aside = [f"{field} ({where})" for field in ("itemEncoding", "prefixEncoding") if field in media]
    if "itemSchema" in media and not is_sequential(name):
        aside.append(f"itemSchema of {essence(name)} ({where}): plantstub streams JSON Lines, NDJSON, JSON text"
                     " sequences and Server-Sent Events")
    return aside


def aside_line(aside: list[str]) -> list[str]:
    """The one start-up line naming the 3.2 fields set aside (the first places of each)."""
    if not aside:
        return []
    shown_ones = aside[:5] + ([f"and {len(aside) - 5} more"] if len(aside) > 5 else [])
    return [f"OpenAPI 3.2 fields plantstub does not serve, set aside: {'; '.join(shown_ones)}"]
