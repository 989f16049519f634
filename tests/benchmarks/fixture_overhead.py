"""Per-test overhead of the `plantstub` fixture against a plain session server fixture.

Generates two suites of N tests (default 500) that each make one POST /plants, runs each with
pytest a few times, and prints the median wall time and the difference per test.
Run by hand: `.venv/bin/python tests/benchmarks/fixture_overhead.py [--tests 500] [--runs 3]`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CALL = '''
import json, urllib.request

def call(url, i):
    request = urllib.request.Request(url + "/plants", data=json.dumps({"id": i, "name": "Fern"}).encode(),
        method="POST", headers={"Authorization": "Bearer t", "Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        assert response.status == 200
'''

PLANTSTUB_SUITE = CALL + '''
import pytest

@pytest.mark.parametrize("i", range({n}))
def test_one(plantstub, i):
    call(plantstub.url, i)
'''

# A session server fixture as a project without plantstub writes it (fixture_startup.py compares against it too).
AIOHTTP_FIXTURE = '''
import asyncio, threading
import pytest
from aiohttp import web


@pytest.fixture(scope="session")
def server():
    async def plants(request):
        await request.read()
        return web.json_response({"name": "Fern"})

    app = web.Application()
    app.router.add_post("/plants", plants)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app, access_log=None)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = runner.addresses[0][1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}"
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
'''

PLAIN_SUITE = CALL + AIOHTTP_FIXTURE + '''

@pytest.mark.parametrize("i", range({n}))
def test_one(server, i):
    call(server, i)
'''


def run_suite(folder: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", str(folder)],
                                capture_output=True, text=True, cwd=folder)
        times.append(time.perf_counter() - started)
        if result.returncode != 0:
            raise SystemExit(f"suite in {folder} failed:\n{result.stdout[-2000:]}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        suites = {}
        for name, text in (("plain", PLAIN_SUITE), ("plantstub", PLANTSTUB_SUITE)):
            folder = Path(tmp) / name
            folder.mkdir()
            (folder / "test_suite.py").write_text(text.replace("{n}", str(args.tests)))
            (folder / "pytest.ini").write_text("[pytest]\n")
            (folder / "scenarios").mkdir()
            suites[name] = folder
        figures = {name: run_suite(folder, args.runs) for name, folder in suites.items()}
    per_test = (figures["plantstub"] - figures["plain"]) / args.tests * 1000
    print(f"{args.tests} tests, median of {args.runs} runs (wall time of the whole pytest process)")
    print(f"  plain session server fixture : {figures['plain']:.2f} s")
    print(f"  plantstub fixture            : {figures['plantstub']:.2f} s")
    print(f"  overhead per test            : {per_test:.2f} ms   (target: at most 2 ms)")


if __name__ == "__main__":
    main()
