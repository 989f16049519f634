"""CI sessions: plantstub as its users install it, from its wheel, in fresh venvs on the oldest and newest Python.

The README's run (the whole suite, in the dev venv with every `[test]` extra at its newest release) runs every test
once. These sessions run what can differ between environments (a pytest hook that needed pytest-xdist once stopped
every run of a project without it; aiohttp's pure-Python parser once hung at a keep-alive connection's 33rd request):

- `floors`: every direct dependency (and `[test]`'s) at the lowest version its specifier allows
  (`uv pip install --resolution lowest-direct`), on the oldest Python requires-python allows. `newest`: the newest
  releases on the newest Python. Each with aiohttp's C parser and with its pure-Python one (`AIOHTTP_NO_EXTENSIONS=1`,
  which the stubs the tests start inherit): `floors(c-parser)`, `floors(pure-python-parser)`, `newest(...)`.
  They run the repository's tests/ against the installed wheel, `-m "not slow or lanes"`: the fast set (the tests not
  marked slow, tests/slowrule.py) and the slow tests the lanes can move (marked `lanes` by tests/lanerule.py's rule).
  The venv's `pytest` runs with `--import-mode=importlib` from a folder outside the repository, and
  PLANTSTUB_EXPECT_INSTALLED=1 makes tests/conftest.py refuse a plantstub imported from the source tree.
- `consumer`: tests/consumer/ (a consumer project's own suite) copied out of the repository, in venvs holding
  plantstub's wheel + pytest + requests only (`plain`, oldest and newest Python), + pytest-xdist with `-n 2`
  (`xdist`), + pytest-asyncio/pytest-aiohttp with asyncio_mode=auto (`asyncio`). A lane's options go in
  PYTEST_ADDOPTS, so the suite's inner pytester runs get them too.

Hypothesis runs its `ci` profile (a bounded number of examples) when HYPOTHESIS_PROFILE=ci or CI is set, as .ci/run
does. Interpreters: pyenv's, else PATH's.

Usage: .venv/bin/nox (every session; `-s floors`, `-s "newest(pure-python-parser)"`, `-s "consumer(plain-3.10)"`,
`--list`).
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from pathlib import Path

import nox

REPO = Path(__file__).resolve().parent
# The oldest Python is requires-python's floor (`>=3.10` in pyproject.toml); the newest, the newest CPython.
_FLOOR = re.search(r'^requires-python\s*=\s*">=\s*(\d+\.\d+)', (REPO / "pyproject.toml").read_text(), re.MULTILINE)
if _FLOOR is None:
    raise SystemExit('noxfile.py: no `requires-python = ">=X.Y"` in pyproject.toml')
OLDEST, NEWEST = _FLOOR.group(1), "3.13"
STEP_TIMEOUT = "600"  # seconds for one pytest run; `timeout` then kills its whole process group

# Venvs and the wheel outside the repository (a plantstub under it counts as the source tree's), removed at the end.
TMP = Path(tempfile.mkdtemp(prefix="plantstub-nox-"))
atexit.register(shutil.rmtree, TMP, ignore_errors=True)

nox.options.envdir = str(TMP / "venvs")  # `--envdir DIR` keeps them
nox.options.default_venv_backend = "uv"
nox.options.error_on_missing_interpreters = True
nox.needs_version = ">=2024.10.9"

# What would point Python, pytest or plantstub somewhere else; and PYTHONDONTWRITEBYTECODE, because users' venvs
# cache bytecode, and without it every inner pytest run of the consumer suite compiles aiohttp and pytest again.
for _name in [*(n for n in os.environ if n.startswith("PLANTSTUB_")), "PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH",
              "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS", "PYTEST_PLUGINS",
              "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_XDIST_AUTO_NUM_WORKERS"]:
    os.environ.pop(_name, None)


def _pyenv_first() -> None:
    """Put pyenv's interpreters (newest patch release first) before PATH's: its shims answer only the global one."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    found = sorted(root.glob("versions/3.*/bin"), reverse=True,
                   key=lambda p: [int(n) for n in re.findall(r"\d+", p.parent.name)])
    os.environ["PATH"] = os.pathsep.join([*map(str, found), os.environ.get("PATH", "")])


