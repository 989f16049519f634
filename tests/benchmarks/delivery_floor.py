"""The least a webhook delivery can cost on asyncio, against what plantstub's costs (issue 41: a subscriber at most
1.10x the same call without one, by instructions per call).

    .venv/bin/python tests/benchmarks/delivery_floor.py [--calls 600] [--connections 1] [--lean ../shared/bench/aiohttp_lean.py]

Run by hand (pytest does not collect it); needs valgrind (callgrind). It starts, each under callgrind, the lean floor
(`../shared/bench/aiohttp_lean.py`'s handler: a contract-checked `POST /plants` on aiohttp's low-level server) without
and with a delivery per valid call, and plantstub (`--spec plant-store-full`) without and with `--webhook`. The floor's
delivery is the least one can do: the call's answer body written as a POST, in the handler, on one kept connection to
the receiver (pipelined, no task, no future), each answer's status found in `data_received`; nothing is recorded,
retried, timed out, bounded or held in a memory budget. The floor, recorded, adds the least a recorded delivery
needs: numbered and timed, its bytes counted, written at the end of the turn (after the answer that set it off), its
status read from the answer's head and kept in a bounded log (still no retry, timeout, session or lock). The receiver
is an aiohttp server in a process of its own.
Prints k instructions per call (the whole server process, the kernel left out) and each delivery's cost.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

# run as a script: its folder is on sys.path
from feature_cost import RECEIVER, Case, free_port, instructions, wait_port

LEAN = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "aiohttp_lean.py"  # ../shared beside the checkout

FLOOR = textwrap.dedent('''
    """The lean floor, with a delivery per valid creation when given a receiver's port (and `ledger`: recorded)."""
    import asyncio
    import collections
    import runpy
    import sys
    import time

    import orjson
    from aiohttp import web

    lean = runpy.run_path(sys.argv[1])
    HEAD = b"POST /hook HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nContent-Type: application/json\\r\\nContent-Length: "


    class Link(asyncio.Protocol):
        """One kept connection to the receiver: requests written as they come, answers counted as they come."""

        def __init__(self):
            self.transport = None
            self.answered = 0

        def connection_made(self, transport):
            self.transport = transport

        def data_received(self, data):
            self.answered += data.count(b"HTTP/1.1 ")

        def send(self, payload):
            self.transport.write(b"%s%d\\r\\n\\r\\n%s" % (HEAD, len(payload), payload))


    class Ledger(Link):
        """The least a delivery that is recorded costs: numbered and timed when decided, its bytes counted in a budget,
        written at the end of the turn (after the answer that set it off), each answer's status read from its head and
        the delivery kept with it in a bounded log. No retry, timeout, session, bound on what is in flight, lock."""

        def __init__(self):
            super().__init__()
            self.flights = collections.deque()
            self.out = []
            self.seq = 0
            self.heads = {}  # an answer's head -> (status, body length)
            self.log = collections.deque(maxlen=10_000)
            self.budget = 1 << 30

        def data_received(self, data):
            pos, size = 0, len(data)
            while pos < size and self.flights:
                end = data.find(b"\\r\\n\\r\\n", pos)
                head = data[pos:end]
                found = self.heads.get(head)
                if found is None:
                    status = int(head[9:12])
                    length = 0 if status in (204, 304) else int(head.lower().split(b"content-length:")[1].split(b"\\r\\n")[0])
                    found = self.heads[head] = (status, length)
                status, length = found
                pos = end + 4 + length
                seq, at, payload, held = self.flights.popleft()
                self.log.append((seq, at, payload, status, 200 <= status < 300))
                self.budget += held

        def send(self, payload):
            self.seq += 1
            held = len(payload) + 400
            self.budget -= held
            self.flights.append((self.seq, time.time(), payload, held))
            if not self.out:
                asyncio.get_running_loop().call_soon(self.flush)
            self.out.append(b"%s%d\\r\\n\\r\\n%s" % (HEAD, len(payload), payload))

        def flush(self):
            out, self.out = self.out, []
            self.transport.write(out[0] if len(out) == 1 else b"".join(out))


    async def main(port, receiver):
        loop = asyncio.get_running_loop()
        link = None
        if receiver:
            kind = Ledger if sys.argv[4:] == ["ledger"] else Link
            _, link = await loop.create_connection(kind, "127.0.0.1", receiver)
        handle = lean["handle"]

        async def delivering(request):
            answer = await handle(request)
            if link is not None and answer.status == 200:
                link.send(answer.body)
            return answer

        await loop.create_server(web.Server(delivering, access_log=None), "127.0.0.1", port)
        await asyncio.Event().wait()


    asyncio.run(main(int(sys.argv[2]), int(sys.argv[3])))
''')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--lean", type=Path, default=LEAN, help="the lean floor's script (../shared/bench/aiohttp_lean.py)")
    args = parser.parse_args()
    lean = args.lean
    if not lean.exists():
        sys.exit(f"the lean floor is not at {lean} (--lean)")
    with tempfile.TemporaryDirectory() as tmp:
        floor = Path(tmp, "floor.py")
        floor.write_text(FLOOR)
        port = free_port()
        receiver = subprocess.Popen([sys.executable, "-c", RECEIVER, str(port)], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
        try:
            wait_port(port, receiver)
            full = ["--spec", "plant-store-full"]
            cases = [("lean floor", "off", Case("floor", script=[str(floor), str(lean), "{port}", "0"])),
                     ("lean floor", "on", Case("floor+delivery", script=[str(floor), str(lean), "{port}", str(port)])),
                     ("floor, recorded", "on", Case("floor+ledger", script=[str(floor), str(lean), "{port}", str(port),
                                                                           "ledger"])),
                     ("plantstub", "off", Case("full", full)),
                     ("plantstub", "on", Case("webhook", [*full, "--webhook", f"http://127.0.0.1:{port}/hook"]))]
            got = {}
            for server, which, case in cases:
                got[server, which] = instructions(args.python, case, args.calls, None, args.connections)[0]
                print(f"{case.name}: {got[server, which]:.1f} k instructions per call", file=sys.stderr, flush=True)
        finally:
            receiver.terminate()
            receiver.wait(10)
    print(f"| server ({args.connections} connection(s)) | k instructions / call, no delivery | with one | a delivery |"
          " with ÷ without |")
    print("|---|---|---|---|---|")
    got["floor, recorded", "off"] = got["lean floor", "off"]
    for server in ("lean floor", "floor, recorded", "plantstub"):
        off, on = got[server, "off"], got[server, "on"]
        print(f"| {server} | {off:.1f} | {on:.1f} | +{on - off:.1f}k | {on / off:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
