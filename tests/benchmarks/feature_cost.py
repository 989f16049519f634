"""What each feature costs when it is on: server CPU per valid `POST /plants`, each feature on against the same call
without it (issue 26: at most 10 % more; a feature that is off costs nothing).

    .venv/bin/python tests/benchmarks/feature_cost.py [--rounds 3] [--seconds 3] [--only cors,journal] [--python PY]

Run by hand (pytest does not collect it); Linux, needs `wrk` and `taskset` and two CPUs. Each case starts
`PY -m plantstub serve` pinned to CPU 0 from an empty folder, drives it with wrk on CPU 1 (32 connections, a new
`id` on every request, a 2 s warm-up, then --seconds measured), and reads the server's CPU time from /proc before and
after, as `../shared/bench/cpu_per_request.py` does: µs of CPU per answered request. Cases run in alternating rounds
and the lowest round counts (other load only ever adds). Before each measured run the stub is reset
(`POST /__plantstub/reset`) and the case's own set-up redone (rules from code are declared again), so the journal
and a `--stateful` store start empty.

`--instructions N`: instead, each case runs under valgrind's callgrind (`apt-get install valgrind`), is warmed up
with 200 calls, reset and set up, warmed up with 150 more, and the instructions the whole process executes for the next N calls (sent one after another on one
kept connection; with `--connections C`, over C connections at once, as wrk's) are counted: k instructions per call. Instruction counts do not move with other load (the same
count twice on a busy machine), so one round is enough; they leave out the kernel's part (the socket's read and
write), which is the same whether a feature is on or off. `--before B` sends B calls instead of 150 before the count:
with 10500, the journal (10,000 calls) is full and drops its oldest call on every call, the steady state of a stub
that has served a while (not for `--stateful`, whose store is full then too).

`--paired K`: CPU, each pair's two stubs serving at once, both pinned to CPU 0, driven in turn (off, on, on, off,
...) for K runs of --seconds each, each run after a reset: the machine's drift (other load, the VM's neighbours)
falls on both alike, where separate rounds minutes apart read the same case 20 % apart. Prints µs per call over all
the runs and the median of each pair of runs' on ÷ off.

Features (each against its own "off" case, which differs in that feature alone):
session by header / by prefix, 100 rules from code (none matching), a scenario of 50 rules (none matching),
--stateful and a webhook subscriber (both on `--spec plant-store-full`, whose POST /plants declares a webhook; the
subscriber is an aiohttp receiver in a process of its own on CPU 1), --cors (requests with an Origin),
--admin-token, --journal FILE, one live page open (its requests, as page.html's script makes them), --proxy when the
stub answers itself (`Prefer: code=200`, against the same Prefer without --proxy).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from callgrind_counts import first_dump

TICK = os.sysconf("SC_CLK_TCK")
VALID = '{"id":1,"name":"Fern","tag":"indoor"}'
WRK_LUA = r"""
wrk.method = "POST"
wrk.path = "%(path)s"
wrk.body = '%(body)s'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer t"
%(headers)s
counter = 0
request = function()
  counter = counter + 1
  local b = string.gsub(wrk.body, '"id":1,', '"id":' .. counter .. ',', 1)
  return wrk.format(nil, nil, nil, b)
end
%(stop)s
done = function(summary, latency, requests)
  io.write(string.format('WRKJSON %%d %%d\n', summary.requests, summary.errors.status))
end
"""
RECEIVER = """
import sys
from aiohttp import web
async def hook(request):
    await request.read()
    return web.Response(status=204)
