"""Start-up cost of the `plantstub` fixture: what a pytest run pays for plantstub being installed, and what a
worker pays the first time a test asks for the fixture, against plain server fixtures.

Run by hand (pytest does not collect it), bytecode caching on as in a user's venv:
`.venv/bin/python tests/benchmarks/fixture_startup.py [--runs 5] [--workers 4] [--source DIR]... [--json]`.
It prints:

1. pytest runs of tiny projects (median of --runs): one trivial test without the plugin (`-p no:plantstub`), the
   same with it, one test using `plantstub` (in process, and on a `plantstub serve` sidecar with --plantstub-url),
   a plain aiohttp server fixture and a stdlib http.server fixture (what pytest-httpserver-style fixtures cost);
   with `-n 0` and with `-n --workers` (twice as many tests, so each worker runs some). For each: the wall time
   of the whole process, and the setup of each process's first test (wall, its max, CPU): for `plantstub`, the
   fixture's whole start-up. Only plantstub's and xdist's pytest plugins are loaded (`--all-plugins`: all):
   pytest-aiohttp, in the dev venv, would import aiohttp before any test, as no consumer's run does.
2. The first use split in a fresh interpreter (wall / CPU): pytest, the plugin, aiohttp, the rest of `Stub`,
   the bundled spec alone, the whole runtime (spec, built-in scenarios, compiled checks), the server's start,
   the first and second request.
3. `python -X importtime`: what the plugin, the in-process `Stub` and the sidecar's `RemoteStub` import after
   pytest, self time by package (one run; importtime inflates every figure).

`--source DIR` imports plantstub from DIR (e.g. `git archive BASE plantstub | tar -x -C DIR`); given more than once
(`--source DIR --source .`), the sources' runs alternate, so that the machine's load weighs on each alike.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from fixture_overhead import AIOHTTP_FIXTURE  # run as a script: its folder is on sys.path

ROOT = Path(__file__).resolve().parents[2]

TRIVIAL = "def test_{i}():\n    pass\n"
USES_PLANTSTUB = "def test_{i}(plantstub):\n    assert plantstub.url\n"
USES_SERVER = "def test_{i}(server):\n    assert server\n"

HTTP_SERVER_FIXTURE = '''
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import pytest


@pytest.fixture(scope="session")
def server():
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.send_response(200)
            self.end_headers()

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
'''

# Each worker (or the lone process) writes the setup time of its first test, and how long after the process
# started that test's setup began.
TIMING_PLUGIN = '''
import json, os, time
import pytest

_first = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    started, cpu = time.perf_counter(), time.process_time()
    yield
    if not _first:
        _first.append((time.perf_counter() - started, time.process_time() - cpu))
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        path = os.path.join(os.environ["STARTUP_OUT"], f"{worker}-{os.getpid()}.json")
        with open(path, "w") as out:
            json.dump({"worker": worker, "setup": _first[0][0], "cpu": _first[0][1]}, out)
'''

SPLIT = '''
import json, time, urllib.request
steps, last = {}, (time.perf_counter(), time.process_time())
def step(name):
    global last
    now = (time.perf_counter(), time.process_time())
    steps[name] = (now[0] - last[0], now[1] - last[1])
    last = now
import pytest
step("import pytest")  # what every run pays anyway
import plantstub.pytest_plugin
step("import plugin")
import aiohttp.web
step("import aiohttp.web")  # the server's library: the floor of any in-process stub on aiohttp
from plantstub.stub import _Background
from plantstub.config import build_settings
step("import Stub (the rest)")
from plantstub.contract.load import load_spec
load_spec(None)
step("load the bundled spec")  # again below, within the runtime
background = _Background(build_settings({"port": 0}))
step("load spec + scenarios")  # the whole runtime: spec, built-in scenarios, compiled checks
background.start()
step("start server")
def post(i):
    request = urllib.request.Request(background.url + "/plants", data=json.dumps({"id": i, "name": "Fern"}).encode(),
        method="POST", headers={"Authorization": "Bearer t", "Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        response.read()
post(1)
step("first request")
post(2)
step("second request")
background.stop()
print(json.dumps(steps))
'''


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user's run: bytecode cached, no plantstub or pytest settings from outside."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS", "PYTEST_PLUGINS") and not k.startswith("PLANTSTUB_")}
    return {**env, **extra}


def make_project(folder: Path, tests: int, body: str, conftest: str = "") -> None:
    folder.mkdir()
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / "conftest.py").write_text(conftest)
    (folder / "startup_timing.py").write_text(TIMING_PLUGIN)
    (folder / "test_startup.py").write_text("".join(body.format(i=i) for i in range(tests)))


def other_plugins() -> list[str]:
    """`-p no:NAME` for each pytest plugin installed here but not in a consumer's venv (pytest-aiohttp would import
    aiohttp before any test, hiding what the fixture's first use costs)."""
    from importlib.metadata import entry_points

    kept = {"plantstub", "xdist", "xdist.looponfail"}
    return [arg for e in entry_points(group="pytest11") if e.name not in kept for arg in ("-p", f"no:{e.name}")]


