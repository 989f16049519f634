"""The report's HTML: one file with its style inline, no script, no link and nothing loaded from anywhere; every
text the calls carried is escaped and shown as text."""

from __future__ import annotations

from datetime import datetime, timezone
from html import escape
from typing import TYPE_CHECKING, TypedDict

from plantstub._version import __version__
from plantstub._words import plural
from plantstub.recording.coverage import Tally, figures

if TYPE_CHECKING:
    from plantstub.recording.answered import AnsweredBy
    from plantstub.recording.verdict import Verdict


class CallEntry(TypedDict):
    """One call as the report keeps it (plugin/report.py): plain data, its secrets redacted, its texts cut."""

    seq: int
    time: str
    method: str
    path: str
    query: str
    outcome: str
    verdict: Verdict
    problems: dict[Verdict, list[str]]
    answered_by: AnsweredBy | None
    who: str
    scenario: str | None
    rule: str | None
    headers: str
    body: str
    answer_headers: str
    answer_body: str


class CallsKept(TypedDict, total=False):
    """A test's calls as its fixture's teardown keeps them: the first MAX_CALLS, how many more, the secrets taken out
    (which its failure text must not show either). `calls` None: the test used no stub."""

    calls: list[CallEntry] | None
    more: int
    hidden: list[str]


class Outcome(TypedDict):
    """How a test ended: passed, failed, error, skipped, xfailed or xpassed; its time; its failure's text."""

    outcome: str
    duration: float
    failure: str


class Reported(Outcome, CallsKept, total=False):
    """A test as the report shows it: its node id, how it ended, its calls."""

    nodeid: str


class Totals(TypedDict):
    """The run's figures at the report's top."""

    tests: int
    outcomes: dict[str, int]
    calls: int
    invalid: int
    stub: int
    upstream: int
    with_problems: int
    coverage: str

STYLE = """
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #1d1d1f; }
h1 { font-size: 18px; } h2 { font-size: 15px; margin-top: 20px; }
table { border-collapse: collapse; } th, td { text-align: left; padding: 2px 8px; border-bottom: 1px solid #eee; }
details.test { border: 1px solid #ddd; border-radius: 4px; margin: 6px 0; padding: 4px 8px; }
details.test > summary { cursor: pointer; font-weight: 600; }
.o-failed, .o-error { color: #b00020; } .o-passed, .o-xpassed { color: #1b6e2a; } .o-skipped, .o-xfailed { color: #777; }
.invalid, .upstream { color: #b00020; font-weight: 600; } .stub { color: #a05a00; font-weight: 600; }
pre { background: #f4f4f4; padding: 6px; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 30em; overflow: auto; }
td.hit { background: #bfe5c4; } td.miss { background: #f6c6c6; } td.none { background: #f0f0f0; }
td.extra { background: #ffe3a8; } .totals td { padding-right: 16px; } li.problem { color: #b00020; }
"""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def coverage_grid(tally: Tally) -> str:
    """Operations by declared statuses: reached (green, with the count), never reached (red), not declared (grey)."""
    if not tally:
        return "<p>No test used the plantstub fixture: no coverage.</p>"
    statuses = sorted({status for counts in tally.values() for status in counts["declared"]})
    rows = ["<table class='coverage'><tr><th>operation</th>", *(f"<th>{_e(s)}</th>" for s in statuses),
            "<th>not declared</th></tr>"]
    for operation, counts in tally.items():
        rows.append(f"<tr><td>{_e(operation)}</td>")
        for status in statuses:
            if status not in counts["declared"]:
                rows.append("<td class='none'></td>")
                continue
            n = counts["declared"][status]
            reached = f"reached {n:,} times" if n else "never reached"
            rows.append(f"<td class='{'hit' if n else 'miss'}' title='{_e(operation)} {_e(status)}: {reached}'>{n}</td>")
        extra = " ".join(f"{status}×{n}" for status, n in counts["undeclared"].items())
        rows.append(f"<td class='{'extra' if extra else ''}'>{_e(extra)}</td></tr>")
    total = figures(tally)
    rows.append(f"</table><p>{total.covered} of {total.total} declared responses reached "
                f"({total.percent:.1f}%)</p>")
    return "".join(rows)


# A call's verdict (recording/verdict.py) as the report says it
VERDICT_TEXT = {"invalid": "breaks the contract", "stub": "the stub's answer broke it",
                "upstream": "the real service broke it"}
# Before a problem's text: whose it is, when not the request's
BLAME_TEXT = {"invalid": "", "stub": "", "upstream": "the real service: "}


def call_problems(calls: list[CallEntry] | None) -> int:
    """The contract problems among calls (the consumer's, the stub's and the real service's), as their entries hold
    them (`problems`, by whom)."""
    return sum(len(texts) for c in calls or () for texts in c["problems"].values())