app = web.Application()
app.router.add_post("/{tail:.*}", hook)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)
"""


@dataclass
class Case:
    name: str
    args: list[str] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    path: str = "/plants"
    setup: Callable[[str], None] | None = None  # given the stub's URL, after each reset
    script: list[str] = field(default_factory=list)  # another server: a script and its arguments ({port}: its port)
    most: int = 0  # answers at most in the measured run (a --stateful store keeps 10,000 records); 0: no limit


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime, in clock ticks


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server never listened")


def _stop(proc: subprocess.Popen[bytes], seconds: float) -> None:
    proc.terminate()
    try:
        proc.wait(seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def admin(url: str, method: str, path: str, data: object = None, token: str | None = None) -> None:
    body = None if data is None else json.dumps(data).encode()
    request = urllib.request.Request(url + "/__plantstub/" + path, body, method=method)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    # long enough for the first admin call under callgrind, which imports the admin API (issue 41: on first use)
    with urllib.request.urlopen(request, timeout=300) as answer:
        answer.read()


def rules_from_code(count: int) -> Callable[[str], None]:
    def declare(url: str) -> None:
        for n in range(count):
            admin(url, "POST", "rules", {"match": {"path": "/plants", "body": {"name": f"nobody-{n}"}},
                                         "reply": {"status": 200, "body": {"name": f"nobody-{n}"}}})

    return declare


def _follow(url: str) -> None:
    """What an open live page asks (page.html's script): the new calls by long poll, then coverage and scenarios,
    a pause of 0.3 s between looks; until the stub stops."""
    base, since, epoch = url + "/__plantstub/", 0, 0
    with contextlib.suppress(OSError, ValueError):
        while True:
            with urllib.request.urlopen(f"{base}calls/rows?since={since}&wait=25&epoch={epoch}", timeout=30) as got:
                data = json.load(got)
            epoch = data["epoch"]
            if data["calls"]:
                since = data["calls"][0]["seq"]
                for path in ("coverage", "scenarios"):
                    with urllib.request.urlopen(base + path, timeout=30) as got:
                        got.read()
            time.sleep(0.3)


def page_open(url: str) -> None:
    threading.Thread(target=_follow, args=(url,), daemon=True).start()


def scenario_folder(folder: Path, count: int) -> Path:
    rules = "\n".join(f"  - match: {{path: /plants, body: {{name: nobody-{n}}}}}\n"
                      f"    reply: {{status: 200, body: {{name: nobody-{n}}}}}" for n in range(count))
    (folder / "fifty.yaml").write_text(f"description: {count} rules, none matching the benchmark's calls\nrules:\n{rules}\n")
    return folder


def wrk(port: int, case: Case, seconds: float, lua_dir: str, most: int = 0) -> tuple[int, int]:
    lua = Path(lua_dir, "load.lua")
    headers = "\n".join(f'wrk.headers["{k}"] = "{v}"' for k, v in case.headers.items())
    stop = (f"answered = 0\nresponse = function(status, headers, body)\n  answered = answered + 1\n"
            f"  if answered >= {most} then wrk.thread:stop() end\nend") if most else ""
    lua.write_text(WRK_LUA % {"path": case.path, "body": VALID, "headers": headers, "stop": stop})
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", "-c32", f"-d{seconds:g}s", "-s", str(lua),
                          f"http://127.0.0.1:{port}{case.path}"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"WRKJSON (\d+) (\d+)", out)
    assert found is not None, out
    return int(found[1]), int(found[2])


def token_of(case: Case) -> str | None:
    """The admin token the stub of `case` asks for (its reset, its set-up), if any."""
    return "secret" if "--admin-token" in case.args else None


@contextlib.contextmanager
def running(python: str, case: Case) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """The stub of `case` serving, pinned to CPU 0, from an empty folder: its process and port."""
    port = free_port()
    with tempfile.TemporaryDirectory() as cwd:
        proc = subprocess.Popen(["taskset", "-c", "0", python, "-m", "plantstub", "serve", "--host", "127.0.0.1",
                                 "--port", str(port), *case.args], cwd=cwd,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(port, proc)
            yield proc, port
        finally:
            _stop(proc, 10)


def measured(proc: subprocess.Popen[bytes], port: int, case: Case, seconds: float, lua_dir: str) -> tuple[int, int, int]:
    """One measured run, the stub reset and set up first: server CPU ticks, answered requests, answers not 2xx."""
    url = f"http://127.0.0.1:{port}"
    admin(url, "POST", "reset", token=token_of(case))
    if case.setup is not None:
        case.setup(url)
    before = cpu_ticks(proc.pid)
    requests, refused = wrk(port, case, seconds, lua_dir, case.most)
    return cpu_ticks(proc.pid) - before, requests, refused


def measure(python: str, case: Case, seconds: float, lua_dir: str) -> tuple[float, int]:
    """µs of server CPU per answered request, and how many answers were not 2xx (should be 0)."""
    with running(python, case) as (proc, port):
        wrk(port, case, 2, lua_dir)  # warm-up
        ticks, requests, refused = measured(proc, port, case, seconds, lua_dir)
        return ticks / TICK / max(requests, 1) * 1e6, refused


def measure_paired(python: str, off: Case, on: Case, slices: int, seconds: float, lua_dir: str) -> list[float]:
    """Both stubs of a pair serving at once, pinned to the same CPU, driven in turn (off, on, on, off, ...) for
    `slices` runs each: the machine's drift falls on both alike. µs per call for off and on over all the runs, then
    each pair of runs' on ÷ off."""
    with running(python, off) as (off_proc, off_port), running(python, on) as (on_proc, on_port):
        for port, case in ((off_port, off), (on_port, on)):
            wrk(port, case, 2, lua_dir)  # warm-up
        totals = {"off": [0, 0], "on": [0, 0]}
        ratios = []
        for n in range(slices):
            order = [("off", off_proc, off_port, off), ("on", on_proc, on_port, on)]
            per = {}
            for which, proc, port, case in order if n % 2 == 0 else order[::-1]:
                ticks, requests, refused = measured(proc, port, case, seconds, lua_dir)
                if refused:
                    print(f"  {case.name}: {refused} answers not 2xx", file=sys.stderr, flush=True)
                totals[which][0] += ticks
                totals[which][1] += requests
                per[which] = ticks / max(requests, 1)
            ratios.append(per["on"] / per["off"])
        us = [totals[w][0] / TICK / max(totals[w][1], 1) * 1e6 for w in ("off", "on")]
        return [*us, *ratios]


def _call_bytes(case: Case, n: int) -> bytes:
    body = VALID.replace('"id":1,', f'"id":{n},').encode()
    extra = "".join(f"{k}: {v}\r\n" for k, v in case.headers.items())
    return (f"POST {case.path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer t\r\n{extra}Content-Length: {len(body)}\r\n\r\n").encode() + body


def _calls(port: int, case: Case, first: int, count: int) -> int:
    """Send `count` calls one after another on one kept connection; how many were not 2xx."""
    refused = 0
    with socket.create_connection(("127.0.0.1", port), timeout=120) as conn:
        for n in range(first, first + count):
            conn.sendall(_call_bytes(case, n))
            got = b""
            while b"\r\n\r\n" not in got:
                chunk = conn.recv(65536)
                if not chunk:
                    raise RuntimeError("the stub closed the connection")
                got += chunk
            head, _, rest = got.partition(b"\r\n\r\n")
            length = re.search(rb"(?i)content-length: (\d+)", head)
            while length is not None and len(rest) < int(length[1]):
                rest += conn.recv(65536)
            refused += not head.startswith(b"HTTP/1.1 2")
    return refused


def _calls_at_once(port: int, case: Case, first: int, count: int, connections: int) -> int:
    """Send `count` calls over `connections` kept connections at once (each one call after another, as wrk's do); how
    many were not 2xx."""
    if connections == 1:
        return _calls(port, case, first, count)
    from concurrent.futures import ThreadPoolExecutor

    share = count // connections
    with ThreadPoolExecutor(connections) as pool:
        return sum(pool.map(lambda n: _calls(port, case, first + n * share, share), range(connections)))


def instructions(python: str, case: Case, count: int, token: str | None, connections: int = 1,
                 before: int = 150) -> tuple[float, int]:
    """k instructions the stub's process executes per call under callgrind (`before` calls sent first, after the
    reset), and how many answers were not 2xx."""
    port = free_port()
    with tempfile.TemporaryDirectory() as cwd:
        server = ([arg.replace("{port}", str(port)) for arg in case.script] if case.script else
                  ["-m", "plantstub", "serve", "--host", "127.0.0.1", "--port", str(port), *case.args])
        proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--cache-sim=no",
                                 f"--callgrind-out-file={cwd}/callgrind.out", python, *server], cwd=cwd,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(port, proc, timeout=900)
            url = f"http://127.0.0.1:{port}"
            _calls(port, case, 1, 200)  # warm-up
            if not case.script:
                admin(url, "POST", "reset", token=token)
            if case.setup is not None:
                case.setup(url)
            _calls(port, case, 201, before)  # and after the set-up: what is made once (rules merged) is not counted
            subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True, capture_output=True)
            count -= count % connections
            refused = _calls_at_once(port, case, 201 + before, count, connections)
            subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, capture_output=True)
            return first_dump(Path(cwd, "callgrind.out")) / count / 1000, refused
        finally:
            _stop(proc, 30)


