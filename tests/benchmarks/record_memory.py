"""What does --record hold, and does a save stall the stub? Issue 37's figures: `--exchanges` proxied answers of
`--size` bytes each, recorded by a fresh `plantstub serve --proxy URL --record DIR`, then `POST record/save` while
another thread asks `GET health` every 20 ms.

    .venv/bin/python tests/benchmarks/record_memory.py [--exchanges 60] [--size 1000000] [--shape empty|long]
        [--max-bytes BYTES]

Run by hand from the repository's root (pytest does not collect it); Linux only (reads /proc). `--shape empty`: each
answer is a list of `{}` objects (it breaks the contract: a plant needs a name); `plants`: of `{"name":"p"}` (it keeps
the contract, but holds more values than a scenario file may: it can never become a rule); `long`: one plant whose
name is `--size` bytes (it can). Prints the stub's resident memory growth (VmRSS) per
exchange, health's memory figures, the save's duration and the longest health answer during it, what the save
wrote, and the peak RSS while `GET calls?format=har` sends the journal.
"""

from __future__ import annotations

import argparse
import http.client
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.helpers import Upstream, resident_bytes  # noqa: E402  (after the path is set)

MB = 1024 * 1024
AUTH = {"Authorization": "Bearer t"}


class Stub:
    """`python -m plantstub serve --spec plant-store-full --proxy URL --record DIR ARGS...` on a free port."""

    def __init__(self, upstream: str, folder: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "plantstub", "serve", "--port", "0", "--spec", "plant-store-full", "--proxy",
             upstream, "--record", str(folder), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tempfile.gettempdir())
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("plantstub listening on "):
            self.stop()
            raise SystemExit(f"the stub did not start: {line!r}")
        host, port = line.strip().removeprefix("plantstub listening on http://").rsplit(":", 1)
        self.host, self.port = host, int(port)

    def request(self, method: str, path: str, timeout: float = 600) -> tuple[int, bytes]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            connection.request(method, path, headers=AUTH)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def json(self, method: str, path: str) -> Any:
        return json.loads(self.request(method, path)[1])

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(600)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        err = self.proc.stderr.read() if self.proc.stderr else ""
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()
        return err


def during_save(stub: Stub) -> tuple[float, float, Any]:
    """(the save's seconds, the longest GET health in the meantime, the save's answer)."""
    done = threading.Event()
    longest = [0.0]

    def ask() -> None:
        while not done.is_set():
            started = time.monotonic()
            stub.request("GET", "/__plantstub/health")
            longest[0] = max(longest[0], time.monotonic() - started)
            time.sleep(0.02)

    asker = threading.Thread(target=ask)
    asker.start()
    started = time.monotonic()
    status, body = stub.request("POST", "/__plantstub/record/save")
    took = time.monotonic() - started
    done.set()
    asker.join()
    return took, longest[0], (status, json.loads(body) if body else None)


def har_peak(stub: Stub) -> tuple[int, int, int]:
    """(RSS before `GET calls?format=har`, the highest RSS seen while it was sent, its bytes), RSS read every 5 ms."""
    before = resident_bytes(stub.proc.pid)
    done = threading.Event()
    peak = [before]

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], resident_bytes(stub.proc.pid))
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    _, body = stub.request("GET", "/__plantstub/calls?format=har")
    done.set()
    watcher.join()
    return before, peak[0], len(body)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exchanges", type=int, default=60)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--shape", choices=("empty", "plants", "long"), default="empty")
    parser.add_argument("--max-bytes", default=None)
    args = parser.parse_args()
    with Upstream() as upstream, tempfile.TemporaryDirectory() as folder:
        stub = Stub(upstream.url, Path(folder), *(["--max-bytes", args.max_bytes] if args.max_bytes else []))
        try:
            stub.request("GET", "/plants?limit=1")
            stub.request("POST", "/__plantstub/record/save")
            before = resident_bytes(stub.proc.pid)
            statuses: dict[int, int] = {}
            for _ in range(args.exchanges):
                status, _ = stub.request("GET", f"/plants?bulk={args.size}&shape={args.shape}")
                statuses[status] = statuses.get(status, 0) + 1
            after = resident_bytes(stub.proc.pid)
            health = stub.json("GET", "/__plantstub/health")
            took, longest, (status, saved) = during_save(stub)
            har_before, har_high, har_size = har_peak(stub)
        finally:
            err = stub.stop()
    grown = after - before
    memory = health["memory"]["session"]
    print(f"{args.exchanges} answers of {args.size:,} bytes ({args.shape}), statuses {statuses}")
    print(f"RSS growth: {grown / MB:,.1f} MiB, {grown / max(args.exchanges, 1) / MB:,.2f} MiB an exchange")
    print(f"health memory held: {memory['held'] / MB:,.1f} MiB; parts: "
          + ", ".join(f"{kind} {n / MB:,.1f} MiB" for kind, n in memory["parts"].items())
          + f"; dropped: {memory['dropped']}")
    if "recording" in health:
        print(f"health recording: {health['recording']}")
    print(f"save: HTTP {status} in {took:.2f} s; longest GET health meanwhile {longest * 1000:.0f} ms")
    if isinstance(saved, dict):
        left = saved.get("left_out") or []
        print(f"save wrote {saved.get('file')}: {saved.get('rules')} rules, {len(left)} left out"
              + (f" (first: {left[0][:160]})" if left else ""))
    print(f"HAR export: {har_size / MB:,.1f} MiB sent; peak RSS {har_high / MB:,.1f} MiB, "
          f"+{(har_high - har_before) / MB:,.1f} MiB over the {har_before / MB:,.1f} MiB before it")
    if err.strip():
        print("stderr:", err.strip()[-400:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
