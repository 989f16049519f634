"""A spec pattern that backtracks without end never freezes the stub: answered at once, health still up."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.helpers import HANG, no_hang, write

# jsonschema-rs runs `^(a+)+$` in linear time (no lookaround: its regex engine does not backtrack); a pattern
# with a lookahead backtracks, and is stopped after a bounded number of steps (contract/pattern.py).
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
  /lookahead:
    post:
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, properties: {name: {type: string, pattern: "^(a|aa)+(?!b)$"}}}
      responses:
        "204": {description: ok}
  /keys:
    post:
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              properties:
                k: {type: object, patternProperties: {"^(a|aa)+(?!b)$": {type: integer}}, additionalProperties: false}
                arr: {type: array, items: {type: string, pattern: "^(a|aa)+(?!b)$"}}
                many: {type: array, items: {type: string}}
      responses:
        "204": {description: ok}
"""


def post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=HANG) as response:
            return response.status, {}
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


@pytest.mark.parametrize(("path", "value", "said"), [
    ("/rs", "a" * 41 + "!", "does not match '^(a+)+$'"),
    ("/lookahead", "a" * 60 + "!", "could not be checked against its pattern (too costly to match)"),
], ids=["linear", "lookahead"])
def test_a_backtracking_pattern_is_answered_not_backtracked_for_ages(serve, tmp_path, path, value, said):
    stub = serve("--port", "0", "--spec", str(write(tmp_path, "hostile.yaml", SPEC)), cwd=tmp_path)
    with no_hang("the answer"):  # milliseconds (ages in Python's `re`)
        status, body = post(stub.url + path, {"name": value})
    assert status == 400
    assert body["message"] == f"body.name: '{value}' {said}"
    with urllib.request.urlopen(stub.url + "/__plantstub/health", timeout=HANG) as response:
        assert json.load(response)["status"] == "ok"
    assert post(stub.url + path, {"name": "aaaa"})[0] == 204


@pytest.mark.parametrize("body", [
    {"k": {"a" * 40 + f"!{i}": 1 for i in range(2000)}},  # jsonschema-rs: a lookahead, many keys
    {"arr": ["a" * 40 + "!"] * 100},  # each stopped after a bounded number of steps
    {"many": [1] * 300_000},  # 300,000 violations
], ids=["many-costly-keys", "many-costly-items", "many-violations"])
def test_many_costly_values_are_answered_each_within_its_bound(serve, tmp_path, body):
    stub = serve("--port", "0", "--spec", str(write(tmp_path, "hostile.yaml", SPEC)), "--max-body", "4000000",
                 cwd=tmp_path)
    with no_hang("the answer"):  # each costly value stopped after a bounded number of steps
        status, answer = post(stub.url + "/keys", body)
    assert status == 400 and answer["message"].startswith("body.")
    assert len(answer["message"]) < 20_000  # not 13 MB of messages
    with urllib.request.urlopen(stub.url + "/__plantstub/health", timeout=HANG) as response:
        assert json.load(response)["status"] == "ok"
