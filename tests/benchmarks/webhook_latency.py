"""Does sending webhooks slow down the answer that triggers them? p50/p99 of POST /plants on
`plantstub serve --spec plant-store-full`, without a subscriber and with one that answers in 200 ms.

    .venv/bin/python tests/benchmarks/webhook_latency.py [--requests 2000] [--concurrency 8] [--receiver-ms 200]

Run by hand (pytest does not collect it); bounded: each case sends --requests requests, then waits at most
30 s for the deliveries to arrive. The receiver runs in a process of its own; on a 2-core machine stub,
client and receiver still share the CPUs, so a delivery's cost shows up as CPU taken from the stub.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time

import aiohttp
from aiohttp import web

BODY = json.dumps({"id": 1, "name": "Fern", "tag": "green"}).encode()
HEADERS = {"Authorization": "Bearer t", "Content-Type": "application/json"}


async def run_receiver(delay: float) -> None:
    """The receiver, in a process of its own (so its work does not slow the client measuring): prints its
    URL, answers each delivery after `delay` seconds, and tells how many it got on GET /count."""
    got: list[int] = []

    async def hook(request: web.Request) -> web.Response:
        await request.read()
        await asyncio.sleep(delay)
        got.append(1)
        return web.Response(status=200)

    async def count(request: web.Request) -> web.Response:
        return web.json_response(len(got))

    async def clear(request: web.Request) -> web.Response:
        got.clear()
        return web.json_response(0)

    app = web.Application()
    app.router.add_post("/hook", hook)
    app.router.add_get("/count", count)
    app.router.add_delete("/count", clear)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(f"http://127.0.0.1:{runner.addresses[0][1]}", flush=True)
    await asyncio.Event().wait()


class Receiver:
    def __init__(self, delay_ms: int) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--run-receiver", str(delay_ms)],
                                     stdout=subprocess.PIPE, text=True)
        self.base = (self.proc.stdout.readline() if self.proc.stdout else "").strip()
        self.url = self.base + "/hook"

    async def count(self, method: str = "GET") -> int:
        async with aiohttp.ClientSession() as session, session.request(method, self.base + "/count") as answer:
            return int(await answer.json())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def serve(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "plantstub", "serve", "--spec", "plant-store-full", "--port", "0",
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/")
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("plantstub listening on "):
        proc.kill()
        raise SystemExit(f"no listening line: {line!r}")
    return proc, line.strip().removeprefix("plantstub listening on ")


async def load(url: str, total: int, concurrency: int) -> list[float]:
    times: list[float] = []
    left = iter(range(total))
    async with aiohttp.ClientSession() as session:
        async def worker() -> None:
            for _ in left:
                started = time.perf_counter()
                async with session.post(url + "/plants", data=BODY, headers=HEADERS) as answer:
                    await answer.read()
                    assert answer.status == 200, answer.status
                times.append(time.perf_counter() - started)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return times


def figures(times: list[float]) -> str:
    ordered = sorted(times)
    p99 = ordered[int(len(ordered) * 0.99) - 1]
    return (f"p50 {statistics.median(ordered) * 1000:.2f} ms  p99 {p99 * 1000:.2f} ms  "
            f"max {ordered[-1] * 1000:.2f} ms  ({len(ordered)} requests)")


async def case(name: str, args: list[str], total: int, concurrency: int, receiver: Receiver | None) -> None:
    proc, url = serve(*args)
    try:
        await load(url, 200, concurrency)  # warm-up, not counted
        if receiver is not None:
            deadline = time.monotonic() + 30
            while await receiver.count() < 200 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            await receiver.count("DELETE")
        started = time.perf_counter()
        times = await load(url, total, concurrency)
        elapsed = time.perf_counter() - started
        print(f"{name:<34} {figures(times)}  {total / elapsed:.0f} req/s", flush=True)
        if receiver is not None:
            deadline = time.monotonic() + 30
            while (got := await receiver.count()) < total and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            async with aiohttp.ClientSession() as session, session.get(url + "/__plantstub/health") as health:
                hooks = (await health.json())["webhooks"]
            print(f"{'':<34} receiver got {got} of {total} in time; health webhooks {hooks}", flush=True)
    finally:
        proc.terminate()
        proc.wait(10)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--receiver-ms", type=int, default=200)
    parser.add_argument("--run-receiver", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_receiver is not None:
        await run_receiver(args.run_receiver / 1000)
        return
    receiver = Receiver(args.receiver_ms)
    try:
        await case("no subscriber", [], args.requests, args.concurrency, None)
        await case(f"subscriber answering in {args.receiver_ms} ms", ["--webhook", receiver.url], args.requests,
                   args.concurrency, receiver)
        await case("no subscriber (again)", [], args.requests, args.concurrency, None)
    finally:
        receiver.stop()


if __name__ == "__main__":
    asyncio.run(main())