def pairs(folder: Path, receiver_url: str) -> dict[str, tuple[Case, Case]]:
    """Each feature: (off, on), the same calls."""
    off = Case("off")
    full = ["--spec", "plant-store-full"]  # 8,000 answers measured: a --stateful store holds 10,000 records
    origin = {"Origin": "http://app.example"}
    prefer = {"Prefer": "code=200"}
    journal = str(folder / "journal.jsonl")
    return {
        "session by header": (off, Case("header", headers={"X-Plantstub-Session": "bench"})),
        "session by prefix": (off, Case("prefix", path="/__session/bench/plants")),
        "100 rules from code": (off, Case("rules", setup=rules_from_code(100))),
        "scenario with 50 rules": (off, Case("scenario", ["--scenarios", str(scenario_folder(folder, 50)),
                                                          "--scenario", "fifty"])),
        "--stateful": (Case("full", full, most=8000), Case("stateful", [*full, "--stateful"], most=8000)),
        "webhook subscriber": (Case("full", full, most=8000), Case("webhook", [*full, "--webhook", receiver_url],
                                                                   most=8000)),
        "--cors": (Case("origin", headers=origin), Case("cors", ["--cors"], headers=origin)),
        "--admin-token": (off, Case("token", ["--admin-token", "secret"])),
        # the stub answers itself (Prefer names the declared answer): the real service is never asked
        "--proxy, answered by the stub": (Case("prefer", headers=prefer),
                                          Case("proxy", ["--proxy", "http://127.0.0.1:9"], headers=prefer)),
        "--journal FILE": (off, Case("journal", ["--journal", journal])),
        "--dynamic": (off, Case("dynamic", ["--dynamic", "--seed", "1"])),
        "live page open": (off, Case("page", setup=page_open)),
    }


