"""What does one kept call cost in memory? The journal filled with bench.py's calls, measured two ways (issue 41).

    .venv/bin/python tests/benchmarks/journal_bytes.py [--calls 10000] [--invalid] [--top 12] [--no-rss]
        [--no-tracemalloc] [--connections 1]

Run by hand from the repository's root (pytest does not collect it); Linux (reads /proc). The calls are bench.py's:
`POST /plants` with the headers wrk sends (Host, Authorization, Content-Type, Content-Length) and a new `id` each
(`--invalid`: `"x<N>"`, answered 400), one after another on one kept connection.

1. tracemalloc, in this process (a `Stub` in its background thread): after 1,000 calls of warm-up and a reset, the
   bytes Python holds once `--calls` calls are kept, less what it holds once they are reset away, per call; the lines
   that allocated them (the top `--top`); and what the byte budget counts a call (health's `calls`).
2. RSS, of a `plantstub serve` process (unless --no-rss): its resident memory after the same warm-up and reset, then
   after the calls, per call (what the OS sees: Python's objects, the allocator's pools and what it cannot give back);
   then, as bench.py goes on, after as many calls of the other kind (invalid, or valid with --invalid) and twice as
   many of the first, and the highest it was (VmHWM). `--connections`: that many connections send at once.
"""

from __future__ import annotations

import argparse
import gc
import json
import socket
import subprocess
import sys
import tempfile
import threading
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.append(str(REPO))  # appended: PYTHONPATH=<another checkout> measures that one

from tests.helpers import resident_bytes  # noqa: E402  (after the path is set)


class Client:
    """One kept connection sending bench.py's request (wrk's headers) and reading each answer whole."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port))
        self.host = f"{host}:{port}"
        self.file = self.sock.makefile("rb")

    def send(self, method: str, path: str, body: bytes = b"", auth: bool = True) -> tuple[int, bytes]:
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\n"
        if auth:
            head += "Authorization: Bearer t\r\nContent-Type: application/json\r\n"
        head += f"Content-Length: {len(body)}\r\n\r\n"
        self.sock.sendall(head.encode() + body)
        status = int(self.file.readline().split()[1])
        length = 0
        while (line := self.file.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return status, self.file.read(length)

    def plants(self, count: int, start: int, invalid: bool) -> dict[int, int]:
        statuses: dict[int, int] = {}
        for n in range(start, start + count):
            ident = f'"x{n}"' if invalid else str(n)
            status, _ = self.send("POST", "/plants", b'{"id": %s, "name": "Fern", "tag": "indoor"}' % ident.encode())
            statuses[status] = statuses.get(status, 0) + 1
        return statuses

    def admin(self, method: str, route: str) -> bytes:
        return self.send(method, f"/__plantstub/{route}", auth=False)[1]

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def counted_per_call(client: Client) -> float:
    health = json.loads(client.admin("GET", "health"))
    memory = health["memory"]["session"]
    return memory["parts"].get("calls", 0), health


def in_process(calls: int, invalid: bool, top: int) -> None:
    from plantstub.stub import Stub

    tracemalloc.start(1)
    with tempfile.TemporaryDirectory() as folder, Stub(spec_root=folder) as stub:
        host, port = stub.url.removeprefix("http://").rstrip("/").rsplit(":", 1)
        client = Client(host, int(port))
        client.plants(1000, 1_000_000, invalid)
        client.admin("POST", "reset")
        gc.collect()
        empty = tracemalloc.take_snapshot()
        statuses = client.plants(calls, 1, invalid)
        counted, _ = counted_per_call(client)
        kept = len(stub.calls)
        gc.collect()
        full = tracemalloc.take_snapshot()
        client.admin("POST", "reset")
        gc.collect()
        cleared = tracemalloc.take_snapshot()
        client.close()
    tracemalloc.stop()
    held = sum(s.size_diff for s in full.compare_to(cleared, "lineno"))
    grown = sum(s.size_diff for s in full.compare_to(empty, "lineno"))
    print(f"{calls} calls {'invalid' if invalid else 'valid'}, statuses {statuses}, {kept} kept")
    print(f"tracemalloc: {held / calls:,.0f} B a kept call (what a reset frees); {grown / calls:,.0f} B a call "
          f"grown since the empty journal")
    print(f"the budget counts {counted / calls:,.0f} B a call (health: calls {counted:,} B, ahead included)")
    print(f"top {top} lines that hold the kept calls (B a call, blocks a call):")
    for stat in sorted(full.compare_to(cleared, "lineno"), key=lambda s: -s.size_diff)[:top]:
        frame = stat.traceback[0]
        where = f"{Path(frame.filename).name}:{frame.lineno}"
        print(f"  {stat.size_diff / calls:8.1f} B {stat.count_diff / calls:6.2f}  {where}")


def peak_bytes(pid: int) -> int:
    """Process `pid`'s highest resident memory so far (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"/proc/{pid}/status has no VmHWM line")


def rss(calls: int, invalid: bool, connections: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        proc = subprocess.Popen([sys.executable, "-m", "plantstub", "serve", "--port", "0"], cwd=folder,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = proc.stdout.readline() if proc.stdout else ""
            host, port = line.strip().removeprefix("plantstub listening on http://").rsplit(":", 1)
            clients = [Client(host, int(port)) for _ in range(connections)]

            def load(count: int, start: int, bad: bool) -> None:  # `count` calls over every connection at once
                each = count // connections
                threads = [threading.Thread(target=client.plants, args=(each, start + k * each, bad))
                           for k, client in enumerate(clients)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()

            load(1000, 1_000_000, invalid)
            clients[0].admin("POST", "reset")
            idle = resident_bytes(proc.pid)
            load(calls, 1, invalid)
            after = resident_bytes(proc.pid)
            # then as bench.py loads it: the other kind of call, then the first again, twice as many
            load(calls, 2_000_000, not invalid)
            turned = resident_bytes(proc.pid)
            load(2 * calls, 3_000_000, invalid)
            last = resident_bytes(proc.pid)
            peak = peak_bytes(proc.pid)
            for client in clients:
                client.close()
        finally:
            proc.terminate()
            proc.wait(60)
            for stream in (proc.stdout, proc.stderr):
                if stream:
                    stream.close()
    mib = 2**20
    print(f"RSS of `plantstub serve` ({connections} connections): {idle / mib:.1f} MiB after warm-up and reset, "
          f"{after / mib:.1f} MiB after {calls} calls: {(after - idle) / calls:,.0f} B a call; then "
          f"{turned / mib:.1f} MiB after {calls} {'valid' if invalid else 'invalid'} ones, {last / mib:.1f} MiB after "
          f"{2 * calls} more like the first; peak {peak / mib:.1f} MiB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--invalid", action="store_true")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--no-rss", action="store_true")
    parser.add_argument("--connections", type=int, default=1, help="of the RSS part, each in a thread of its own")
    parser.add_argument("--no-tracemalloc", action="store_true")
    args = parser.parse_args()
    if not args.no_tracemalloc:
        in_process(args.calls, args.invalid, args.top)
    if not args.no_rss:
        rss(args.calls, args.invalid, args.connections)
    return 0


if __name__ == "__main__":
    sys.exit(main())
