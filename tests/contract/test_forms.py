"""Form bodies read as JSON (contract/forms.py): multipart/form-data split by python-multipart's parser within our
bounds, each part's bytes kept exactly; every refusal in our words."""

from __future__ import annotations

import pytest

from plantstub._json import BodyError
from plantstub.contract.forms import MAX_HEADER_LINE, MAX_HEADERS, MAX_PARTS, FormFields

FORM = FormFields({"type": "object", "properties": {"photo": {"type": "string", "format": "binary"},
                                                   "caption": {"type": "string"}, "tags": {"type": "array"}}})


def body(*parts: tuple[bytes, bytes], boundary: bytes = b"B0undary") -> bytes:
    """A multipart body of (header lines, data) parts, each ended by the boundary; then the closing one."""
    return b"".join(b"--" + boundary + b"\r\n" + head + b"\r\n" + data + b"\r\n" for head, data in parts) + \
        b"--" + boundary + b"--\r\n"


def test_parts_keep_their_bytes_exactly_boundary_lookalikes_and_line_ends_too():
    # a line starting with part of the boundary, the boundary with more after it, empty lines, a last CR LF and '-'
    tricky = b"line\r\n--B0undar\r\n--B0undaryX is no delimiter\r\n\r\n\r\n-"
    sent = body((b'Content-Disposition: form-data; name="caption"\r\n', tricky),
                (b'Content-Disposition: form-data; name="tags"\r\n', b"a"),
                (b'Content-Disposition: form-data; name="tags"\r\n', b""))
    assert FORM.multipart(sent, "multipart/form-data; boundary=B0undary") == {
        "caption": tricky.decode(), "tags": ["a", ""]}


def test_a_large_part_is_read_whole():
    data = bytes(range(32, 127)) * 10_000  # 950 KB in one part, read in one pass
    fields = FORM.multipart(body((b'Content-Disposition: form-data; name="caption"\r\n', data)),
                            'multipart/form-data; boundary="B0undary"')
    assert fields == {"caption": data.decode()}


def test_the_bounds_are_ours_whatever_the_parser_allows():
    many = body(*[(b'Content-Disposition: form-data; name="tags"\r\n', b"x")] * MAX_PARTS)
    assert len(FORM.multipart(many, "multipart/form-data; boundary=B0undary")["tags"]) == MAX_PARTS
    headers = b'Content-Disposition: form-data; name="caption"\r\n' + b"".join(
        b"X-%d: y\r\n" % i for i in range(MAX_HEADERS - 1))
    assert FORM.multipart(body((headers, b"x")), "multipart/form-data; boundary=B0undary") == {"caption": "x"}
    with pytest.raises(BodyError, match=rf"^part 1: its headers are not lines of `Name: value` \(at most "
                                        rf"{MAX_HEADERS} lines"):
        FORM.multipart(body((headers + b"X-last: y\r\n", b"x")), "multipart/form-data; boundary=B0undary")
    line = b'Content-Disposition: form-data; name="caption"\r\nX-Big: ' + b"v" * (MAX_HEADER_LINE - 5) + b"\r\n"
    assert FORM.multipart(body((line, b"x")), "multipart/form-data; boundary=B0undary") == {"caption": "x"}
    with pytest.raises(BodyError, match=r"^part 1: its headers are not lines"):
        FORM.multipart(body((line.replace(b"X-Big: ", b"X-Bigger: "), b"x")), "multipart/form-data; boundary=B0undary")


def test_a_malformed_body_logs_nothing(caplog):
    caplog.set_level("DEBUG")
    for sent in (b"no boundary here", b"--B0undary\r\nbad header\r\n\r\nx\r\n--B0undary--\r\n", b"--B0undary\r\n"):
        with pytest.raises(BodyError):
            FORM.multipart(sent, "multipart/form-data; boundary=B0undary")
    assert caplog.records == []
