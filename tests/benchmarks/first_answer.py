"""The first answer's cost in instructions: `plantstub serve` against a bare aiohttp hello server (issue 41, goal 2).

Run by hand (pytest does not collect it; Linux, `apt-get install valgrind`), bytecode caching on as in a user's venv:
`.venv/bin/python tests/benchmarks/first_answer.py [--runs 1] [--source DIR]... [--stub-arg=--spec=plant-store-full]`.

Each server runs under valgrind's callgrind from an empty folder (no ./scenarios): from launch until its first
answer to a valid `POST /plants` (a client outside valgrind connects as soon as the port listens), callgrind then
dumps its counts (`callgrind_control -d`) and the server is stopped. Instruction counts do not move with the
machine's load, so one run is enough; `--runs N` shows the spread. It prints each server's count (the median over
runs, M instructions) and plantstub's ratio to hello's (goal: <= 1.2x), then `python -X importtime`'s total of
`import plantstub.cli` (self time summed, ms, the median of 5 runs: it is wall time and moves with the load).

With `--fixture`, it also counts what the pytest fixture's first start costs a worker: the instructions of a fresh
interpreter that imports pytest and the plugin, then starts a stub as the `plantstub` fixture's first use does (the
pool's `get`, `reset`, `use`), less those of one that only imports pytest and the plugin (each ends with `os._exit`,
so neither counts the interpreter's teardown).

`--source DIR` imports plantstub from DIR (e.g. `git archive BASE plantstub | tar -x -C DIR`); given more than once
(`--source DIR --source .`), each is measured. `--keep DIR` keeps the callgrind files there for callgrind_annotate.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from callgrind_counts import counted, first_dump

ROOT = Path(__file__).resolve().parents[2]
HELLO = Path("/work/shared/bench/aiohttp_hello.py")
BODY = b'{"id": 1, "name": "Fern", "tag": "indoor"}'
REQUEST = (b"POST /plants HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: Bearer t\r\n"
           b"Content-Length: %d\r\n\r\n" % len(BODY)) + BODY


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def first_answer(port: int, proc: subprocess.Popen[bytes], timeout: float = 300) -> bytes:
    """The status line of the first answer to REQUEST, sent as soon as the port listens."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:  # bounded
        if proc.poll() is not None:
            raise SystemExit(f"the server ended ({proc.returncode}) before it answered")
        try:
            conn = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        except OSError:
            time.sleep(0.005)
            continue
        with conn:
            conn.sendall(REQUEST)
            got = b""
            while b"\r\n" not in got:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                got += chunk
            return got.split(b"\r\n", 1)[0]
    raise SystemExit("no answer in time")


def count(command: list[str], env: dict[str, str], keep: Path | None, name: str) -> int:
    """Instructions the server's process executed from launch to its first answer."""
    port = free_port()
    with tempfile.TemporaryDirectory() as cwd:
        out = Path(cwd) / "callgrind.out"
        proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--cache-sim=no", f"--callgrind-out-file={out}",
                                 *(a.replace("{port}", str(port)) for a in command)],
                                cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            status = first_answer(port, proc)
            if not status.startswith(b"HTTP/1.1 2"):
                raise SystemExit(f"{name}: the first answer was {status!r}")
            subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, capture_output=True)
            if keep is not None:
                keep.mkdir(parents=True, exist_ok=True)
                for dump in Path(cwd).glob("callgrind.out*"):
                    shutil.copy(dump, keep / f"{name}.{dump.name}")
            return first_dump(out)
        finally:
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


PLUGIN = "import os, pytest, plantstub.pytest_plugin\n"
FIXTURE = PLUGIN + """from plantstub.plugin.pool import StubPool
stub = StubPool().get({})
stub.reset("test_first")
stub.use(None)
"""


def program_count(code: str, env: dict[str, str]) -> int:
    """Instructions of `python -c CODE` to its end (os._exit: no teardown counted)."""
    with tempfile.TemporaryDirectory() as cwd:
        out = Path(cwd) / "callgrind.out"
        subprocess.run(["valgrind", "--tool=callgrind", "--cache-sim=no", f"--callgrind-out-file={out}",
                        sys.executable, "-c", code + "os._exit(0)\n"], cwd=cwd, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
        return counted(out)


def importtime_total(env: dict[str, str], runs: int = 5) -> float:
    """ms: self time of every module `import plantstub.cli` imports, summed (the median of `runs`)."""
    totals = []
    for _ in range(runs):
        text = subprocess.run([sys.executable, "-X", "importtime", "-c", "import plantstub.cli"], capture_output=True,
                              text=True, timeout=120, env=env, cwd=tempfile.gettempdir()).stderr
        totals.append(sum(int(m[1]) for m in re.finditer(r"import time:\s+(\d+) \|", text)) / 1000)
    return statistics.median(totals)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH") and not k.startswith("PLANTSTUB_")}
    return {**env, **extra}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="launches of each server (the median is shown)")
    parser.add_argument("--source", metavar="DIR", action="append", default=[],
                        help="import plantstub from DIR instead of the installed one; repeat it to compare")
    parser.add_argument("--stub-arg", action="append", default=[], help="an argument more for `plantstub serve`")
    parser.add_argument("--keep", type=Path, help="keep the callgrind files in this folder")
    parser.add_argument("--fixture", action="store_true", help="count the pytest fixture's first start too")
    args = parser.parse_args()
    envs = {str(s): clean_env(PYTHONPATH=str(Path(s).resolve())) for s in args.source} or {"installed": clean_env()}
    for env in envs.values():  # write the bytecode once, as an installed copy has it
        subprocess.run([sys.executable, "-c", "import plantstub.cli, aiohttp.web"], env=env, check=False,
                       capture_output=True, cwd=tempfile.gettempdir())
    hello = [count([sys.executable, str(HELLO), "{port}"], clean_env(), args.keep, "hello") for _ in range(args.runs)]
    base = statistics.median(hello)
    print(f"{'server':<44} {'M instructions':>15} {'x hello':>8} {'importtime ms':>14}")
    print(f"{'aiohttp hello':<44} {base / 1e6:>15,.0f} {1:>8.2f}")
    serve = [sys.executable, "-m", "plantstub", "serve", "--host", "127.0.0.1", "--port", "{port}", *args.stub_arg]
    for label, env in envs.items():
        runs = [count(serve, env, args.keep, f"plantstub-{Path(label).name or 'src'}") for _ in range(args.runs)]
        mid = statistics.median(runs)
        spread = f" ({min(runs) / 1e6:,.0f}-{max(runs) / 1e6:,.0f})" if len(runs) > 1 else ""
        print(f"{'plantstub serve from ' + label + spread:<44} {mid / 1e6:>15,.0f} {mid / base:>8.2f} "
              f"{importtime_total(env):>14.0f}")
    if args.fixture:
        print("the fixture's first start (M instructions: pytest and the plugin imported, then the first stub started)")
        for label, env in envs.items():
            cost = program_count(FIXTURE, env) - program_count(PLUGIN, env)
            print(f"  plantstub from {label:<30} {cost / 1e6:>10,.0f}")


if __name__ == "__main__":
    main()