def _call(call: CallEntry) -> str:
    shown = VERDICT_TEXT.get(call["verdict"])
    verdict = "ok" if shown is None else f"<span class='{_e(call['verdict'])}'>{shown}</span>"
    target = call["path"] + (f"?{call['query']}" if call["query"] else "")
    head = (f"<tr><td>#{call['seq']}</td><td>{_e(call['time'][11:23])}</td><td>{_e(call['method'])}</td>"
            f"<td>{_e(target)}</td><td>{_e(call['outcome'])}</td><td>{verdict}</td><td>{_e(call['who'])}</td></tr>")
    listed = "".join(f"<li class='problem' data-by='{_e(by)}'>{_e(BLAME_TEXT.get(by, ''))}{_e(p)}</li>"
                     for by, texts in call["problems"].items() for p in texts)
    inner = (f"<tr><td></td><td colspan='6'>{f'<ul>{listed}</ul>' if listed else ''}<details><summary>request and "
             f"answer</summary><pre>{_e(call['method'])} {_e(target)}\n{_e(call['headers'])}</pre>"
             f"<pre>{_e(call['body'] or '(no body)')}</pre><pre>{_e(call['outcome'])}\n{_e(call['answer_headers'])}"
             f"</pre><pre>{_e(call['answer_body'] or '(no body)')}</pre></details></td></tr>")
    return head + inner


def _test(test: Reported) -> str:
    calls = test.get("calls")
    problems = call_problems(calls)
    failed = test["outcome"] in ("failed", "error")
    said = [f"<span class='o-{_e(test['outcome'])}'>{_e(test['outcome'])}</span>", _e(test["nodeid"])]
    if calls is None:
        said.append("(no stub)")
    else:
        said.append(plural(len(calls) + test.get("more", 0), "call"))
        if problems:
            said.append(f"<span class='invalid'>{plural(problems, 'contract problem')}</span>")
    parts = [f"<details class='test'{' open' if failed else ''} data-outcome='{_e(test['outcome'])}' "
             f"data-problems='{problems}'><summary>{' · '.join(said)} ({test['duration']:.2f} s)</summary>"]
    if test.get("failure"):
        parts.append(f"<pre class='failure'>{_e(test['failure'])}</pre>")
    if calls:
        parts.append("<table class='calls'><tr><th>#</th><th>time</th><th>method</th><th>path</th><th>status</th>"
                     "<th>verdict</th><th>answered by</th></tr>")
        parts.extend(_call(call) for call in calls)
        parts.append("</table>")
        if test.get("more"):
            parts.append(f"<p>… and {plural(test['more'], 'more call')}, not shown.</p>")
    elif calls == []:
        parts.append("<p>No call.</p>")
    parts.append("</details>")
    return "".join(parts)


def totals(tests: list[Reported], tally: Tally) -> Totals:
    """The run's figures: tests by outcome, calls, those breaking the contract (by whom: the request, the stub's
    answer, the real service's answer), coverage."""
    outcomes: dict[str, int] = {}
    for test in tests:
        outcomes[test["outcome"]] = outcomes.get(test["outcome"], 0) + 1
    calls = [c for t in tests for c in t.get("calls") or ()]
    covered = figures(tally)
    return {"tests": len(tests), "outcomes": outcomes,
            "calls": sum(len(t.get("calls") or ()) + t.get("more", 0) for t in tests),
            "invalid": sum("invalid" in c["problems"] for c in calls), "stub": sum("stub" in c["problems"] for c in calls),
            "upstream": sum("upstream" in c["problems"] for c in calls),
            "with_problems": sum(1 for t in tests if call_problems(t.get("calls"))),
            "coverage": f"{covered.covered} of {covered.total} ({covered.percent:.1f}%)" if tally else "none"}


def render(tests: list[Reported], tally: Tally) -> str:
    """The whole report: totals, coverage grid, then each test (in the order given)."""
    figures_ = totals(tests, tally)
    outcomes = ", ".join(f"{n} {name}" for name, n in sorted(figures_["outcomes"].items())) or "none"
    rows = [("tests", f"{figures_['tests']} ({outcomes})"), ("tests with contract problems", figures_["with_problems"]),
            ("calls", figures_["calls"]), ("calls that break the contract", figures_["invalid"]),
            ("calls the stub answered off contract", figures_["stub"]),
            ("calls the real service answered off contract", figures_["upstream"]),
            ("contract coverage", figures_["coverage"])]
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return "".join([
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>plantstub report</title><style>{STYLE}</style></head><body>",
        f"<h1>plantstub report</h1><p>plantstub {_e(__version__)}, written {when}</p>",
        "<h2>Totals</h2><table class='totals'>",
        *(f"<tr><td>{_e(name)}</td><td id='total-{i}'>{_e(value)}</td></tr>" for i, (name, value) in enumerate(rows)),
        "</table><h2>Coverage</h2>", coverage_grid(tally),
        "<h2>Tests</h2><p>Tests with contract problems first, then failures; failing tests open.</p>",
        *(_test(test) for test in tests),
        "</body></html>\n",
    ])
