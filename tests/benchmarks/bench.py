"""Load benchmark: plantstub against a bare aiohttp app, driven by wrk (run by hand, not by pytest).

    .venv/bin/python tests/benchmarks/bench.py [--duration 10] [--connections 32] [--json]
        [--stub-arg=--scenarios=DIR --stub-arg=--scenario=NAME ...] [--header "X-Plantstub-Session: bench"]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from the repo root
from tests.helpers import post_status

BASELINE = r"""
import asyncio, sys
from aiohttp import web
BODY = b'{"name":"Fern","tag":"indoor"}'
async def plants(request):
    return web.Response(body=BODY, content_type="application/json")
async def health(request):
    return web.Response(body=b'{"status":"ok"}', content_type="application/json")
async def main():
    app = web.Application()
    app.router.add_post("/plants", plants)
    app.router.add_get("/health", health)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(f"baseline listening on http://127.0.0.1:{runner.addresses[0][1]}", flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""

# One script for every case; `-- invalid` after the URL makes every id a string ("x<N>"), `-- list` sends
# GET /plants?limit=10 instead (--list; for the whole Plant Store, --stub-arg=--spec=plant-store-full).
LUA = r"""
local counter = 0
local invalid = false
local list = false
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer t"
wrk.headers["Content-Type"] = "application/json"

function init(args)
  invalid = args[1] == "invalid"
  list = args[1] == "list"
  for i = 2, #args do  -- --header "Name: value", e.g. X-Plantstub-Session: bench
    local name, value = args[i]:match("^([^:]+):%s*(.*)$")
    if name then wrk.headers[name] = value end
  end
end

function request()
  if list then
    return wrk.format("GET", "/plants?limit=10", nil, nil)
  end
  counter = counter + 1
  local id = invalid and string.format('"x%d"', counter) or tostring(counter)
  return wrk.format(nil, "/plants", nil, '{"id": ' .. id .. ', "name": "Fern", "tag": "indoor"}')
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d, "non2xx": %d, ' ..
    '"connect": %d, "read": %d, "write": %d, "timeout": %d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect, e.read, e.write, e.timeout))
end
"""

TARGETS = {"valid_rps": 0.65, "invalid_rps": 0.5, "p99": 2.0, "first_answer_ratio": 1.2, "idle_rss_mib": 50.0,
           "peak_rss_mib": 55.0}  # issue 41: first answer, idle and peak (under the load, before the big bodies)


@dataclass
class Server:
    """A server subprocess, its port and how long it took to answer first."""

    name: str
    proc: subprocess.Popen[str]
    port: int = 0
    first_answer_s: float = 0.0
    stderr_path: Path = field(default_factory=Path)


def pinning() -> tuple[list[str], list[str], str]:
    """Command prefixes pinning servers to CPU 0 and wrk to CPU 1, and a note saying what was done."""
    taskset = shutil.which("taskset")
    if taskset and (os.cpu_count() or 1) >= 2:
        return [taskset, "-c", "0"], [taskset, "-c", "1"], "servers on CPU 0, wrk on CPU 1"
    return [], [], "UNPINNED (taskset or a second CPU missing)"


def launch(name: str, cmd: list[str], health_path: str, tmp: Path, started: list[Server]) -> Server:
    """Start `cmd` (added to `started` at once, for cleanup), read its `... listening on http://HOST:PORT`
    line, then poll `health_path` until it answers; all within 10 s of the launch."""
    stderr_path = tmp / f"{name}.stderr"
    with open(stderr_path, "w") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
    server = Server(name, proc, stderr_path=stderr_path)
    started.append(server)
    timeout = 10.0
    deadline = start + timeout
    line = ""
    while not line and time.perf_counter() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.perf_counter()))
        if ready:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            if not line:
                break
    match = re.search(r"listening on http://[^\s]+:(\d+)", line)
    if not match:
        raise RuntimeError(f"{name}: no listening line ({line!r}); stderr: {stderr_path.read_text()[-2000:]}")
    server.port = int(match.group(1))
    # Keep draining stdout, so a chatty server never blocks on a full pipe.
    threading.Thread(target=lambda: proc.stdout.read(), daemon=True).start()  # type: ignore[union-attr]
    url = f"http://127.0.0.1:{server.port}{health_path}"
    while time.perf_counter() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1.0) as response:
                if response.status == 200:
                    server.first_answer_s = time.perf_counter() - start
                    return server
        except OSError:
            time.sleep(0.002)
    raise RuntimeError(f"{name}: {health_path} did not answer within {timeout} s")


def stop(server: Server) -> None:
    """SIGTERM, then SIGKILL after 3 s."""
    if server.proc.poll() is None:
        server.proc.terminate()
        try:
            server.proc.wait(3)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait()