def run_pytest(folder: Path, args: list[str], out: Path, env: dict[str, str]) -> tuple[float, list[dict[str, float]]]:
    """Wall time of one pytest run and each process's first-test setup (wall and CPU seconds)."""
    for old in out.glob("*.json"):
        old.unlink()
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "startup_timing", *args]
    started = time.perf_counter()
    result = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300,
                            env={**env, "STARTUP_OUT": str(out),
                                 "PYTHONPATH": os.pathsep.join(filter(None, [str(folder), env.get("PYTHONPATH")]))})
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"pytest {' '.join(args)} in {folder.name} failed:\n{result.stdout[-3000:]}{result.stderr[-2000:]}")
    return wall, [json.loads(p.read_text()) for p in out.glob("*.json")]


def start_sidecar(env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    with tempfile.TemporaryDirectory() as empty:
        process = subprocess.Popen([sys.executable, "-m", "plantstub", "serve", "--port", "0"], cwd=empty,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert process.stdout is not None
    for _ in range(100):  # bounded: a stub that prints anything else first is a failure below
        line = process.stdout.readline()
        if line.startswith("plantstub listening on "):
            return process, line.split()[-1]
        if not line:
            break
    process.kill()
    raise SystemExit("the sidecar did not start")


def importtime(statements: list[str], env: dict[str, str]) -> list[tuple[str, float]]:
    """Self time (ms) by package of what the last statement imports after the earlier ones; 'plantstub.X' apart."""

    def run(code: str) -> str:  # from a neutral folder: `-c` puts the current one first on sys.path
        return subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                              timeout=120, env=env, cwd=tempfile.gettempdir()).stderr

    seen = {m[3] for m in _rows(run("; ".join(statements[:-1])))}
    totals: Counter[str] = Counter()
    for self_us, _cumulative, _depth, name in _rows(run("; ".join(statements))):
        if name in seen:
            continue
        parts = name.split(".")
        key = ".".join(parts[:2]) if parts[0] == "plantstub" and len(parts) > 1 else parts[0]
        totals[key] += self_us / 1000
    return [("total", sum(totals.values())), *totals.most_common()]


def _rows(text: str) -> list[tuple[int, int, int, str]]:
    rows = []
    for line in text.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m:
            rows.append((int(m[1]), int(m[2]), len(m[3]), m[4]))
    return rows


CASES = {  # name: (project, extra pytest arguments; {url} is the sidecar's)
    "no plugin (-p no:plantstub)": ("trivial", ["-p", "no:plantstub"]),
    "plugin installed, unused": ("trivial", []),
    "plantstub fixture": ("plantstub", []),
    "plantstub fixture, sidecar": ("plantstub", ["--plantstub-url={url}"]),
    "aiohttp server fixture": ("aiohttp", []),
    "http.server fixture": ("http.server", []),
}
PROJECTS = {"trivial": (TRIVIAL, ""), "plantstub": (USES_PLANTSTUB, ""),
            "aiohttp": (USES_SERVER, AIOHTTP_FIXTURE), "http.server": (USES_SERVER, HTTP_SERVER_FIXTURE)}


def measure(envs: dict[str, dict[str, str]], args: argparse.Namespace, url: str) -> dict[str, dict[str, object]]:
    """Every figure for each source; the sources' runs alternate, so a change in the machine's load hits all alike."""
    figures: dict[str, dict[str, object]] = {label: {} for label in envs}
    plugins = [] if args.all_plugins else other_plugins()
    modes = [("-n 0", ["-p", "no:xdist"], 1)]
    if args.workers:
        modes.append((f"-n {args.workers}", ["-n", str(args.workers)], 2 * args.workers))
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        out = base / "out"
        out.mkdir()
        for mode, mode_args, tests in modes:
            for project, (body, conftest) in PROJECTS.items():
                make_project(base / f"{project}-{tests}", tests, body, conftest)
            for name, (project, case_args) in CASES.items():
                command = [*plugins, *mode_args, *(a.format(url=url) for a in case_args)]
                runs: dict[str, list[tuple[float, list[dict[str, float]]]]] = {label: [] for label in envs}
                for _ in range(args.runs):
                    for label, env in envs.items():
                        runs[label].append(run_pytest(base / f"{project}-{tests}", command, out, env))
                for label, done in runs.items():
                    setups = [s for _, first in done for s in first]
                    figures[label][f"{mode} | {name}"] = {
                        "wall": statistics.median(wall for wall, _ in done),
                        "first setup median": statistics.median(s["setup"] for s in setups),
                        "first setup max": max(s["setup"] for s in setups),
                        "first setup cpu": statistics.median(s["cpu"] for s in setups)}
    splits: dict[str, list[dict[str, list[float]]]] = {label: [] for label in envs}
    for _ in range(args.runs):
        for label, env in envs.items():
            result = subprocess.run([sys.executable, "-c", SPLIT], capture_output=True, text=True, timeout=120,
                                    env=env, cwd=tempfile.gettempdir())
            if result.returncode != 0:
                raise SystemExit(result.stderr)
            splits[label].append(json.loads(result.stdout))
    for label, env in envs.items():
        done = splits[label]
        figures[label]["first use split"] = {k: (statistics.median(s[k][0] for s in done),
                                                 statistics.median(s[k][1] for s in done)) for k in done[0]}
        figures[label]["importtime plugin"] = importtime(["import pytest", "import plantstub.pytest_plugin"], env)[:12]
        figures[label]["importtime Stub"] = importtime(
            ["import pytest", "import plantstub.pytest_plugin", "import plantstub.stub"], env)[:16]
        figures[label]["importtime sidecar"] = importtime(
            ["import pytest", "import plantstub.pytest_plugin", "import plantstub.client.remote"], env)[:12]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each case (the median is shown)")
    parser.add_argument("--workers", type=int, default=4, help="the -n of the xdist runs (0: none)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--source", metavar="DIR", action="append", default=[],
                        help="import plantstub from DIR (a checkout of another commit) instead of the installed one;"
                             " repeat it to compare (`.`: this checkout)")
    parser.add_argument("--all-plugins", action="store_true",
                        help="keep every pytest plugin installed (default: only plantstub's and xdist's)")
    args = parser.parse_args()
    envs = {str(source): clean_env(PYTHONPATH=str(Path(source).resolve())) for source in args.source}
    envs = envs or {"installed": clean_env()}
    for env in envs.values():  # write the bytecode once, as an installed copy has it
        subprocess.run([sys.executable, "-c", "import plantstub.stub, plantstub.cli, pytest, xdist"], env=env,
                       check=False, capture_output=True, cwd=tempfile.gettempdir())
    sidecar, url = start_sidecar(clean_env())
    try:
        figures = measure(envs, args, url)
    finally:
        sidecar.terminate()
        sidecar.wait(10)
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    for label, its in figures.items():
        print(f"== plantstub from {label}")
        report(its, args.runs)


def report(figures: dict[str, object], runs: int) -> None:
    print(f"pytest runs, median of {runs} (wall: the whole process; first setup: the first test's setup in each"
          " process, median / max / CPU over runs and workers)")
    print(f"  {'case':<44} {'wall s':>7} {'setup s':>8} {'max s':>7} {'cpu s':>7}")
    for name, value in figures.items():
        if isinstance(value, dict) and "wall" in value:
            print(f"  {name:<44} {value['wall']:>7.3f} {value['first setup median']:>8.3f} "
                  f"{value['first setup max']:>7.3f} {value['first setup cpu']:>7.3f}")
    print("first use in a fresh interpreter (median, s: wall / cpu):")
    split = figures["first use split"]
    assert isinstance(split, dict)
    for step, (seconds, cpu) in split.items():
        print(f"  {step:<24} {seconds:.3f} / {cpu:.3f}")
    for key in ("importtime plugin", "importtime Stub", "importtime sidecar"):
        rows = figures[key]
        assert isinstance(rows, list)
        print(f"{key} (self ms by package, after the previous imports; one run, -X importtime inflates):")
        print("  " + ", ".join(f"{name} {ms:.1f}" for name, ms in rows))


if __name__ == "__main__":
    main()
