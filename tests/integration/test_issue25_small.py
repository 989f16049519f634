"""`plantstub serve` on the small classes of issue 25 (tests/data/specs/issue25-small.yaml): long integers,
one-value array form fields, text/json and multipart bodies, non-JSON answers, '#' and '?' in path keys."""

from __future__ import annotations

import json

import pytest

from tests.helpers import SPECS, ServeProcess, raw_call

BIG = "123456789012345678901234567890123456789"  # 39 digits: `type: integer` has no size limit


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    stub = ServeProcess("--spec", str(SPECS / "issue25-small.yaml"), "--port", "0",
                        "--scenarios", str(tmp_path_factory.mktemp("scenarios")))
    try:
        yield stub.url
    finally:
        stub.stop()
    assert "Traceback" not in stub.stderr


def answer(url: str, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None):
    """(status, JSON body or text, Content-Type) of one request."""
    status, data, head = raw_call(url, method, path, body, headers)
    kind = head.get("Content-Type")
    return status, json.loads(data) if kind and "json" in kind else data.decode(), kind


def test_integer_parameters_of_any_length_are_integers(url):
    status, body, _ = answer(url, "GET", f"/big/{BIG}?q=-{BIG}", headers={"X-Count": BIG})
    assert (status, body) == (200, {})


def test_integer_parameters_keep_their_format_bounds(url):
    status, body, _ = answer(url, "GET", f"/big/1?small={BIG}")
    assert (status, body["message"]) == (400, f"query.small: {BIG} is greater than the maximum of 9223372036854775807")


def test_a_long_integer_form_field_is_an_integer(url):
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    assert answer(url, "POST", "/forms", f"name=a&count={BIG}".encode(), form)[:2] == (200, {})
