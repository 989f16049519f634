"""Seeds per test: each test's dynamic answers are drawn from the run's seed and its node id (the fixture keys the
stub's draws with it), so one test rerun alone with the seed draws them again; the seed is named in the failure text
of a test that drew dynamic answers, and in the run's terminal summary (every xdist worker's tests counted)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

import pytest

from plantstub._words import plural
from plantstub.plugin.options import given_seed

if TYPE_CHECKING:
    from plantstub.client.remote import RemoteStub
    from plantstub.plugin.summary import WorkerNode
    from plantstub.stub import Stub

DRAWN_KEY = pytest.StashKey[dict[str, int]]()  # how to draw them again -> tests that drew dynamic answers
WORKER_KEY = "plantstub_drawn"  # an xdist worker's DRAWN_KEY, sent to the controller
SIDECAR_SEEDS = pytest.StashKey[dict[str, int]]()  # a sidecar's seed, by its URL, asked once
SECTION = "plantstub dynamic answers"


def seed_key(item: pytest.Item) -> str:
    """What a test's dynamic answers are drawn from besides the seed: its node id, the same run alone (`-k`, `--lf`,
    the id on the command line) or in a whole run, on whichever xdist worker."""
    return item.nodeid


def _sidecar_seed(config: pytest.Config, stub: Stub | RemoteStub) -> int:
    """A sidecar's seed, asked once per sidecar: its root URL, whatever the session."""
    from plantstub.server.prefixes import SESSION_PREFIX  # here: loading the plugin imports no server code

    root = stub.url.partition(SESSION_PREFIX)[0]
    seeds = config.stash.setdefault(SIDECAR_SEEDS, {})
    if root not in seeds:
        seeds[root] = stub.seed
    return seeds[root]


def _again(config: pytest.Config, stub: Stub | RemoteStub, sidecar: bool) -> tuple[int, str]:
    """The stub's seed, and how a run draws from it again (what follows `--plantstub-seed N` or the like)."""
    if sidecar:
        seed = _sidecar_seed(config, stub)
        return seed, f"a sidecar started with --seed {seed} (PLANTSTUB_SEED={seed})"
    seed = stub.seed
    if seed == given_seed(config):
        return seed, f"--plantstub-seed {seed}"
    return seed, f"plantstub_settings' seed {seed}"


def failure_text(item: pytest.Item, stub: Stub | RemoteStub, sidecar: bool, drawn: int) -> str:
    """The section a failing test's report gets when it drew `drawn` dynamic answers."""
    seed, again = _again(item.config, stub, sidecar)
    rerun = f"pytest {shlex.quote(item.nodeid)} --plantstub-seed {seed}" if again.startswith("--") else None
    said = (f"plantstub: this test drew {plural(drawn, 'dynamic answer')} from seed {seed} and its "
            f"node id ({item.nodeid})")
    if rerun is not None:
        return f"{said}; `{rerun}` draws the same answers again, alone or in any run, on any worker."
    return f"{said}; with {again}, the test draws the same answers again, alone or in any run."


def add_failure_section(report: pytest.TestReport, item: pytest.Item, stub: Stub | RemoteStub, sidecar: bool,
                        drawn: int | None = None) -> None:
    """Name the seed in a failed test's report when the test drew dynamic answers (`drawn`: how many, when known;
    else asked of the stub, which only a failure pays for)."""
    from plantstub.errors import PlantstubError

    try:
        drawn = stub.dynamic_answers if drawn is None else drawn
        text = failure_text(item, stub, sidecar, drawn) if drawn else None
    except PlantstubError:  # a sidecar gone: the failure says why already
        return
    if text is None:
        return
    longrepr = report.longrepr
    addsection = getattr(longrepr, "addsection", None)  # a traceback's: printed with it, whatever --show-capture
    if callable(addsection):  # says, and in JUnit XML's failure text
        addsection(SECTION, text)
    elif isinstance(longrepr, str):  # strict mode's text
        report.longrepr = f"{longrepr}\n{text}"
    else:  # printed as a captured output's section
        report.sections.append((SECTION, text))


def note_drawn(config: pytest.Config, stub: Stub | RemoteStub, sidecar: bool, drawn: int) -> None:
    """Count a test that drew dynamic answers, for the summary."""
    if drawn <= 0:
        return
    from plantstub.errors import PlantstubError

    try:
        seed, again = _again(config, stub, sidecar)
    except PlantstubError:
        return
    where = f"on the sidecar at {stub.url.partition('/__session/')[0]} " if sidecar else ""
    line = f"{where}from seed {seed}; {again} draws them again"
    tally = config.stash.setdefault(DRAWN_KEY, {})
    tally[line] = tally.get(line, 0) + 1


def worker_finished(config: pytest.Config) -> None:
    """An xdist worker hands its count to the controller."""
    if hasattr(config, "workeroutput"):
        config.workeroutput[WORKER_KEY] = config.stash.get(DRAWN_KEY, {})


def merge_worker(config: pytest.Config, node: WorkerNode) -> None:
    """The controller adds a worker's count to its own."""
    tally = config.stash.setdefault(DRAWN_KEY, {})
    for line, n in (getattr(node, "workeroutput", {}).get(WORKER_KEY) or {}).items():
        tally[line] = tally.get(line, 0) + n


def write_seeds(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """`plantstub: N tests drew dynamic answers from seed S ...` at the end of the run, -q or not."""
    if hasattr(config, "workeroutput"):
        return
    for line, n in sorted(config.stash.get(DRAWN_KEY, {}).items()):
        terminalreporter.write_line(f"plantstub: {plural(n, 'test')} drew dynamic answers {line} (each "
                                    "test's from the seed and its node id, alone or in any run)")
