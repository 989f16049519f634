"""Rules from code: declarations per second against `plantstub serve`, with this many rules declared already.

  .venv/bin/python tests/benchmarks/declare_rules.py [--at 0,1000,5000,9600] [--batch 200]

At each level it declares rules over raw HTTP (`POST /__plantstub/rules`, keep-alive) until the level is reached
(9,600: the last 400 fit under the 10,000 allowed), then times `--batch` more declarations, each followed by one request to the stub (the request is what rebuilt the
rule index when rules were kept in one piece), and `--batch` declarations alone. Prints declarations/s per level, and the stub's CPU time per declaration (steadier than
wall time on a shared machine)."""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.helpers import ServeProcess

HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer t"}


def _send(conn: http.client.HTTPConnection, method: str, path: str, body: object) -> int:
    conn.request(method, path, json.dumps(body).encode(), HEADERS)
    response = conn.getresponse()
    response.read()
    return response.status


def _cpu(pid: int) -> float:
    """The seconds of CPU the process has used (user and system): what a loaded machine moves less than wall time."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rule(i: int) -> dict:
    return {"match": {"method": "POST", "path": "/plants", "body": {"name": f"n{i}"}}, "reply": {"status": 200, "body": {"name": f"r{i}"}}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--at", default="0,1000,5000,9600")
    parser.add_argument("--batch", type=int, default=200)
    args = parser.parse_args()
    levels = [int(n) for n in args.at.split(",")]
    server = ServeProcess("--port", "0", "--scenarios", str(Path(__file__).parent))
    try:
        parts = urllib.parse.urlsplit(server.url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
        declared = 0
        pid = server.proc.pid
        print(f"{'rules':>7} {'declare+request/s':>18} {'stub CPU ms each':>17} {'declare/s':>10} {'stub CPU ms each':>17}")
        for level in levels:
            while declared < level:
                assert _send(conn, "POST", "/__plantstub/rules", _rule(declared)) == 201
                declared += 1
            at = declared
            started, cpu = time.perf_counter(), _cpu(pid)
            for _ in range(args.batch):
                assert _send(conn, "POST", "/__plantstub/rules", _rule(declared)) == 201
                declared += 1
                _send(conn, "POST", "/plants", {"id": 1, "name": "other"})
            with_request = args.batch / (time.perf_counter() - started)
            with_request_cpu = (_cpu(pid) - cpu) / args.batch * 1000
            started, cpu = time.perf_counter(), _cpu(pid)
            for _ in range(args.batch):
                assert _send(conn, "POST", "/__plantstub/rules", _rule(declared)) == 201
                declared += 1
            alone = args.batch / (time.perf_counter() - started)
            alone_cpu = (_cpu(pid) - cpu) / args.batch * 1000
            print(f"{at:>7} {with_request:>18.0f} {with_request_cpu:>17.2f} {alone:>10.0f} {alone_cpu:>17.2f}", flush=True)
        conn.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
