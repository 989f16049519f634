"""Shared test helpers: paths, headers, request builders and a running `plantstub serve` subprocess.

Test modules import these with `from tests.helpers import ...`; tests/conftest.py keeps only fixtures and hooks.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from multidict import CIMultiDict

from plantstub.incoming import IncomingRequest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
SPECS = DATA / "specs"  # OpenAPI documents written for the tests
SCENARIO_DATA = DATA / "scenarios"  # scenario files written for the tests: good/, broken/, duplicates/

# Hypothesis: a test asks for the examples its search needs, `examples(400)`; under the `ci` profile (chosen in
# tests/conftest.py when CI is set, as .ci/run sets it) each search runs at most CI_EXAMPLES, so CI's time is bounded.
CI_EXAMPLES = 50


def hypothesis_profile() -> str:
    """The Hypothesis profile this run uses: HYPOTHESIS_PROFILE when set, else `ci` under CI (the variable CI
    services and .ci/run set), else `dev`."""
    chosen = os.environ.get("HYPOTHESIS_PROFILE", "")
    if chosen:
        return chosen
    return "ci" if os.environ.get("CI", "").lower() not in ("", "0", "false", "no") else "dev"


def examples(wanted: int) -> int:
    """How many examples a search that wants `wanted` runs: all of them, or CI_EXAMPLES at most under `ci`."""
    return min(wanted, CI_EXAMPLES) if hypothesis_profile() == "ci" else wanted


# How long a wait for what surely comes may last before the test calls it a hang. Never a measure of speed: a busy
# 2-core machine takes a small part of it; only a hang, or the return of what hung before, reaches it.
HANG = 60.0

AUTH = {"Authorization": "Bearer t"}
JSON_AUTH = {**AUTH, "Content-Type": "application/json"}

# A small spec other than the Plant Store: GET and DELETE /trees/{treeId}.
TREES = """\
openapi: 3.1.0
info: {title: Trees, version: "1"}
paths:
  /trees/{treeId}:
    get:
      responses:
        "200":
          description: a tree
          content:
            application/json:
              schema: {type: object, required: [height], properties: {height: {type: integer}}}
        "404": {description: no such tree}
    delete:
      responses:
        "204": {description: gone}
"""


def same(actual: list[str], expected: list[str | re.Pattern[str]]) -> bool:
    """Each line equals its expected text, or matches its expected pattern in full (a pattern stands where a
    library's words follow plantstub's, as they may change with the library's release)."""
    return len(actual) == len(expected) and all(
        bool(e.fullmatch(a)) if isinstance(e, re.Pattern) else a == e for a, e in zip(actual, expected, strict=True))


def write(folder: Path, name: str, text: str) -> Path:
    """Write `text` to folder/name (UTF-8) and return the path."""
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def post_status(base_url: str, body: bytes, path: str = "/plants") -> int:
    """POST a JSON `body` with a bearer token using only the standard library; the status it got."""
    request = urllib.request.Request(base_url + path, data=body, method="POST", headers=JSON_AUTH)
    try:
        with urllib.request.urlopen(request, timeout=HANG) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def address(url: str) -> tuple[str, int]:
    """(host, port) of a base URL, whatever its shape (`http://127.0.0.1:4010`, `.../`, `.../__session/ID/`)."""
    parts = urllib.parse.urlsplit(url)
    assert parts.hostname is not None and parts.port is not None, url
    return parts.hostname, parts.port


def raw_call(url: str, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None):
    """(status, body bytes, headers) of one request that carries only the headers the caller sets. It waits for the
    answer up to twice HANG: an admin wait (`calls/wait`) may take HANG itself."""
    import http.client
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=2 * HANG)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read(), response.headers
    finally:
        connection.close()


def make_request(method: str = "POST", path: str = "/plants", *, headers=None, query=None, raw: bytes = b"",
                 raw_query: str = "") -> IncomingRequest:
    """An IncomingRequest as app.py builds it (case-insensitive headers, query values as lists)."""
    return IncomingRequest(method, path, query or {}, CIMultiDict(headers or {}), raw, raw_query=raw_query)


