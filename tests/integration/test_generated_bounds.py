"""Issue 37, item 12: a spec asking for numbers past what a float holds, or for answers of gigabytes, never stops the
start with a traceback nor freezes it: `plantstub serve` starts, says in one line per operation where the schema asks
too much, and answers 501 there (or a bounded answer), fixed or --dynamic: one bound (1 MiB) for every generated answer."""

from __future__ import annotations

import json

import pytest

from plantstub import Stub
from tests.helpers import ServeProcess, call, write

SCHEMAS = {
    "/tiny-step": {"type": "number", "multipleOf": 1e-300, "maximum": 1e300},
    "/denormal-step": {"type": "number", "multipleOf": 5e-324},
    "/huge-minimum": {"type": "integer", "minimum": 10**400},
    "/huge-minimum-number": {"type": "number", "minimum": 10**400},
    "/gigabyte": {"type": "string", "minLength": 1_000_000_000},
    "/billion-items": {"type": "array", "minItems": 1_000_000_000, "items": {"type": "integer"}},
    "/million-items": {"type": "array", "minItems": 1_000_000, "items": {"type": "integer"}},
    "/cubed": {"type": "object", "required": ["rows"], "properties": {"rows": {
        "type": "array", "minItems": 1000, "items": {"type": "array", "minItems": 1000, "items": {
            "type": "array", "minItems": 1000, "items": {"type": "integer"}}}}}},
    "/many-properties": {"type": "object", "minProperties": 1_000_000_000},
    "/squared": {"type": "array", "minItems": 200, "items": {"type": "array", "minItems": 200, "items": {"type": "integer"}}},
}
TOO_LARGE = {  # the place and the keyword each warning names
    "/gigabyte": "body: minLength 1,000,000,000",
    "/billion-items": "body: minItems 1,000,000,000",
    "/million-items": "body: minItems 1,000,000",
    "/cubed": "body.rows: minItems 1,000 of 2,002,002 bytes each",
    "/many-properties": "body: minProperties 1,000,000,000",
}


def spec_text() -> str:
    paths = {path: {"get": {"responses": {"200": {"description": "x", "content": {
        "application/json": {"schema": schema}}}}}} for path, schema in SCHEMAS.items()}
    return json.dumps({"openapi": "3.1.0", "info": {"title": "Big", "version": "1"}, "paths": paths})


def too_large(path: str) -> str:
    return (f"GET {path}: the schema of its response 200 (application/json) asks for more than 1.0 MiB, the most a "
            f"generated answer holds ({TOO_LARGE[path]})")


@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "dynamic"])
def test_serve_starts_says_where_and_answers_within_the_bound(tmp_path, dynamic):
    spec = write(tmp_path, "big.json", spec_text())
    stub = ServeProcess("--spec", str(spec), "--port", "0", *(["--dynamic", "--seed", "1"] if dynamic else []), cwd=tmp_path)
    try:
        for path in ("/tiny-step", "/denormal-step"):
            assert call(stub.url, "GET", path) == (200, 0)
        for path in ("/huge-minimum", "/huge-minimum-number"):  # exact: an integer past a float's range
            status, body = call(stub.url, "GET", path)
            assert status == 200 and isinstance(body, int) and 10**400 <= body <= 10**400 + 10_000
        for path in TOO_LARGE:
            status, body = call(stub.url, "GET", path)
            assert (status, body) == (501, {"error": 501, "message": f"plantstub cannot answer {too_large(path)}; a "
                                            "scenario rule with `off_contract: true` can answer it"})
        for _ in range(3):  # 200 x 200: within the bound, fixed or drawn
            status, body = call(stub.url, "GET", "/squared")
            assert status == 200 and len(body) >= 200 and all(len(row) >= 200 for row in body)
    finally:
        stub.stop()
    assert "Traceback" not in stub.stderr
    assert f"plantstub: {len(TOO_LARGE)} operation(s) of {spec} have no answer that keeps the contract;" in stub.stderr
    for path in TOO_LARGE:
        assert f"\n  {too_large(path)}\n" in stub.stderr + "\n"


def test_an_in_process_stub_starts_and_answers_at_once(tmp_path):
    spec = write(tmp_path, "big.json", spec_text())
    with Stub(spec=spec, dynamic=True) as stub:
        assert call(stub.url, "GET", "/billion-items")[0] == 501
        assert call(stub.url, "GET", "/tiny-step") == (200, 0)
