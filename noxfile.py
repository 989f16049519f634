"""CI sessions: plantstub as its users install it, from its wheel, in fresh venvs on the oldest and newest Python.

The dev venv has every `[test]` extra and the newest releases (the README's commands), so these sessions cover
what it cannot see (a pytest hook that needed pytest-xdist once stopped every run of a project without it):

- `floors`: every direct dependency (and `[test]`'s) at the lowest version its specifier allows
  (`uv pip install --resolution lowest-direct`), on the oldest Python requires-python allows; the repository's
  whole tests/ against the installed wheel. `tests`: the same on the newest Python with the newest releases.
  Both run the venv's `pytest` with `--import-mode=importlib` from a folder outside the repository, and
  PLANTSTUB_EXPECT_INSTALLED=1 makes tests/conftest.py refuse a plantstub imported from the source tree.
- `consumer`: tests/consumer/ (a consumer project's own suite) copied out of the repository, in venvs holding
  plantstub's wheel + pytest + requests only (`plain`, oldest and newest Python), + pytest-xdist with `-n 2`
  (`xdist`), + pytest-asyncio/pytest-aiohttp with asyncio_mode=auto (`asyncio`). A lane's options go in
  PYTEST_ADDOPTS, so the suite's inner pytester runs get them too.

Gone with tests/lanes.py: the `no-jsonschema-rs` lane (jsonschema-rs is a hard dependency, and request checks
are to use it alone), and the kill of a step's whole process group when it succeeds but leaves a process behind
(`timeout` still kills the group of a step that runs too long). Interpreters: pyenv's, else PATH's.

Usage: .venv/bin/nox (every session; `-s floors`, `-s "consumer(plain-3.10)"`, `--list`).
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


def in_process(session: nox.Session) -> None:
    """The repository's tests/ (but tests/consumer/) against the installed wheel, from outside the repository."""
    installed_from_venv(session)
    work = Path(session.create_tmp())
    # importlib mode puts no rootdir on sys.path; PYTHONSAFEPATH covers tests that chdir to the repository.
    with session.chdir(work):
            session.run("timeout", "--kill-after=10", STEP_TIMEOUT, "pytest", "--rootdir", str(REPO),
                    "-c", str(REPO / "pyproject.toml"), "--import-mode=importlib", "-p", "no:cacheprovider",
                "--basetemp", str(work / "basetemp"), "-n", "2", "-q", "--ignore", str(REPO / "tests" / "consumer"),
                    str(REPO / "tests"), env={"PLANTSTUB_EXPECT_INSTALLED": "1", "PYTHONSAFEPATH": "1"}, external=True)


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
def floors(session: nox.Session) -> None:
    """Every direct dependency at its declared floor, on the oldest Python: the whole suite."""
    # The requirements as direct ones (uv lowers only those), then the wheel beside them; AT_FLOORS reads the
    # wheel's own metadata, so the two cannot differ unseen.
    session.install("--resolution", "lowest-direct", "-r", str(REPO / "pyproject.toml"), "--extra", "test")
    session.install("--no-deps", *fresh(session))
    session.run("python", "-c", AT_FLOORS)
    in_process(session)


@nox.session(python=NEWEST)
def tests(session: nox.Session) -> None:
    """The newest releases on the newest Python: the whole suite against the wheel."""
    session.install(*fresh(session, "[test]"))
    in_process(session)


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
