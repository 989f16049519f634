"""The answer's headers against its declared response (proxy/verdict.py's header_problems, which verify asks):
a header marked `required` missing, a declared one whose value breaks its schema."""

from __future__ import annotations

from multidict import CIMultiDict

from plantstub.contract.load import load_spec
from plantstub.contract.operations import serve
from plantstub.proxy.verdict import header_problems
from tests.helpers import write

LIMITED = """\
openapi: 3.1.0
info: {title: Limited, version: "1"}
paths:
  /plants:
    get:
      responses:
        "200":
          description: plants
          headers:
            X-Rate-Limit: {required: true, schema: {type: integer, minimum: 1}}
            X-Trace: {schema: {type: string, pattern: "^t-"}}
          content: {application/json: {schema: {type: array}}}
        "400": {description: refused}
"""


def test_required_and_declared_response_headers_are_judged(tmp_path):
    spec = load_spec(write(tmp_path, "limited.yaml", LIMITED))
    (served,) = serve(spec).values()
    assert header_problems(served, 200, CIMultiDict({"X-Rate-Limit": "10", "X-Trace": "t-1"})) == []
    assert header_problems(served, 200, CIMultiDict({"x-trace": "nope"})) == [
        "response.headers.X-Rate-Limit: missing; GET /plants response 200 marks it required",
        "response.headers.X-Trace: 'nope' does not match '^t-' (GET /plants response 200)",
    ]
    assert header_problems(served, 200, CIMultiDict({"X-Rate-Limit": "0"})) == [
        "response.headers.X-Rate-Limit: 0 is less than the minimum of 1 (GET /plants response 200)"]
    assert header_problems(served, 400, CIMultiDict()) == []
    assert header_problems(served, 418, CIMultiDict()) == []  # an undeclared status: judge() says so