def rss_mib(pid: int, field: str = "VmRSS") -> float:
    """Resident memory of `pid` in MiB, from /proc/PID/status (VmHWM: the most it ever held)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def probe(port: int, body: bytes) -> int:
    """Send one POST /plants and return its status (a sanity check of what the load will get)."""
    return post_status(f"http://127.0.0.1:{port}", body)


def wrk(port: int, mode: str, seconds: int, opts: argparse.Namespace, script: Path, prefix: list[str]) -> dict:
    """One wrk run against POST /plants; returns requests/s, p50/p99 in ms and error counts."""
    cmd = [*prefix, "wrk", f"-t{opts.threads}", f"-c{opts.connections}", f"-d{seconds}s", "--timeout", "5s",
           "-s", str(script), f"http://127.0.0.1:{port}/plants", "--", mode, *opts.header]
    done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=seconds + 30)
    if done.returncode != 0:
        raise RuntimeError(f"wrk exited with {done.returncode}: {done.stderr.strip() or done.stdout.strip()}")
    line = next((x for x in done.stdout.splitlines() if x.startswith("BENCH ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no figures:\n{done.stdout}\n{done.stderr}")
    raw = json.loads(line[len("BENCH "):])
    return {
        "requests": raw["requests"],
        "rps": raw["requests"] / (raw["duration_us"] / 1e6),
        "p50_ms": raw["p50_us"] / 1000,
        "p99_ms": raw["p99_us"] / 1000,
        "non2xx": raw["non2xx"],
        "socket_errors": raw["connect"] + raw["read"] + raw["write"] + raw["timeout"],
    }


def admin(port: int, method: str, route: str, body: bytes = b"") -> None:
    """One admin call (a reset, a state), answered or not: the baseline and a stub without --stateful refuse some."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/__plantstub/{route}", data=body or None, method=method,
                                     headers={"Content-Type": "application/json"})
    with contextlib.suppress(OSError):
        urllib.request.urlopen(request, timeout=5).close()


def measure(port: int, mode: str, opts: argparse.Namespace, script: Path, prefix: list[str]) -> dict:
    """A discarded warm-up run, then the measured run. A --stateful stub starts each empty (`list`: 100 plants)."""
    admin(port, "POST", "reset")
    if mode == "list":
        plants = [{"id": i, "name": f"Plant {i}", "tag": "indoor"} for i in range(1, 101)]
        admin(port, "PUT", "state", json.dumps({"/plants": plants}).encode())
    if opts.warmup > 0:
        wrk(port, mode, opts.warmup, opts, script, prefix)
    return wrk(port, mode, opts.duration, opts, script, prefix)


