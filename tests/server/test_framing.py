"""server/framing.py: where a request's head ends, however the bytes were split into reads."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from plantstub.server.framing import blank_line_end, kept_head, one_request
from plantstub.server.unread import HEAD_KEPT

HEAD = b"POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n"


def test_a_blank_line_in_one_read():
    assert blank_line_end(b"", HEAD + b"{}", 0) == (len(HEAD), b"")
    assert blank_line_end(b"", b"GET / HTTP/1.1\r\nHo", 0) == (18, b"\nHo")


@given(st.integers(min_value=1, max_value=len(HEAD) - 1))
def test_a_blank_line_split_between_two_reads_is_found_where_it_ends(cut):
    first, second = HEAD[:cut], HEAD[cut:]
    end, last = blank_line_end(b"", first, 0)
    if HEAD.find(b"\r\n\r\n") + 4 <= cut:  # the whole blank line came in the first read
        assert (end, last) == (len(HEAD), b"")
        return
    assert (end, last) == (len(first), first[-3:])
    end, last = blank_line_end(last, second, 0)
    assert (cut + end, last) == (len(HEAD), b"")


def test_one_request_is_a_hint_from_content_length():
    assert one_request(HEAD + b"{}", len(HEAD))
    assert not one_request(HEAD + b"{}GET", len(HEAD))


def test_the_head_kept_is_its_first_bytes_however_it_came():
    head = b""
    for part in (b"POST /pla", b"nts HTTP/1.1\r\n", b"x" * (2 * HEAD_KEPT)):
        head = kept_head(head, part)
    assert head == (b"POST /plants HTTP/1.1\r\n" + b"x" * (2 * HEAD_KEPT))[:HEAD_KEPT]
