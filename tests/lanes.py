"""Run plantstub the way its users do: from the wheel, in fresh virtualenvs, on the oldest and newest Python.

The dev venv has every `[test]` extra, so the main suite cannot see what breaks in a project that has fewer
(a pytest hook that needs pytest-xdist once stopped every run of such a project with INTERNALERROR). This
script builds the wheel once and runs, in fresh venvs made from it:

- consumer lanes: tests/consumer/, copied out of the repository (so the source tree cannot be imported),
  run with `python -m pytest -p pytester` in venvs holding plantstub + pytest + requests only (`plain`),
  then + pytest-xdist with `-n 2` (`xdist`), then + pytest-asyncio/pytest-aiohttp with asyncio_mode=auto
  (`asyncio`). A lane's pytest
  options go in PYTEST_ADDOPTS, so the consumer suite's inner pytester runs get them too.
- in-process lanes: the repository's own tests/ against the wheel installed with its `[test]` extras, via
  the venv's `pytest` with `--import-mode=importlib` from a working directory outside the repository;
  PLANTSTUB_EXPECT_INSTALLED=1 makes tests/conftest.py refuse a plantstub imported from the source tree.

Usage: .venv/bin/python tests/lanes.py [--only NAME ...] [-j N] [--keep] [--pythons PYTHON ...]
Stdlib only. Prints one line per lane and ends with `lanes: N passed, M failed`; exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONSUMER = REPO / "tests" / "consumer"
NEWEST = "3.13"  # the newest CPython the lanes run on; the oldest is requires-python's floor
ROLES = {"newest": NEWEST}  # role -> X.Y; main() adds "oldest" from pyproject.toml
# Seconds for the whole run (about 5 min on a quiet 2-core machine); each subprocess's timeout is cut to what is left.
BUDGET = 600.0

PLAIN = ("pytest", "requests")
XDIST = (*PLAIN, "pytest-xdist")
ASYNCIO = (*XDIST, "pytest-asyncio", "pytest-aiohttp")


@dataclass(frozen=True)
class Lane:
    name: str
    role: str  # "oldest" or "newest"
    venv: str  # lanes of one role with the same venv share it, in the order listed below
    packages: tuple[str, ...] = ()  # installed beside the wheel (cumulative, so a lane run alone gets the same set)
    addopts: str = ""  # PYTEST_ADDOPTS of the lane's pytest runs
    in_process: bool = False  # the repository's tests/ rather than tests/consumer/
    uninstall: tuple[str, ...] = ()  # distributions removed after the install ...
    absent: tuple[str, ...] = ()  # ... and the modules that must then fail to import


LANES = (  # a venv's lanes run in this order; jobs (one per venv) start in the order of their first lane
    Lane("in-process", "oldest", "in-process", in_process=True),  # the longest job: first
    Lane("plain", "newest", "consumer", PLAIN),
    Lane("xdist", "newest", "consumer", XDIST, addopts="-n 2"),
    Lane("asyncio", "newest", "consumer", ASYNCIO, addopts="-o asyncio_mode=auto"),
    Lane("in-process", "newest", "in-process", in_process=True),
    Lane("plain", "oldest", "consumer", PLAIN),
)

# Removed from the lanes' environment: what would point Python, pytest or plantstub somewhere else.
# PYTHONDONTWRITEBYTECODE too: users' venvs cache bytecode, and without it every inner pytest run of the
# consumer suite compiles aiohttp, jsonschema and pytest again.
DROPPED = ("PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH", "PYTHONSTARTUP", "PYTHONUSERBASE", "VIRTUAL_ENV",
           "PYTHONDONTWRITEBYTECODE",
           "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_XDIST_AUTO_NUM_WORKERS")


class Failed(Exception):
    """A lane step failed; the message says which (its output is in the lane's log)."""


@dataclass
class Python:
    path: Path
    version: str  # "3.10"
    full: str  # "3.10.13"


@dataclass
class Result:
    lane: Lane
    python: Python | None
    ok: bool = False
    install: float = 0.0
    tests: float = 0.0
    note: str = ""
    log: Path | None = None
    details: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"lane {self.lane.name} (python {self.python.version if self.python else ROLES[self.lane.role]})"


class Runner:
    """Runs subprocesses with timeouts cut to the run's budget, each in its own process group."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.running: set[subprocess.Popen] = set()
        self.lock = threading.Lock()
        self.stopping = False

    def run(self, cmd: list[str], log, *, timeout: float, cwd: Path, env: dict[str, str]) -> int:
        """Run `cmd` with its output appended to `log`; return its exit code. Raises Failed on timeout."""
        left = self.deadline - time.monotonic()
        if self.stopping or left <= 0:
            raise Failed("out of time (the run's budget is spent)" if not self.stopping else "interrupted")
        limit = min(timeout, left)
        log.write(f"$ {shlex.join(cmd)}\n")
        log.flush()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        with self.lock:
            self.running.add(proc)
        try:
            code = proc.wait(limit)
        except subprocess.TimeoutExpired:
            self.kill(proc)
            proc.wait()
            raise Failed(f"timed out after {limit:.0f} s: {shlex.join(cmd[:4])} ...") from None
        finally:
            with self.lock:
                self.running.discard(proc)
        if self.kill(proc):  # its group outlived it: a leaked server, say
            log.write(f"lanes: processes left running by {cmd[0]} were killed\n")
        log.write(f"[exit {code}]\n\n")
        log.flush()
        return code

    @staticmethod
    def kill(proc: subprocess.Popen) -> bool:
        """SIGKILL the process group we started for `proc`; True if anything in it was still alive."""
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def stop_all(self) -> None:
        self.stopping = True
        with self.lock:
            for proc in list(self.running):
                self.kill(proc)


def floor_version() -> str:
    """requires-python's lower bound, from pyproject.toml (`>=3.10` -> `3.10`)."""
    text = (REPO / "pyproject.toml").read_text()
    match = re.search(r'^requires-python\s*=\s*">=\s*(\d+\.\d+)', text, re.M)
    if not match:
        raise SystemExit("lanes: no `requires-python = \">=X.Y\"` in pyproject.toml")
    return match.group(1)


def probe(path: str) -> Python | None:
    """The interpreter at `path`, if it runs."""
    try:
        done = subprocess.run([path, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                              capture_output=True, text=True, timeout=30, env=clean_env())
    except (OSError, subprocess.TimeoutExpired):
        return None
    full = done.stdout.strip()
    if done.returncode != 0 or not re.fullmatch(r"\d+\.\d+\.\d+", full):
        return None
    return Python(Path(path), full.rsplit(".", 1)[0], full)


def find_python(version: str) -> Python | None:
    """CPython `version` (X.Y): pyenv's versions first (newest patch release first), then PATH."""
    roots = [os.environ.get("PYENV_ROOT"), str(Path.home() / ".pyenv")]
    if shutil.which("pyenv"):
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            roots.insert(0, subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=30).stdout.strip())
    candidates: list[str] = []
    for root in dict.fromkeys(r for r in roots if r):
        found = glob.glob(os.path.join(root, "versions", f"{version}*", "bin", f"python{version}"))
        candidates += sorted(found, key=lambda p: [int(n) for n in re.findall(r"\d+", Path(p).parents[1].name)], reverse=True)
    if shutil.which(f"python{version}"):
        candidates.append(shutil.which(f"python{version}"))
    for path in candidates:
        python = probe(path)
        if python and python.version == version:
            return python
    return None


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED and not k.startswith("PLANTSTUB_")}
    env.update(extra)
    return env