_pyenv_first()
_built: list[Path] = []  # the wheel, built once per nox run


def wheel(session: nox.Session) -> Path:
    """Build the wheel once, from a copy of the work tree (an in-tree build could pack stale build/ files)."""
    if not _built:
        top = {".git", ".venv", ".nox", "venv", "build", "dist", ".pytest_cache", ".hypothesis"}

        def skip(folder: str, names: list[str]) -> set[str]:
            here = Path(folder) == REPO
            return {n for n in names if n == "__pycache__" or (here and (n in top or n.endswith(".egg-info")))}

        shutil.copytree(REPO, TMP / "source", ignore=skip, symlinks=True)
        session.run("uv", "build", "--wheel", "--quiet", "--out-dir", str(TMP / "wheel"), str(TMP / "source"),
                    external=True)
        _built.extend(sorted((TMP / "wheel").glob("plantstub-*.whl")))
    return _built[0]


def fresh(session: nox.Session, extras: str = "") -> list[str]:
    """uv's arguments installing this run's wheel: its cache once served a wheel of an earlier run."""
    return ["--refresh-package", "plantstub", f"{wheel(session)}{extras}"]


def installed_from_venv(session: nox.Session) -> None:
    """plantstub, imported from a folder that holds none, must come from the session's venv."""
    with session.chdir(session.create_tmp()):
        where = str(session.run("python", "-c", "import plantstub; print(plantstub.__file__)", silent=True)).strip()
    venv = Path(session.virtualenv.location).resolve()
    if not Path(where).resolve().is_relative_to(venv) or Path(where).resolve().is_relative_to(REPO):
        session.error(f"plantstub is imported from {where}, not from {venv}")
    session.log(f"plantstub from {where}")


# The tests a lane runs: the fast set and what tests/lanerule.py marks (a rule: new tests join without an edit here).
LANE_TESTS = "not slow or lanes"
PARSERS = {"c-parser": {}, "pure-python-parser": {"AIOHTTP_NO_EXTENSIONS": "1"}}
# tests/contract/ checks specs and bodies, which no HTTP parser reads: the C-parser lane of the same venv runs it, and
# the pure-Python-parser lane runs everything else (CI's 15 minutes).
PARSER_IGNORES = {"c-parser": [], "pure-python-parser": ["--ignore", str(REPO / "tests" / "contract")]}

# Which of aiohttp's request parsers this environment runs: the lane fails when it is not the one it is for (a
# release without C extensions for this Python would run the pure-Python parser in the `c-parser` lane unseen).
WHICH_PARSER = """
import sys
import aiohttp
from aiohttp import http_parser
pure = http_parser.HttpRequestParser is http_parser.HttpRequestParserPy
print(f"lanes: aiohttp {aiohttp.__version__}, {'pure-Python' if pure else 'C'} request parser")
sys.exit(0 if pure == (sys.argv[1] == "pure-python-parser") else f"lanes: not the {sys.argv[1]}")
"""


def in_process(session: nox.Session, parser: str) -> None:
    """The repository's tests/ (but tests/consumer/) that a lane runs, against the installed wheel, from outside
    the repository, with aiohttp's `parser`."""
    installed_from_venv(session)
    env = {"PLANTSTUB_EXPECT_INSTALLED": "1", "PYTHONSAFEPATH": "1", **PARSERS[parser]}
    work = Path(session.create_tmp())
    # importlib mode puts no rootdir on sys.path; PYTHONSAFEPATH covers tests that chdir to the repository.
    with session.chdir(work):
        session.run("python", "-c", WHICH_PARSER, parser, env=env)
        session.run("timeout", "--kill-after=10", STEP_TIMEOUT, "pytest", "--rootdir", str(REPO),
                    "-c", str(REPO / "pyproject.toml"), "--import-mode=importlib", "-p", "no:cacheprovider",
                    "--basetemp", str(work / "basetemp"), "-n", "2", "-q", "-m", LANE_TESTS,
                    "--ignore", str(REPO / "tests" / "consumer"), *PARSER_IGNORES[parser], str(REPO / "tests"), env=env,
                    external=True)


