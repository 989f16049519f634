"""A spec pattern that backtracks without end never freezes the stub: answered at once, health still up."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from tests.helpers import write

pytestmark = pytest.mark.slow  # starts `plantstub serve`

# `^(a+)+$` is what jsonschema-rs runs (its regex engine does not backtrack); `\Z` is Python-only, so
# jsonschema-rs refuses that schema and jsonschema checks it, with its regexes under a timeout.
SPEC = r"""
openapi: 3.1.0
info: {title: Hostile, version: "1"}
paths:
  /rs:
    post:
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, properties: {name: {type: string, pattern: "^(a+)+$"}}}
      responses:
        "204": {description: ok}
  /python:
    post:
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, properties: {name: {type: string, pattern: "^(a|aa)+\\Z"}}}
      responses:
        "204": {description: ok}
"""


def post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, {}
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


@pytest.mark.parametrize(("path", "value"), [("/rs", "a" * 41 + "!"), ("/python", "a" * 60 + "!")], ids=["rs", "python"])
def test_a_backtracking_pattern_is_answered_at_once(serve, tmp_path, path, value):
    stub = serve("--port", "0", "--spec", str(write(tmp_path, "hostile.yaml", SPEC)), cwd=tmp_path)
    started = time.monotonic()
    status, body = post(stub.url + path, {"name": value})
    took = time.monotonic() - started
    assert status == 400
    assert body["message"].startswith(f"body.name: '{value}'")
    assert took < 3, f"the answer took {took:.1f} s"  # minutes before: the event loop was stuck in `re`
    with urllib.request.urlopen(stub.url + "/__plantstub/health", timeout=2) as response:
        assert json.load(response)["status"] == "ok"
    assert post(stub.url + path, {"name": "aaaa"})[0] == 204
