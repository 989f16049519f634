"""Contract coverage over the run: each worker's tally merged, the summary section, --plantstub-coverage-fail-under."""

from __future__ import annotations

from typing import Protocol

import pytest

from plantstub.recording.coverage import Tally, coverage_rows, figures

COVERAGE_KEY = pytest.StashKey[Tally]()


class WorkerNode(Protocol):
    """pytest-xdist's node of one worker, as the controller's hooks get it: what plantstub reads of it (xdist ships
    no types; its `workeroutput`, once the worker is done, is read with getattr())."""

    config: pytest.Config
    workerinput: dict[str, object]


def session_finished(session: pytest.Session) -> None:
    """A worker hands its tally to the controller; the controller fails the run under the threshold."""
    config = session.config
    if hasattr(config, "workeroutput"):
        config.workeroutput["plantstub_coverage"] = config.stash[COVERAGE_KEY]
        return
    threshold = config.getoption("plantstub_coverage_fail_under")
    if threshold is None or session.exitstatus != 0:
        return
    tally = config.stash[COVERAGE_KEY]
    # Asked for, but nothing was measured (no test used the fixture): that is a failure, not 100 %.
    if not tally or figures(tally).percent < threshold:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def write_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    wanted = config.getoption("plantstub_coverage") or config.getoption("plantstub_coverage_fail_under") is not None
    tally = config.stash.get(COVERAGE_KEY, {})
    if not wanted or hasattr(config, "workeroutput"):
        return
    terminalreporter.section("plantstub contract coverage")
    if not tally:
        terminalreporter.write_line("no test used the plantstub fixture")
        threshold = config.getoption("plantstub_coverage_fail_under")
        if threshold is not None:
            terminalreporter.write_line(
                f"plantstub: FAIL: --plantstub-coverage-fail-under={threshold:g} was given, but no test used the "
                "plantstub fixture, so there is no coverage to measure",
                red=True,
            )
        return
    for row in coverage_rows(tally):
        terminalreporter.write_line(row)
    total = figures(tally)
    percent = total.percent
    terminalreporter.write_line(
        f"plantstub: {total.covered} of {total.total} declared responses exercised ({percent:.1f}%)"
    )
    threshold = config.getoption("plantstub_coverage_fail_under")
    if threshold is not None and percent < threshold:
        terminalreporter.write_line(
            f"plantstub: FAIL: contract coverage {percent:.1f}% is under --plantstub-coverage-fail-under={threshold:g}",
            red=True,
        )
