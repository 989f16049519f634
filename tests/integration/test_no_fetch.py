"""No URL is ever fetched because a spec said so: `$schema` dialect URLs, through every schema library path."""

from __future__ import annotations

import http.server
import threading

import pytest

from tests.helpers import ServeProcess, post_status, write


@pytest.fixture
def listener():
    """A local HTTP server that counts the requests it gets (it must get none)."""
    hits: list[str] = []

    class Counting(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"type": "object"}')

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", hits
    server.shutdown()
    server.server_close()


SPEC = """\
openapi: 3.1.0
info: {{title: Dialects, version: "1"}}
paths:
  /x:
    post:
      requestBody:
        required: true
        content:
          application/json:
            schema:
              $schema: "{base}/draft-05/schema#"
              type: object
              required: [n]
              properties:
                n: {{$schema: "{base}/other", type: integer, pattern: "^[0-9]+$"}}
                s: {{type: string, pattern: "^\\\\w+$"}}
      responses:
        "200": {{description: ok}}
"""


def test_a_schema_dialect_url_is_never_fetched(tmp_path, listener):
    base, hits = listener
    spec = write(tmp_path, "spec.yaml", SPEC.format(base=base))
    stub = ServeProcess("--port", "0", "--spec", str(spec), cwd=tmp_path)
    try:
        assert post_status(stub.url, b'{"n": 1}', "/x") == 200
        assert post_status(stub.url, b'{"n": "one"}', "/x") == 400
        assert post_status(stub.url, b'{"n": 1, "s": "ab"}', "/x") == 200
        assert post_status(stub.url, b'{"n": 1, "s": "a b"}', "/x") == 400
    finally:
        stub.stop()
    assert hits == []