def run(opts: argparse.Namespace, tmp: Path, servers: list[Server]) -> dict:
    """Start both servers (into `servers`; the caller stops them), load them, and gather every figure."""
    server_pin, wrk_pin, pin_note = pinning()
    script = tmp / "plants.lua"
    script.write_text(LUA)
    stub_cmd = [sys.executable, "-m", "plantstub", "serve", "--port", "0", *opts.stub_arg]
    stub = launch("stub", [*server_pin, *stub_cmd], "/__plantstub/health", tmp, servers)
    idle_rss = rss_mib(stub.proc.pid)
    base = launch("baseline", [*server_pin, sys.executable, "-c", BASELINE], "/health", tmp, servers)
    probes = {"valid": probe(stub.port, b'{"id": 1, "name": "Fern", "tag": "indoor"}'),
              "invalid": probe(stub.port, b'{"id": "x1", "name": "Fern", "tag": "indoor"}')}
    cases = {
        "baseline": measure(base.port, "valid", opts, script, wrk_pin),
        "valid": measure(stub.port, "valid", opts, script, wrk_pin),
        "invalid": measure(stub.port, "invalid", opts, script, wrk_pin),
        **({"list": measure(stub.port, "list", opts, script, wrk_pin)} if opts.list else {}),
    }
    starts = first_answers(opts, tmp, servers, [*server_pin, *stub_cmd], [*server_pin, sys.executable, "-c", BASELINE],
                           stub.first_answer_s, base.first_answer_s)
    memory = {"idle": idle_rss, "after_load": rss_mib(stub.proc.pid)}
    if opts.calls > 0:  # keep loading until about `--calls` calls were answered in all, then read RSS
        sent = sum(cases[c]["requests"] for c in ("valid", "invalid"))
        rate = max(cases["valid"]["rps"], 1.0)
        while sent < opts.calls:
            seconds = max(1, min(120, int((opts.calls - sent) / rate) + 1))
            sent += wrk(stub.port, "valid", seconds, opts, script, wrk_pin)["requests"]
        memory[f"after_{sent}_calls"] = rss_mib(stub.proc.pid)
    memory["peak"] = rss_mib(stub.proc.pid, "VmHWM")  # the most it held under the load, before the big bodies
    if opts.big_bodies > 0:  # a 1 MB body of `{}`s: about 20 MB once parsed
        body = b"[" + b"{}," * ((1024 * 1024 - 4) // 3) + b"{}]"  # just within the default --max-body
        statuses = {probe(stub.port, body) for _ in range(opts.big_bodies)}
        memory[f"after_{opts.big_bodies}_1MB_bodies"] = rss_mib(stub.proc.pid)
        memory["big_body_statuses"] = sorted(statuses)
    variants = {}
    if opts.variants:
        variants = measure_variants(opts, tmp, servers, server_pin, wrk_pin, script, stub_cmd)
    return {
        "variants": variants,
        "settings": {"duration_s": opts.duration, "warmup_s": opts.warmup, "connections": opts.connections,
                     "threads": opts.threads, "stub_args": opts.stub_arg, "pinning": pin_note},
        "first_answer_s": starts,
        "stub_rss_mib": memory,
        "probe_status": probes,
        "cases": cases,
        "ratios": {case: {"rps": cases[case]["rps"] / cases["baseline"]["rps"],
                          "p99": cases[case]["p99_ms"] / cases["baseline"]["p99_ms"]}
                   for case in ("valid", "invalid")},
        "targets": TARGETS,
    }


def first_answers(opts, tmp: Path, servers: list[Server], stub_cmd, base_cmd, stub_s: float, base_s: float) -> dict:
    """Median launch-to-first-answer over `opts.starts` launches of each, alternating (one launch is noisy)."""
    stub_times, base_times = [stub_s], [base_s]
    for _ in range(opts.starts - 1):
        for cmd, health, times in ((stub_cmd, "/__plantstub/health", stub_times), (base_cmd, "/health", base_times)):
            server = launch("start", cmd, health, tmp, servers)
            times.append(server.first_answer_s)
            stop(server)
            servers.remove(server)
    return {"stub": statistics.median(stub_times), "baseline": statistics.median(base_times), "launches": len(stub_times)}


def rules_scenario(folder: Path, count: int = 200) -> None:
    """A scenario of `count` rules, each pinning a different body name: the benchmark's requests match none."""
    rules = "".join(
        f"  - match: {{method: POST, path: /plants, body: {{name: Plant-{i}}}}}\n"
        f"    reply: {{status: 200, body: {{name: Plant-{i}, tag: rule-{i}}}}}\n"
        for i in range(count)
    )
    (folder / "rules200.yaml").write_text(f"description: {count} rules\nrules:\n{rules}")


def measure_variants(opts, tmp: Path, servers: list[Server], server_pin, wrk_pin, script, stub_cmd) -> dict:
    """The valid case again on stubs started differently, one at a time (each compared to the plain stub)."""
    folder = tmp / "scenarios"
    folder.mkdir()
    rules_scenario(folder)
    variants = {
        "200-rule scenario": ["--scenarios", str(folder), "--scenario", "rules200"],
        "journal file on": ["--journal", str(tmp / "calls.jsonl")],
        "journal size 1": ["--journal-size", "1"],
    }
    found = {}
    for name, args in variants.items():
        server = launch("stub", [*server_pin, *stub_cmd, *args], "/__plantstub/health", tmp, servers)
        found[name] = measure(server.port, "valid", opts, script, wrk_pin)
        stop(server)
        servers.remove(server)
    return found


def mark(ok: bool) -> str:
    return "met" if ok else "MISSED"


def table(r: dict) -> str:
    """The human-readable report."""
    s, c, q = r["settings"], r["cases"], r["ratios"]
    t = TARGETS
    head = (f"plantstub bench: POST /plants, wrk {s['connections']} conn x {s['threads']} thread, "
            f"{s['duration_s']:g} s (+{s['warmup_s']:g} s warm-up), {s['pinning']}")
    out = [head]
    if s["stub_args"]:
        out.append(f"stub args: {' '.join(s['stub_args'])}")
    out.append(f"{'case':<9}{'server':<10}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'non-2xx':>9}"
               f"{'sock err':>9}   {'rps vs base':<24}{'p99 vs base'}")
    rows = [("valid", "baseline", c["baseline"]), ("valid", "stub", c["valid"]), ("invalid", "stub", c["invalid"])]
    if "list" in c:
        rows.append(("list", "stub", c["list"]))
    for case, who, f in rows:
        line = (f"{case:<9}{who:<10}{f['rps']:>9.0f}{f['p50_ms']:>9.2f}{f['p99_ms']:>9.2f}{f['non2xx']:>9d}"
                f"{f['socket_errors']:>9d}")
        if who == "stub" and case != "list":  # the baseline has no GET: no ratio
            need = t[f"{case}_rps"]
            rps, p99 = q[case]["rps"], q[case]["p99"]
            line += (f"   {f'{rps:.2f}x (>= {need}x {mark(rps >= need)})':<24}"
                     f"{p99:.2f}x (<= {t['p99']:g}x {mark(p99 <= t['p99'])})")
        out.append(line)
    fa, rss = r["first_answer_s"], r["stub_rss_mib"]
    ratio = fa["stub"] / fa["baseline"]
    out.append(f"first answer (median of {fa['launches']} launches): stub {fa['stub']:.3f} s, baseline "
               f"{fa['baseline']:.3f} s: {ratio:.2f}x (<= {t['first_answer_ratio']:g}x {mark(ratio <= t['first_answer_ratio'])})")
    out.append(f"stub RSS: idle {rss['idle']:.1f} MiB (< {t['idle_rss_mib']:g} MiB "
               f"{mark(rss['idle'] < t['idle_rss_mib'])}), after load {rss['after_load']:.1f} MiB, peak under the load "
               f"{rss['peak']:.1f} MiB (<= {t['peak_rss_mib']:g} MiB {mark(rss['peak'] <= t['peak_rss_mib'])})")
    for key, value in rss.items():
        if key.startswith("after_") and key != "after_load":
            out.append(f"stub RSS {key.replace('_', ' ')}: {value:.1f} MiB")
    out.append(f"probe statuses: valid {r['probe_status']['valid']}, invalid {r['probe_status']['invalid']}")
    for name, f in r.get("variants", {}).items():
        ratio = f["rps"] / c["valid"]["rps"]
        out.append(f"valid, {name:<18} {f['rps']:>9.0f} req/s  p99 {f['p99_ms']:.2f} ms  "
                   f"{ratio:.2f}x the plain stub  non-2xx {f['non2xx']}")
    if c["valid"]["non2xx"]:
        out.append(f"!!!!! WARNING: the stub gave {c['valid']['non2xx']} non-2xx answers to VALID requests !!!!!")
    if c["invalid"]["non2xx"] != c["invalid"]["requests"]:
        out.append(f"WARNING: only {c['invalid']['non2xx']} of {c['invalid']['requests']} invalid requests got 4xx/5xx")
    if any(f["socket_errors"] for f in c.values()):
        out.append("WARNING: wrk saw socket errors (connect/read/write/timeout)")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Benchmark plantstub against a bare aiohttp app with wrk.")
    p.add_argument("--duration", type=int, default=10, help="seconds of each measured run (default 10)")
    p.add_argument("--warmup", type=int, default=2, help="seconds of the discarded warm-up run, 0: none (default 2)")
    p.add_argument("--connections", type=int, default=32, help="wrk connections (default 32)")
    p.add_argument("--threads", type=int, default=1, help="wrk threads (default 1)")
    p.add_argument("--stub-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for `plantstub serve` (repeatable), e.g. --stub-arg=--scenario=NAME")
    p.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                   help="a header every request of the load carries (repeatable), e.g. 'X-Plantstub-Session: bench'")
    p.add_argument("--starts", type=int, default=5, help="launches whose median is the first-answer time (default 5)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON instead of the table")
    p.add_argument("--calls", type=int, default=300_000,
                   help="load the stub until about this many calls were answered, then read its RSS; 0: skip")
    p.add_argument("--big-bodies", type=int, default=40,
                   help="then send this many 1 MB bodies and read its RSS again; 0: skip (default 40)")
    p.add_argument("--variants", action="store_true",
                   help="also run the valid case with a 200-rule scenario, a journal file, and a 1-call journal")
    p.add_argument("--list", action="store_true",
                   help="also measure GET /plants?limit=10 on the stub (a --stateful one holding 100 plants)")
    opts = p.parse_args(argv)
    if not shutil.which("wrk"):
        print("bench: wrk is not installed (apt-get install wrk)", file=sys.stderr)
        return 2
    # SIGTERM ends the run like Ctrl-C does: through the finally blocks that stop the servers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    servers: list[Server] = []
    try:
        with tempfile.TemporaryDirectory(prefix="plantstub-bench-") as tmp:
            try:
                result = run(opts, Path(tmp), servers)
            finally:
                # A second Ctrl-C must not cut the cleanup short and leave a server behind.
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                for server in servers:
                    stop(server)
    except KeyboardInterrupt:
        print("bench: interrupted; servers stopped", file=sys.stderr)
        return 130
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2) if opts.json else table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