# Run in the floors venv: each direct dependency (and `[test]`'s) must be installed at its declared floor exactly,
# so a floor no release has, or one the resolver cannot reach, fails rather than passing at a higher version.
AT_FLOORS = """
import sys
from importlib.metadata import requires, version
from packaging.requirements import Requirement
from packaging.version import Version
off = []
for req in map(Requirement, requires("plantstub")):
    if req.marker is None or req.marker.evaluate({"extra": "test"}):
        floor = [s.version for s in req.specifier if s.operator == ">="]
        at = version(req.name)
        print(f"floors: {req.name} {at} (declared {req.specifier})")
        if not floor or Version(at) != Version(floor[0]):
            off.append(f"{req.name} {at}")
sys.exit(f"floors: not at the declared floor: {', '.join(off)}" if off else 0)
"""


@nox.session(python=OLDEST)
@nox.parametrize("parser", list(PARSERS), ids=list(PARSERS))
def floors(session: nox.Session, parser: str) -> None:
    """Every direct dependency at its declared floor, on the oldest Python: the lane's tests."""
    # The requirements as direct ones (uv lowers only those), then the wheel beside them; AT_FLOORS reads the
    # wheel's own metadata, so the two cannot differ unseen.
    session.install("--resolution", "lowest-direct", "-r", str(REPO / "pyproject.toml"), "--extra", "test")
    session.install("--no-deps", *fresh(session))
    session.run("python", "-c", AT_FLOORS)
    in_process(session, parser)


@nox.session(python=NEWEST)
@nox.parametrize("parser", list(PARSERS), ids=list(PARSERS))
def newest(session: nox.Session, parser: str) -> None:
    """The newest releases on the newest Python: the lane's tests against the wheel."""
    session.install(*fresh(session, "[test]"))
    in_process(session, parser)


CONSUMER_LANES = {  # lane: (packages beside the wheel, PYTEST_ADDOPTS)
    "plain": (["pytest", "requests"], ""),
    "xdist": (["pytest", "requests", "pytest-xdist"], "-n 2"),
    "asyncio": (["pytest", "requests", "pytest-xdist", "pytest-asyncio", "pytest-aiohttp"], "-o asyncio_mode=auto"),
}


@nox.session
@nox.parametrize(("python", "lane"), [(OLDEST, "plain"), (NEWEST, "plain"), (NEWEST, "xdist"), (NEWEST, "asyncio")],
                 ids=[f"plain-{OLDEST}", f"plain-{NEWEST}", "xdist", "asyncio"])
def consumer(session: nox.Session, lane: str) -> None:
    """tests/consumer/ as a project that depends on plantstub runs it, copied out of the repository."""
    packages, addopts = CONSUMER_LANES[lane]
    session.install(*fresh(session), *packages)
    installed_from_venv(session)
    work = Path(session.create_tmp())
    shutil.rmtree(work / "consumer", ignore_errors=True)
    shutil.copytree(REPO / "tests" / "consumer", work / "consumer",
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    (work / "consumer" / "pytest.ini").write_text("[pytest]\n")  # the rootdir: no stray ini above applies
    with session.chdir(work / "consumer"):
        session.run("timeout", "--kill-after=10", STEP_TIMEOUT, "python", "-m", "pytest", "-p", "pytester",
                    "-p", "no:cacheprovider", "-ra", "--basetemp", str(work / "basetemp"),
                    env={"PLANTSTUB_README": str(REPO / "README.md"), "PYTEST_ADDOPTS": addopts}, external=True)