class ServeProcess:
    """`plantstub serve` in a subprocess on a free port; `url` parsed from its listening line."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
                 open_files: int | None = None) -> None:
        def limit() -> None:  # in the child: a lower open-file limit (ulimit -n), as some CI machines have
            import resource

            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "plantstub", "serve", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, **(env or {})}, cwd=cwd, preexec_fn=limit if open_files else None,
        )
        self.started = time.monotonic()
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("plantstub listening on "):
            self.stop()
            raise AssertionError(f"no listening line; got {line!r}; stderr: {self.stderr}")
        self.listening_line = line.rstrip("\n")
        self.url = self.listening_line.removeprefix("plantstub listening on ")
        self.stderr = ""

    def stop(self, sig: int | None = None, timeout: float = HANG) -> int:
        if self.proc.stdout is None or self.proc.stdout.closed:
            return self.proc.returncode
        if self.proc.poll() is None:
            if sig is None:
                self.proc.terminate()
            else:
                self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stderr = self.proc.stderr.read() if self.proc.stderr else ""
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()
        return self.proc.returncode


class Receiver:
    """A webhook receiver on 127.0.0.1 (a thread of the standard library's HTTP server): records each request
    it gets and answers the next of `statuses` (the last repeats), after `delay` seconds."""

    def __init__(self, statuses: tuple[int, ...] = (200,), delay: float = 0.0) -> None:
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.received: list[dict] = []
        self.statuses = list(statuses)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.received.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(raw or b"null")})
                status = outer.statuses.pop(0) if len(outer.statuses) > 1 else outer.statuses[0]
                if delay:
                    time.sleep(delay)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # a hundred deliveries at once connect without waiting out a full backlog

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # A short poll: shutdown() waits for serve_forever's next poll (0.5 s by default) in every test's teardown.
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> Receiver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Silent:
    """A receiver that never answers: a socket on 127.0.0.1 that listens and never accepts (connections wait in
    the kernel's backlog, their requests unread)."""

    def __init__(self) -> None:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1024)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def __enter__(self) -> Silent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.sock.close()


def wait_until(condition: Callable[[], object], seconds: float = HANG) -> None:
    """Look at `condition` every 20 ms until it holds; fail after `seconds` (a hang)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def free_port_url() -> str:
    """The URL of a port on 127.0.0.1 that nothing listens on (it was free a moment ago)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def call(url: str, method: str, path: str, data: object = None, headers: dict[str, str] | None = None) -> tuple[int, object]:
    """A JSON request with the standard library: (status, parsed JSON answer or None)."""
    import json

    body = None if data is None else json.dumps(data).encode()
    request = urllib.request.Request(url + path, data=body, method=method,
                                     headers={**JSON_AUTH, **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=HANG) as response:
            raw = response.read()
            return int(response.status), json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        return exc.code, json.loads(raw) if raw else None


@contextlib.contextmanager
def no_hang(what: str = "the block", seconds: float = HANG) -> Iterator[None]:
    """Fail when the block ran `seconds` or more: a hang, or the return of what hung before (minutes, hours). It
    measures no speed: the work inside is meant to take a small part of it on a busy machine."""
    started = time.monotonic()
    yield
    took = time.monotonic() - started
    assert took < seconds, f"{what} ran {took:.1f} s: hung (the bound is {seconds:g} s)"


def cpu_seconds(pid: int, thread: int | None = None) -> float:
    """The CPU time (user and system) process `pid`, or one of its threads, has used so far, from /proc (Linux).

    A ratio of CPU times holds on a busy machine where wall-clock times do not: load delays a process, it does not
    make its work larger."""
    where = f"/proc/{pid}/task/{thread}/stat" if thread is not None else f"/proc/{pid}/stat"
    fields = Path(where).read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime and stime, fields 14 and 15


def live_cpu_seconds(pid: int) -> float:
    """The CPU time the threads of process `pid` alive now have used, to the nanosecond where the kernel keeps
    scheduler statistics (/proc/PID/task/TID/schedstat), else in clock ticks. A thread that ended is not counted:
    compare two readings only across work whose threads live on (the loop's, asyncio.to_thread's)."""
    total = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0]) / 1e9
        except FileNotFoundError:  # no schedstat in this kernel (or the thread just ended)
            with contextlib.suppress(FileNotFoundError):
                total += cpu_seconds(pid, int(task.name))
    return total


class LoopCPU:
    """The CPU time `plantstub serve` (process `pid`) used during a `with` block: in all, and on its event loop's
    thread (the main thread). Work done off the loop is CPU the loop's thread did not use, and the split does not
    move with the machine's load: `share` stands in for "other requests were not held up" where a wall-clock
    figure would fail on a busy machine. Threads that ended meanwhile count in the whole (/proc keeps their time)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.loop = self.total = 0.0

    def __enter__(self) -> LoopCPU:
        self.loop, self.total = -cpu_seconds(self.pid, self.pid), -cpu_seconds(self.pid)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.loop += cpu_seconds(self.pid, self.pid)
        self.total += cpu_seconds(self.pid)

    @property
    def share(self) -> float:
        """The loop's part of the CPU time used (1.0 when none was measured)."""
        return self.loop / self.total if self.total > 0 else 1.0

    def __str__(self) -> str:
        return f"the event loop used {self.loop:.2f} s of the {self.total:.2f} s of CPU"


def resident_bytes(pid: int) -> int:
    """Process `pid`'s resident memory (VmRSS), in bytes, from /proc (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"/proc/{pid}/status has no VmRSS line")


def jsonschema_rs_compiles(pattern: str) -> bool:
    """Whether the installed jsonschema-rs compiles `pattern`: releases differ (0.61.2 compiles `^.{0,262144}$`, which
    earlier ones refused as over their size limit), and plantstub sets aside exactly what it cannot compile."""
    import jsonschema_rs

    try:
        jsonschema_rs.validator_for({"type": "string", "pattern": pattern})
    except Exception:
        return False
    return True


class Upstream:
    """A real service for --proxy (tests/upstream_app.py) in a subprocess on 127.0.0.1: `url` from its listening
    line; `cert` and `key` make it serve HTTPS. Stopped by its PID. `script` and `args` run another service of the
    tests' (tests/plant_store_app.py, whose line says `plant store listening on`)."""

    def __init__(self, cert: Path | None = None, key: Path | None = None, script: str = "upstream_app.py",
                 args: tuple[str, ...] = ()) -> None:
        tls = [str(cert), str(key)] if cert is not None and key is not None else []
        self.proc = subprocess.Popen([sys.executable, str(REPO / "tests" / script), *args, *tls],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        ready = re.match(r"(upstream|plant store) listening on (\S+)$", line.strip())
        if ready is None:
            self.close()
            raise AssertionError(f"the upstream did not start: {line!r}")
        self.url = ready.group(2)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()

    def __enter__(self) -> Upstream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def reload(sessions: Any) -> list[str]:
    """Reload a stub's scenarios folder as --watch does (load_folder, then install): what it logs."""
    return sessions.install(sessions.load_folder())
