"""How many scenario rules `plantstub verify` checks a second against a local Plant Store (tests/plant_store_app.py).

Run by hand: `.venv/bin/python tests/benchmarks/verify_rate.py [--rules 500] [--rounds 3]`. Each round runs the
whole command (`python -m plantstub verify`, a new process) on a file of 1 rule and on a file of N rules, reads (GET
/plants?limit=i) and then writes (POST /plants with a new id each, --allow-writes); the rate is (N - 1) over the
difference of the two wall times, so start-up (imports, the spec and the scenarios loaded and checked) is apart; the
same for the command's CPU time (user + system), which moves less with what else runs. Prints the median of the
rounds. The service and the command share the machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.helpers import Upstream, call  # noqa: E402 - the repository's root first

TOKEN = "bench-token-1234"


def rules(n: int, kind: str) -> str:
    if kind == "reads":
        body = "".join(f'  - match: {{method: GET, path: /plants, query: {{limit: "{i % 3 + 1}"}}}}\n'
                       "    reply: {status: 200, body: [{name: Fern, tag: green}]}\n" for i in range(n))
    else:
        body = "".join(f"  - match: {{method: POST, path: /plants, body: {{id: {1000 + i}, name: Rose}}}}\n"
                       "    reply: {status: 200, body: {name: Rose}}\n" for i in range(n))
    return "rules:\n" + body


def run(folder: Path, url: str, n: int, kind: str) -> tuple[float, float]:
    path = folder / f"{kind}-{n}.yaml"
    path.write_text(rules(n, kind), encoding="utf-8")
    assert call(url, "POST", "/__reset")[0] == 200
    env = {**os.environ, "PLANTSTUB_HEADER": f"Authorization: Bearer {TOKEN}"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "plantstub", "verify", "--against", url, "--spec", "plant-store-full",
                           "--allow-writes", str(path)], capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    last = done.stdout.splitlines()[-1] if done.stdout else done.stderr
    if done.returncode != 0 or (f" {n} agree" not in last and f" {n} agrees" not in last):
        raise SystemExit(f"verify failed: {last}")
    return seconds, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rules", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with Upstream(script="plant_store_app.py", args=(TOKEN,)) as store, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for kind in ("reads", "writes"):
            one, many = [], []
            for _ in range(args.rounds):
                one.append(run(folder, store.url, 1, kind))
                many.append(run(folder, store.url, args.rules, kind))
            start, total = (statistics.median(r[0] for r in runs) for runs in (one, many))
            start_cpu, total_cpu = (statistics.median(r[1] for r in runs) for runs in (one, many))
            rate = (args.rules - 1) / max(total - start, 1e-9)
            per_rule = (total_cpu - start_cpu) / (args.rules - 1) * 1000
            print(f"{kind}: {args.rules} rules in {total:.2f} s, 1 rule in {start:.2f} s (start-up, {start_cpu:.2f} s "
                  f"CPU); {rate:.0f} rules/s past start-up, {args.rules / total:.0f} rules/s whole; "
                  f"{per_rule:.2f} ms of verify's CPU per rule")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