def count_instructions(args: argparse.Namespace) -> int:
    """--instructions: each distinct case counted once (several features share their "off"), two at a time."""
    from concurrent.futures import ThreadPoolExecutor

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        receiver_port = free_port()
        receiver = subprocess.Popen([sys.executable, "-c", RECEIVER, str(receiver_port)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(receiver_port, receiver)
            chosen = {name: pair for name, pair in pairs(folder, f"http://127.0.0.1:{receiver_port}/hook").items()
                      if not args.only or any(word in name for word in args.only.split(","))}
            cases = {case.name: case for pair in chosen.values() for case in pair}

            def count(case: Case) -> tuple[float, int]:
                got = instructions(args.python, case, args.instructions, token_of(case), args.connections, args.before)
                print(f"{case.name}: {got[0]:.1f} k instructions per call ({got[1]} not 2xx)", file=sys.stderr,
                      flush=True)
                return got

            with ThreadPoolExecutor(2) as pool:
                counted = dict(zip(cases, pool.map(count, cases.values()), strict=True))
        finally:
            receiver.terminate()
            receiver.wait(10)
    print("| feature | k instructions / valid call, off | on | on ÷ off |")
    print("|---|---|---|---|")
    for name, (off, on) in chosen.items():
        print(f"| {name} | {counted[off.name][0]:.1f} ({off.name}) | {counted[on.name][0]:.1f} |"
              f" {counted[on.name][0] / counted[off.name][0]:.2f} |")
    return 0


def paired_table(args: argparse.Namespace, chosen: dict[str, tuple[Case, Case]], lua_dir: str) -> int:
    """--paired K: each pair measured at once (measure_paired()), printed as a table."""
    print("| feature | µs CPU / valid call, off | on | on ÷ off | runs' on ÷ off: median (lowest-highest) |")
    print("|---|---|---|---|---|")
    for name, (off, on) in chosen.items():
        us_off, us_on, *ratios = measure_paired(args.python, off, on, args.paired, args.seconds, lua_dir)
        print(f"round {name}: off {us_off:.1f} µs, on {us_on:.1f} µs, runs {' '.join(f'{r:.2f}' for r in ratios)}",
              file=sys.stderr, flush=True)
        print(f"| {name} | {us_off:.1f} ({off.name}) | {us_on:.1f} | {us_on / us_off:.2f} |"
              f" {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |", flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--only", default="", help="comma-separated words; features whose name holds one")
    parser.add_argument("--python", default=sys.executable, help="the Python whose plantstub is measured")
    parser.add_argument("--instructions", type=int, default=0, metavar="N",
                        help="count instructions per call over N calls under callgrind instead")
    parser.add_argument("--connections", type=int, default=1, metavar="C",
                        help="with --instructions: the N calls over C connections at once (default 1: one after another)")
    parser.add_argument("--before", type=int, default=150, metavar="B",
                        help="with --instructions: calls sent after the reset and before the count (default 150; "
                             "10500 counts a full journal's steady state)")
    parser.add_argument("--paired", type=int, default=0, metavar="K",
                        help="CPU: each pair's two stubs serve at once and are driven in turn, K runs each")
    args = parser.parse_args()
    if args.instructions:
        return count_instructions(args)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        receiver_port = free_port()
        receiver = subprocess.Popen(["taskset", "-c", "1", sys.executable, "-c", RECEIVER, str(receiver_port)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(receiver_port, receiver)
            chosen = {name: pair for name, pair in pairs(folder, f"http://127.0.0.1:{receiver_port}/hook").items()
                      if not args.only or any(word in name for word in args.only.split(","))}
            if args.paired:
                return paired_table(args, chosen, folder.as_posix())
            got: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in chosen}
            for r in range(args.rounds):
                for name, (off, on) in chosen.items():  # each pair back to back, in turn first: the load drifts
                    for which, case in ((0, off), (1, on)) if r % 2 == 0 else ((1, on), (0, off)):
                        us, refused = measure(args.python, case, args.seconds, folder.as_posix())
                        got[name][which].append(us)
                        note = f" ({refused} answers not 2xx)" if refused else ""
                        print(f"round {r + 1} {name}: {case.name} {us:.1f} µs{note}", file=sys.stderr, flush=True)
        finally:
            receiver.terminate()
            receiver.wait(10)
    print("| feature | µs CPU / valid call, off (lowest) | on (lowest) | on ÷ off | median of the rounds' on ÷ off |")
    print("|---|---|---|---|---|")
    for name, (offs, ons) in got.items():
        ratios = sorted(b / a for a, b in zip(offs, ons, strict=True))
        print(f"| {name} | {min(offs):.1f} ({chosen[name][0].name}) | {min(ons):.1f} | {min(ons) / min(offs):.2f} |"
              f" {statistics.median(ratios):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
