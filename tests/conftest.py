"""Fixtures and hooks of the whole suite; the helpers test modules import are in tests/helpers.py."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.helpers import CI_EXAMPLES, ServeProcess, hypothesis_profile

# slowrule: the `slow` mark by rule, and its guard; lanerule: the `lanes` mark by rule (what CI's lanes run)
pytest_plugins = ["pytester", "tests.slowrule", "tests.lanerule"]

# Hypothesis: `dev` is its defaults; `ci` bounds each search (tests ask for `examples(N)`, tests/helpers.py) and prints
# the blob that replays a failure. Chosen by HYPOTHESIS_PROFILE, else by CI (.ci/run sets it).
settings.register_profile("dev")
settings.register_profile("ci", max_examples=CI_EXAMPLES, print_blob=True)
settings.load_profile(hypothesis_profile())

# The spec cache of every load the suite makes (and the processes it starts) is its own, not the user's.
if not os.environ.get("PLANTSTUB_SPEC_CACHE"):
    os.environ["PLANTSTUB_SPEC_CACHE"] = _cache = tempfile.mkdtemp(prefix="plantstub-spec-cache-")
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)

if os.environ.get("PLANTSTUB_EXPECT_INSTALLED") == "1":  # set by noxfile.py: test the installed wheel only
    import plantstub

    _repo = Path(__file__).resolve().parents[1]
    if Path(plantstub.__file__).resolve().is_relative_to(_repo):
        raise RuntimeError(f"PLANTSTUB_EXPECT_INSTALLED=1 but plantstub was imported from the source tree: {plantstub.__file__}")
    if (Path.cwd() / "plantstub").is_dir():
        raise RuntimeError(f"PLANTSTUB_EXPECT_INSTALLED=1 but `python -m plantstub` run from {Path.cwd()} would import its plantstub/")


@pytest.fixture
def serve() -> Iterator:
    """Start `plantstub serve ARGS...` processes; all are stopped after the test."""
    started: list[ServeProcess] = []

    def start(*args: str, **kwargs) -> ServeProcess:
        process = ServeProcess(*args, **kwargs)
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()


@pytest.fixture
def serve_spec(serve, tmp_path) -> Iterator:
    """Start `plantstub serve --spec SPEC ARGS...` on a free port with no scenarios (an empty folder); after the
    test each is stopped and its stderr holds no Python traceback."""
    started: list[ServeProcess] = []

    def start(spec: str, *args: str) -> ServeProcess:
        process = serve("--spec", spec, *args, "--port", "0", "--scenarios", str(tmp_path))
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()
        assert "Traceback" not in process.stderr

