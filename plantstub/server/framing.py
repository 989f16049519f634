"""Where a request's parts end in the bytes a connection reads (server/connection.py feeds the parser one part at a
time): pure functions of the bytes and of what the read before left, so each is tested alone."""

from __future__ import annotations

from plantstub.server.unread import HEAD_KEPT


def one_request(data: bytes, head_end: int) -> bool:
    """Whether `data` is one request whose Content-Length says its body is all the rest: then it is fed
    to the parser at once. A hint only: the parser reads the same bytes either way."""
    return data.find(b"\r\nContent-Length: %d\r\n" % (len(data) - head_end), 0, head_end) >= 0


def blank_line_end(last: bytes, data: bytes, pos: int) -> tuple[int, bytes]:
    """Where the next `\\r\\n\\r\\n` in `data` from `pos` ends (one begun in `last`, the previous read's last three
    bytes, counts), else len(data); and the bytes to keep for the next read (empty when one was found)."""
    if last and pos == 0 and (found := (last + data[:3]).find(b"\r\n\r\n")) >= 0:
        return found + 4 - len(last), b""
    found = data.find(b"\r\n\r\n", pos)
    if found >= 0:
        return found + 4, b""
    return len(data), (last + data[pos:])[-3:]


def kept_head(head: bytes, part: bytes) -> bytes:
    """The start of the request arriving now, with `part` read: its first HEAD_KEPT bytes (a head may come in
    several reads), what a refusal names it by."""
    if not head:
        return part[:HEAD_KEPT]
    if len(head) < HEAD_KEPT:
        return (head + part[:HEAD_KEPT])[:HEAD_KEPT]
    return head


class Closed:
    """The parser of a connection that reads no more: whatever comes is dropped."""

    def feed_data(self, data: bytes) -> tuple[tuple[()], bool, bytes]:
        return (), False, b""
