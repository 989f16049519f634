"""The least a webhook delivery can cost on asyncio, against what plantstub's costs (issue 41: a subscriber at most
1.10x the same call without one, by instructions per call).

    .venv/bin/python tests/benchmarks/delivery_floor.py [--calls 600] [--connections 1] [--lean ../shared/bench/aiohttp_lean.py]

Run by hand (pytest does not collect it); needs valgrind (callgrind). It starts, each under callgrind, the lean floor
(`../shared/bench/aiohttp_lean.py`'s handler: a contract-checked `POST /plants` on aiohttp's low-level server) without
and with a delivery per valid call, and plantstub (`--spec plant-store-full`) without and with `--webhook`. The floor's
delivery is the least one can do: the call's answer body written as a POST, in the handler, on one kept connection to
the receiver (pipelined, no task, no future), each answer's status found in `data_received`; nothing is recorded,
retried, timed out, bounded or held in a memory budget. The receiver is an aiohttp server in a process of its own.
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
    """The lean floor, with a delivery per valid creation when given a receiver's port."""
    import asyncio
    import runpy
    import sys

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


    async def main(port, receiver):
        loop = asyncio.get_running_loop()
        link = None
        if receiver:
            _, link = await loop.create_connection(Link, "127.0.0.1", receiver)
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
    for server in ("lean floor", "plantstub"):
        off, on = got[server, "off"], got[server, "on"]
        print(f"| {server} | {off:.1f} | {on:.1f} | +{on - off:.1f}k | {on / off:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
