"""Start-up and first calls on a big document: run by hand, not by pytest.

    .venv/bin/python tests/benchmarks/big_spec.py --spec FILE [--ops 10] [--json]
    .venv/bin/python tests/benchmarks/big_spec.py --synthetic 3000 3000 [--yaml] [--prose] [--ops 10]
    .venv/bin/python tests/benchmarks/big_spec.py --spec FILE --starts 5 [--source DIR ...]

Starts `python -m plantstub serve --spec FILE --port 0` and prints the time to its listening line, its peak
resident memory (VmHWM) then, the first call of `--ops` operations spread over the document (each a
request its spec accepts: path, query and body made from the schemas) and a later call of each, and the
peak memory at the end.

With `--starts N`, only starts: for each `--source` (a checkout's folder holding `plantstub/`, put first on
PYTHONPATH; this checkout when none), N cold starts (each with a new, empty spec cache) and N from the cache
(an entry the first cold start wrote), the sources taking turns start by start so that a shared machine's load
falls on each alike; the median and range of the time to ready, the CPU time until ready and the peak memory.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from the repo root
from plantstub.contract.load import load_spec
from plantstub.contract.model import Operation
from plantstub.contract.samples import sample
from tests.synthetic import big_document, write_big_document


class _NoAliases(yaml.CSafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def memory(pid: int) -> dict[str, float]:
    """VmHWM (peak) and VmRSS of `pid` in MiB (Linux)."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmHWM", "VmRSS"):
            found[name] = int(value.split()[0]) / 1024
    return found


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of `pid` so far (Linux): unlike the time to ready, it holds on a busy machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def request_for(op: Operation) -> tuple[str, bytes | None, dict[str, str]]:
    """A path (parameters filled from their schemas), a body and headers that the operation accepts."""
    path, query = op.path, []
    for param in op.parameters:
        value = sample(param.schema) if param.schema is not None else "x"
        text = ",".join(map(str, value)) if isinstance(value, list) else json.dumps(value) if isinstance(value, dict) else str(value)
        if isinstance(value, bool):
            text = str(value).lower()
        if param.location == "path":
            path = path.replace("{" + param.name + "}", urllib.request.quote(text or "x", safe=""))
        elif param.location == "query" and param.required:
            query.append(f"{urllib.request.quote(param.name)}={urllib.request.quote(text)}")
    headers = {"Authorization": "Bearer t", **{p.name: "x" for p in op.parameters if p.location == "header" and p.required}}
    body = None
    media = next(iter((op.body or {}).values()), None)
    if media is not None:
        headers["Content-Type"] = media.name
        value = sample(media.schema) if media.schema is not None else {}
        if media.name == "application/x-www-form-urlencoded" and isinstance(value, dict):
            body = urllib.parse.urlencode({k: v for k, v in value.items() if isinstance(v, (str, int, float))}).encode()
        else:
            body = json.dumps(value).encode()
    return path + ("?" + "&".join(query) if query else ""), body, headers


def call(url: str, op: Operation, request: tuple[str, bytes | None, dict[str, str]]) -> tuple[int, float]:
    path, body, headers = request
    req = urllib.request.Request(url + path, data=body, method=op.method, headers=headers)
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=300) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        exc.read()
        status = exc.code
    except OSError as exc:  # a timeout, a reset: shown in the table instead of a status
        print(f"big_spec: {op.label}: {exc}", file=sys.stderr)
        status = 0
    return status, (time.perf_counter() - started) * 1000


