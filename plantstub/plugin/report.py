"""`--plantstub-report FILE.html`: each test's outcome and calls, gathered over the run (an xdist worker hands its
calls to the controller at its end, as it does its coverage tally) and written by the controller as one HTML file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from plantstub.plugin.report_html import CallEntry, CallsKept, Outcome, Reported, call_problems, render
from plantstub.plugin.summary import COVERAGE_KEY, WorkerNode
from plantstub.recording.answered import answered_text
from plantstub.recording.redacted import redact_call
from plantstub.redaction import Redactor

if TYPE_CHECKING:
    from plantstub.recording.call import Call, CallResponse

MAX_CALLS = 200  # a test's calls shown in full at most; the rest are counted
MAX_TEXT = 2000  # characters of a body or a failure shown at most
WORKER_KEY = "plantstub_report"
ORDER = {"failed": 1, "error": 1, "passed": 2, "xpassed": 2, "xfailed": 3, "skipped": 3}


def _text(value: object) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=repr)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"\n… ({len(text) - MAX_TEXT:,} more characters)"


def call_entry(call: Call) -> CallEntry:
    """What the report keeps of one call: plain data (an xdist worker sends it to the controller), its secrets
    redacted (plantstub/redaction.py): the report is a CI artifact."""
    return _entry(redact_call(call)[0])


def _entry(call: Call) -> CallEntry:
    """One call's entry. Its verdict and problems by whom are the call's own (recording/verdict.py), who answered is
    its `answered_by`."""
    response: CallResponse = call.response or {"status": None, "headers": {}, "body": None}  # pending: nothing sent
    problems = call.problems
    return {
        "seq": call.seq, "time": call.time, "method": call.method, "path": call.path,
        "query": "&".join(f"{k}={v}" for k, v in call.query.items()), "outcome": str(call.outcome),
        "verdict": call.verdict, "problems": problems, "answered_by": call.answered_by,
        "who": answered_text(call.answered_by), "scenario": call.scenario, "rule": call.rule,
        "headers": "\n".join(f"{k}: {v}" for k, v in call.headers.items()), "body": _text(call.body),
        "answer_headers": "\n".join(f"{k}: {v}" for k, v in (response.get("headers") or {}).items()),
        "answer_body": _text(response.get("body")),
    }


class Report:
    """The run's report, registered as a plugin only when asked for: it costs nothing otherwise."""

    def __init__(self, config: pytest.Config, path: Path) -> None:
        self.config = config
        self.path = path
        self.calls: dict[str, CallsKept] = {}  # nodeid -> {"calls": [...], "more": N, "hidden": [...]}
        self.tests: dict[str, Outcome] = {}  # nodeid -> outcome, duration, failure text
        self.failure: str | None = None  # why the file could not be written

    def add_calls(self, nodeid: str, calls: list[Call]) -> None:
        """A test's calls, at its fixture's teardown; and the secrets taken out of them, which its failure text (the
        test's source, an assertion's values) must not show either."""
        entries, hidden = [], set()
        for call in calls[:MAX_CALLS]:
            shown, redactor = redact_call(call)
            entries.append(_entry(shown))
            hidden |= redactor.found
        self.calls[nodeid] = {"calls": entries, "more": max(0, len(calls) - MAX_CALLS), "hidden": sorted(hidden)}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        test = self.tests.setdefault(report.nodeid, {"outcome": "passed", "duration": 0.0, "failure": ""})
        test["duration"] += report.duration
        if report.failed:
            test["outcome"] = "failed" if report.when == "call" else "error"
            test["failure"] = _text(report.longreprtext[-MAX_TEXT:])
        elif report.skipped and test["outcome"] == "passed":
            test["outcome"] = "xfailed" if hasattr(report, "wasxfail") else "skipped"
        elif report.when == "call" and hasattr(report, "wasxfail"):
            test["outcome"] = "xpassed"

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: WorkerNode, error: object) -> None:
        """pytest-xdist: a worker's calls, by test."""
        self.calls.update(getattr(node, "workeroutput", {}).get(WORKER_KEY) or {})

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workeroutput"):
            self.config.workeroutput[WORKER_KEY] = self.calls
            return
        tests: list[Reported] = [{"nodeid": nodeid, **test, **self.calls.get(nodeid, {"calls": None, "more": 0})}
                                 for nodeid, test in self.tests.items()]
        for test in tests:
            if test.get("hidden") and test["failure"]:
                redactor = Redactor()
                redactor.found.update(test["hidden"])
                test["failure"] = redactor.scrub(test["failure"])
        text = render(ordered(tests), self.config.stash.get(COVERAGE_KEY, {}))
        partial = self.path.with_name(self.path.name + ".part")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial.write_text(text, encoding="utf-8")
            os.replace(partial, self.path)  # whole or not at all: a CI artifact is never half a file
        except OSError as exc:  # asked for and not written: the run says so and fails
            self.failure = f"plantstub: FAIL: the report could not be written to {self.path}: {exc.strerror or exc}"
            if session.exitstatus == 0:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if hasattr(self.config, "workeroutput"):
            return
        if self.failure is not None:
            terminalreporter.write_line(self.failure, red=True)
        else:
            terminalreporter.write_line(f"plantstub: report written to {self.path}")


def ordered(tests: list[Reported]) -> list[Reported]:
    """Tests with contract problems first, then failures, then the rest; the run's order within each."""
    return sorted(tests, key=lambda t: (0 if call_problems(t.get("calls")) else ORDER.get(t["outcome"], 2)))


def start_report(config: pytest.Config) -> None:
    """Register the report when --plantstub-report (ini plantstub_report) names a file."""
    given = config.getoption("plantstub_report")
    if given:
        path = Path(given)
        path = path if path.is_absolute() else config.invocation_params.dir / path
    else:
        paths = config.getini("plantstub_report")
        if not paths:
            return
        path = Path(paths[0])
    config.pluginmanager.register(Report(config, path), "plantstub-report")  # pytest_plugin.REPORT_PLUGIN
