"""`plantstub health` says in its own words why a stub is not healthy: a URL that is not one, nothing listening,
something else answering, no answer in time; never urllib's `<urlopen error ...>`.

Found by a new user's trial: `plantstub health --url localhost:4010` said `<urlopen error unknown url type:
localhost>`, and a stopped stub `<urlopen error [Errno 111] Connection refused>`.
"""

from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest


def health(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "plantstub", "health", *args], capture_output=True, text=True,
                          timeout=30)


def refused(probe: subprocess.CompletedProcess, expected: str) -> None:
    assert probe.returncode == 1, probe
    assert probe.stderr.strip() == expected
    assert "urlopen" not in probe.stderr


@pytest.fixture
def not_a_stub() -> Iterator[str]:
    """A web server that is no plantstub: it answers 404 in HTML to everything."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", "9")
            self.end_headers()
            self.wfile.write(b"<p>no</p>")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_url_without_its_scheme_is_named():
    refused(health("--url", "localhost:4010"),
            "plantstub: --url 'localhost:4010' is not the base URL of a stub (expected http://HOST:PORT or "
            "https://HOST:PORT)")


def test_nothing_listening_is_said_so():
    with socket.socket() as sock:  # a port just free: nothing listens on it
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    probe = health("--url", f"http://127.0.0.1:{port}")
    assert probe.returncode == 1
    assert probe.stderr.startswith(f"plantstub: http://127.0.0.1:{port} is not healthy: cannot reach the stub there: ")
    assert "urlopen" not in probe.stderr


def test_something_else_answering_is_said_so(not_a_stub):
    refused(health("--url", not_a_stub),
            f"plantstub: {not_a_stub} is not healthy: it answered HTTP 404 to GET /__plantstub/health, not JSON; is a "
            "plantstub listening there?")


def test_no_answer_in_time_names_the_timeout():
    with socket.socket() as sock:  # listens, never answers
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        refused(health("--url", url, "--timeout", "0.3"),
                f"plantstub: {url} is not healthy: no answer within 0.3 s (--timeout)")