def start(spec: Path, cache: Path, source: Path, timeout: float = 600) -> dict[str, float]:
    """One `plantstub serve --spec SPEC` from `source` with its spec cache in `cache`: seconds to the listening line,
    CPU seconds until then, peak RSS (MiB) then."""
    env = {**os.environ, "PLANTSTUB_SPEC_CACHE": str(cache), "PYTHONPATH": str(source)}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "plantstub", "serve", "--spec", str(spec.resolve()), "--port", "0"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=tmp, env=env)
        try:
            line = proc.stdout.readline() if proc.stdout else ""
            ready = time.perf_counter() - started
            if not line.startswith("plantstub listening on "):
                raise RuntimeError(f"no listening line from {source} (exit {proc.poll()})")
            return {"ready_s": ready, "cpu_s": cpu_seconds(proc.pid), "peak_mib": memory(proc.pid)["VmHWM"]}
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def starts(spec: Path, runs: int, sources: list[Path], as_json: bool) -> int:
    """--starts: cold and from-the-cache starts of each source, taking turns; medians printed."""
    figures: dict[str, dict[str, list[dict[str, float]]]] = {str(s): {"cold": [], "cached": []} for s in sources}
    with tempfile.TemporaryDirectory() as tmp:
        warm = {str(s): Path(tmp) / f"warm{i}" for i, s in enumerate(sources)}
        for run in range(runs):
            for i, source in enumerate(sources):
                cold = Path(tmp) / f"cold{i}-{run}"
                figures[str(source)]["cold"].append(start(spec, cold if run else warm[str(source)], source))
            for source in sources:
                figures[str(source)]["cached"].append(start(spec, warm[str(source)], source))
    summary = {source: {kind: {key: [round(statistics.median(r[key] for r in rows), 2),
                                     round(min(r[key] for r in rows), 2), round(max(r[key] for r in rows), 2)]
                               for key in ("ready_s", "cpu_s", "peak_mib")}
                        for kind, rows in kinds.items()} for source, kinds in figures.items()}
    if as_json:
        print(json.dumps({"spec": str(spec), "runs": runs, "median_min_max": summary}, indent=2))
        return 0
    print(f"{spec}: {spec.stat().st_size / 2**20:.1f} MiB, {runs} start(s) of each kind per source (median [min-max])")
    for source, kinds in summary.items():
        for kind, row in kinds.items():
            shown = "  ".join(f"{key} {m} [{lo}-{hi}]" for key, (m, lo, hi) in row.items())
            print(f"  {source:40.40} {kind:7} {shown}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--spec", type=Path, help="the document to serve")
    source.add_argument("--synthetic", nargs=2, type=int, metavar=("SCHEMAS", "PATHS"),
                        help="serve tests/synthetic.py's document of this size (3 operations per path)")
    parser.add_argument("--yaml", action="store_true",
                        help="with --synthetic: write the document as block YAML with no anchors (as OpenAPI generators"
                             " write YAML), not JSON")
    parser.add_argument("--prose", action="store_true",
                        help="with --synthetic: descriptions and summaries as Graph writes them (about 55 %% of the bytes)")
    parser.add_argument("--ops", type=int, default=10, help="operations called (spread over the document)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for the listening line")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--starts", type=int, default=0,
                        help="only time N cold starts and N from the spec cache (medians), no calls")
    parser.add_argument("--source", type=Path, action="append", default=[],
                        help="with --starts: a checkout to start from (repeatable, compared side by side)")
    args = parser.parse_args()
    if args.starts:
        if not args.spec:
            parser.error("--starts needs --spec FILE (a --synthetic document is written anew each run)")
        return starts(args.spec, args.starts, args.source or [Path(__file__).resolve().parents[2]], args.json)
    with tempfile.TemporaryDirectory() as tmp:
        if args.spec:
            spec_path = args.spec
        elif args.yaml:
            spec_path = Path(tmp) / "synthetic.yaml"
            spec_path.write_text(yaml.dump(big_document(*args.synthetic, prose=args.prose), Dumper=_NoAliases, sort_keys=False,
                                           default_flow_style=False), encoding="utf-8")
        else:
            spec_path = write_big_document(Path(tmp) / "synthetic.json", *args.synthetic, prose=args.prose)
        size = spec_path.stat().st_size
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "plantstub", "serve", "--spec", str(spec_path), "--port", "0"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=tmp)
        try:
            line = proc.stdout.readline() if proc.stdout else ""
            ready = time.perf_counter() - started
            if not line.startswith("plantstub listening on "):
                print(f"big_spec: no listening line (exit {proc.poll()})", file=sys.stderr)
                return 1
            url = line.split()[-1]
            at_start = memory(proc.pid)
            cpu = cpu_seconds(proc.pid)
            logging.disable(logging.WARNING)
            spec = load_spec(spec_path)
            ops = spec.operations
            chosen = [ops[(i * len(ops) // args.ops + i) % len(ops)] for i in range(min(args.ops, len(ops)))]
            calls = []
            for op in chosen:
                request = request_for(op)
                status, first = call(url, op, request)
                _, later = call(url, op, request)
                calls.append({"operation": op.label, "status": status, "first_ms": round(first, 1), "later_ms": round(later, 1)})
            at_end = memory(proc.pid)
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                print("big_spec: the stub did not stop within 30 s of SIGTERM; killed", file=sys.stderr)
                proc.kill()
                proc.wait()
    figures: dict[str, Any] = {
        "spec": str(args.spec or f"synthetic {args.synthetic[0]} {args.synthetic[1]}"), "megabytes": round(size / 2**20, 1),
        "operations": len(ops), "ready_s": round(ready, 2), "cpu_at_ready_s": round(cpu, 2), "peak_rss_at_start_mib": round(at_start["VmHWM"]),
        "rss_at_start_mib": round(at_start["VmRSS"]), "peak_rss_at_end_mib": round(at_end["VmHWM"]),
        "first_call_ms_median": round(statistics.median(c["first_ms"] for c in calls), 1),
        "first_call_ms_max": max(c["first_ms"] for c in calls),
        "later_call_ms_median": round(statistics.median(c["later_ms"] for c in calls), 1), "calls": calls,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"{figures['spec']}: {figures['megabytes']} MB, {figures['operations']} operations")
    print(f"ready in {figures['ready_s']} s ({figures['cpu_at_ready_s']} s of CPU in the stub's process); peak RSS {figures['peak_rss_at_start_mib']} MiB at start,"
          f" {figures['peak_rss_at_end_mib']} MiB after the calls (RSS at start {figures['rss_at_start_mib']} MiB)")
    for c in calls:
        print(f"  {c['operation']:60.60} {c['status']}  first {c['first_ms']:8.1f} ms  later {c['later_ms']:6.1f} ms")
    print(f"first call: median {figures['first_call_ms_median']} ms, max {figures['first_call_ms_max']} ms;"
          f" later call: median {figures['later_call_ms_median']} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
