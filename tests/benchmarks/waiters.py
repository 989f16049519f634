"""Calls per second while admin `calls/wait` waiters are waiting (issue 23, D24): run by hand, not collected.

    .venv/bin/python tests/benchmarks/waiters.py [--waiters 0 1 10 100] [--seconds 5] [--python PY]

For each count, starts `plantstub serve --port 0`, opens that many `POST /__plantstub/calls/wait` that never
match (a path no call has, 120 s timeout; each on its own connection), then drives `POST /plants` with wrk
(one thread, 8 connections) and prints calls/s. Needs wrk. Figures vary with the machine's load: compare runs
made one after the other.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

LUA = """
wrk.method = "POST"
wrk.body = '{"id": 1, "name": "Fern"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer t"
"""


def _waiter(url: str, started: threading.Event) -> None:
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=300)
    body = json.dumps({"n": 1, "timeout": 120, "path": "/never", "method": "PUT"}).encode()
    connection.request("POST", "/__plantstub/calls/wait", body=body, headers={"Content-Type": "application/json"})
    started.set()
    try:
        connection.getresponse().read()
    except OSError:
        pass
    finally:
        connection.close()


def measure(python: str, waiters: int, seconds: int, lua: Path) -> float:
    proc = subprocess.Popen([python, "-m", "plantstub", "serve", "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        url = line.strip().removeprefix("plantstub listening on ")
        for _ in range(waiters):
            started = threading.Event()
            threading.Thread(target=_waiter, args=(url, started), daemon=True).start()
            started.wait(5)
        time.sleep(0.5)  # let the stub register every waiter
        out = subprocess.run(["wrk", "-t1", "-c8", f"-d{seconds}s", "-s", str(lua), url + "/plants"],
                             capture_output=True, text=True, check=True).stdout
        found = re.search(r"Requests/sec:\s+([0-9.]+)", out)
        return float(found.group(1)) if found else 0.0
    finally:
        proc.kill()  # not terminate(): a graceful stop would wait for the waiters' answers
        proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--waiters", type=int, nargs="+", default=[0, 1, 10, 100])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        lua = Path(folder) / "post.lua"
        lua.write_text(LUA)
        print("| waiters | calls/s |\n| --- | --- |")
        for count in args.waiters:
            print(f"| {count} | {measure(args.python, count, args.seconds, lua):,.0f} |", flush=True)


if __name__ == "__main__":
    main()