def lane_id(lane: Lane, python: Python | None) -> str:
    return f"{lane.name}-{python.version if python else ROLES[lane.role]}"


class Lanes:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.started = time.monotonic()
        self.runner = Runner(self.started + args.budget)
        self.tmp = Path(tempfile.mkdtemp(prefix="plantstub-lanes-"))
        self.print_lock = threading.Lock()
        self.wheel: Path | None = None

    def say(self, *lines: str) -> None:
        with self.print_lock:
            for line in lines:
                print(line, flush=True)

    # -- the wheel ---------------------------------------------------------------------------------
    def build_wheel(self) -> None:
        """Build the wheel once, from a copy of the work tree (an in-tree build could pack stale build/ files)."""
        source = self.tmp / "source"
        top = {".git", ".venv", "venv", "build", "dist", ".pytest_cache", ".hypothesis"}

        def skip(folder: str, names: list[str]) -> set[str]:
            here = Path(folder) == REPO
            return {n for n in names if n == "__pycache__" or (here and (n in top or n.endswith(".egg-info")))}

        shutil.copytree(REPO, source, ignore=skip, symlinks=True)
        started = time.monotonic()
        with open(self.tmp / "wheel.log", "w") as log:
            code = self.runner.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check",
                                    "-w", str(self.tmp / "wheel"), str(source)], log, timeout=300, cwd=self.tmp,
                                   env=clean_env())
        wheels = sorted((self.tmp / "wheel").glob("plantstub-*.whl"))
        if code != 0 or len(wheels) != 1:
            self.say((self.tmp / "wheel.log").read_text(), f"lanes: building the wheel failed (exit {code})")
            raise SystemExit(1)
        self.wheel = wheels[0]
        self.say(f"lanes: built {self.wheel.name} in {time.monotonic() - started:.1f} s")

    # -- one venv, its lanes in order ---------------------------------------------------------------
    def run_job(self, python: Python, venv_name: str, lanes: list[Lane]) -> list[Result]:
        venv = self.tmp / f"venv-{venv_name}-{python.version}"
        results = []
        venv_made = False
        for lane in lanes:
            result = Result(lane, python, log=self.tmp / "logs" / f"{lane_id(lane, python)}.log")
            result.log.parent.mkdir(exist_ok=True)
            with open(result.log, "w") as log:
                started, phase = time.monotonic(), "install"
                try:
                    if not venv_made:
                        self.step([str(python.path), "-m", "venv", str(venv)], log, 120, "creating the venv")
                        venv_made = True
                    self.install(lane, venv, log, result)
                    result.install, started, phase = time.monotonic() - started, time.monotonic(), "tests"
                    self.test(lane, python, venv, log, result)
                    result.ok = True
                except Failed as exc:
                    result.note = str(exc)
                finally:
                    setattr(result, phase, time.monotonic() - started)
            self.report(result)
            results.append(result)
        return results

    def step(self, cmd: list[str], log, timeout: float, what: str, *, cwd: Path | None = None,
             env: dict[str, str] | None = None, expect: int | None = 0) -> int:
        code = self.runner.run(cmd, log, timeout=timeout, cwd=cwd or self.tmp, env=env or clean_env())
        if expect is not None and code != expect:
            raise Failed(f"{what} failed (exit {code})")
        return code

    def install(self, lane: Lane, venv: Path, log, result: Result) -> None:
        python = str(venv / "bin" / "python")
        requirement = f"{self.wheel}[test]" if lane.in_process else str(self.wheel)
        self.step([python, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off",
                   requirement, *lane.packages],
                  log, 300, "pip install")
        if lane.uninstall:
            self.step([python, "-m", "pip", "uninstall", "--disable-pip-version-check", "-y", *lane.uninstall],
                      log, 120, "pip uninstall")
        for module in lane.absent:
            if self.step([python, "-c", f"import {module}"], log, 60, "", expect=None) == 0:
                raise Failed(f"`import {module}` still works after uninstalling {', '.join(lane.uninstall)}")
            result.details.append(f"`import {module}` fails, as it should")
        # Which plantstub this venv imports, from a folder that has none: it must be the wheel's.
        where = self.tmp / "logs" / f"{lane_id(lane, result.python)}.where"
        self.step([python, "-c", f"import plantstub, pathlib; pathlib.Path({str(where)!r}).write_text(plantstub.__file__)"],
                  log, 60, "import plantstub", cwd=self.tmp)
        imported = Path(where.read_text().strip()).resolve()
        if not imported.is_relative_to(venv.resolve()) or imported.is_relative_to(REPO):
            raise Failed(f"plantstub is imported from {imported}, not from the venv's site-packages")
        result.details.insert(0, f"plantstub from {imported}")

    def test(self, lane: Lane, python: Python, venv: Path, log, result: Result) -> None:
        work = self.tmp / lane_id(lane, python)
        work.mkdir()
        if lane.in_process:
            # The venv's `pytest` script (sys.path[0] is the venv's bin/), importlib mode (no rootdir on
            # sys.path), a working directory outside the repository (so `python -m plantstub` in a test
            # finds the installed package; PYTHONSAFEPATH covers tests that chdir to the repo on 3.11+).
            cmd = [str(venv / "bin" / "pytest"), "--rootdir", str(REPO), "-c", str(REPO / "pyproject.toml"),
                   "--import-mode=importlib", "-p", "no:cacheprovider", "--basetemp", str(work / "basetemp"),
                   # two workers: half the suite waits on subprocesses and timeouts, so this halves the lane
                   "-n", "2", "--ignore", str(CONSUMER), str(REPO / "tests")]  # the consumer lanes run tests/consumer/
            env = clean_env(PLANTSTUB_EXPECT_INSTALLED="1", PYTHONSAFEPATH="1")
            cwd, timeout = work, 420
        else:
            cwd = work / "consumer"
            shutil.copytree(CONSUMER, cwd, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
            if not any((cwd / name).exists() for name in ("pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")):
                (cwd / "pytest.ini").write_text("[pytest]\n")  # the rootdir: no stray ini above /tmp applies
            cmd = [str(venv / "bin" / "python"), "-m", "pytest", "-p", "pytester", "-p", "no:cacheprovider", "-ra",
                   "--basetemp", str(work / "basetemp")]
            env = clean_env(PLANTSTUB_README=str(REPO / "README.md"), PYTEST_ADDOPTS=lane.addopts)
            timeout = 240
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        if lane.addopts:
            log.write(f"PYTEST_ADDOPTS={shlex.quote(lane.addopts)}\n")
        start = log.tell()
        code = self.step(cmd, log, timeout, "pytest", cwd=cwd, env=env, expect=None)
        log.flush()
        with open(result.log) as read:
            read.seek(start)
            summary = [line.strip() for line in read if re.match(r"=+ .*\b(passed|failed|error|no tests ran)\b", line)]
        if summary:
            result.details.append("pytest: " + summary[-1].strip("= "))
        if code != 0:
            raise Failed(f"pytest exited {code}")

    def report(self, result: Result) -> None:
        lines = [f"{result.title}: {'passed' if result.ok else 'FAILED'} in {result.install + result.tests:.1f} s"
                 f" (install {result.install:.1f} s, tests {result.tests:.1f} s)"]
        lines += [f"    {detail}" for detail in result.details]
        if not result.ok:
            lines.append(f"    {result.note}")
            if result.log and result.log.exists():
                lines += [f"----- {result.title}: log -----", result.log.read_text().rstrip(),
                          f"----- end of {result.title} -----"]
        self.say(*lines)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="run only these lanes: a name (plain, xdist, asyncio, in-process) "
                             "or a name and version (plain-3.10)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="venvs set up and tested at once (default 2)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (wheel, venvs, logs)")
    parser.add_argument("--pythons", nargs="+", metavar="PYTHON",
                        help="interpreters to use; the lowest version runs the `oldest` lanes, the highest the "
                             "`newest` ones (default: environment PLANTSTUB_LANE_PYTHONS, else pyenv's or PATH's "
                             "python<floor> and python" + NEWEST + ")")
    parser.add_argument("--budget", type=float, default=BUDGET, help=f"seconds for the whole run (default {BUDGET:.0f})")
    return parser.parse_args(argv)


def choose_pythons(args: argparse.Namespace) -> tuple[dict[str, Python | None], list[str]]:
    """{role: Python or None (its lanes then fail), and lines to print first."""
    given = args.pythons or os.environ.get("PLANTSTUB_LANE_PYTHONS", "").replace(os.pathsep, " ").split()
    floor = ROLES["oldest"] = floor_version()
    if not given:
        found = {"oldest": find_python(floor), "newest": find_python(NEWEST)}
        missing = [f"lanes: no python{v} for the {role} lanes (looked in pyenv's versions and PATH; "
                   f"give interpreters with --pythons or PLANTSTUB_LANE_PYTHONS)"
                   for role, v in (("oldest", floor), ("newest", NEWEST)) if found[role] is None]
        return found, missing
    probed = [(path, probe(path)) for path in given]
    broken = [path for path, python in probed if python is None]
    if broken:
        raise SystemExit(f"lanes: not a working Python interpreter: {', '.join(broken)}")
    pythons = sorted((p for _, p in probed if p), key=lambda p: [int(n) for n in p.full.split(".")])
    notes = []
    if pythons[0].version != floor:
        notes.append(f"lanes: note: the oldest interpreter given is {pythons[0].version}; requires-python says {floor}")
    return {"oldest": pythons[0], "newest": pythons[-1]}, notes


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    pythons, problems = choose_pythons(args)
    plan: list[tuple[Lane, Python | None]] = []
    for lane in LANES:
        python = pythons[lane.role]
        if any(lane.name == other.name and python and p and python.version == p.version for other, p in plan):
            continue  # one interpreter for both roles
        plan.append((lane, python))
    if args.only:
        known = {lane.name for lane, _ in plan} | {lane_id(lane, python) for lane, python in plan}
        unknown = sorted(set(args.only) - known)
        if unknown:
            print(f"lanes: unknown lane(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
            return 2
        plan = [(lane, python) for lane, python in plan if {lane.name, lane_id(lane, python)} & set(args.only)]

    lanes = Lanes(args)

    def interrupted(*_) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    results: list[Result] = []
    try:
        for problem in problems:
            lanes.say(problem)
        for role, python in pythons.items():
            if python:
                lanes.say(f"lanes: {role} python {python.full} ({python.path})")
        runnable = [(lane, python) for lane, python in plan if python]
        for lane, python in plan:
            if python is None:
                result = Result(lane, None, note=f"no interpreter for the {lane.role} lanes")
                lanes.report(result)
                results.append(result)
        if runnable:
            lanes.build_wheel()
            jobs: dict[tuple[str, str, str], list[Lane]] = {}
            for lane, python in runnable:
                jobs.setdefault((lane.venv, python.full, str(python.path)), []).append(lane)
            by_path = {str(p.path): p for _, p in runnable}
            with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
                futures = [pool.submit(lanes.run_job, by_path[path], venv, job_lanes)
                           for (venv, _, path), job_lanes in jobs.items()]
                try:
                    for future in futures:
                        results += future.result()
                except KeyboardInterrupt:
                    lanes.runner.stop_all()  # running steps die, the jobs' next steps refuse to start
                    raise
    except KeyboardInterrupt:
        lanes.runner.stop_all()
        lanes.say("lanes: interrupted")
        return 130
    finally:
        lanes.runner.stop_all()
        if args.keep:
            print(f"lanes: kept {lanes.tmp}")
        else:
            shutil.rmtree(lanes.tmp, ignore_errors=True)
    passed = sum(r.ok for r in results)
    failed = len(results) - passed
    print(f"lanes: {time.monotonic() - lanes.started:.1f} s in all, {max(1, args.jobs)} at a time")
    print(f"lanes: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
