"""`plantstub coverage`: the contract coverage of running stubs (replicas) summed into one report."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from plantstub._words import plural
from plantstub.config import env_name
from plantstub.errors import PlantstubError

COVERAGE_DEADLINE = 30.0  # seconds `plantstub coverage` gives each stub to answer, the whole answer


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "coverage", help="sum the contract coverage of running stubs (replicas) into one report",
        description="Ask each stub for its total coverage (the default session and every session, live or ended) "
                    f"and print the sum. The admin token, when the stubs need one, is read from "
                    f"{env_name('admin_token')}.",
    )
    p.add_argument("urls", nargs="+", metavar="URL", help="base URL of a stub (http://HOST:PORT)")
    p.add_argument("--json", action="store_true", help="print the summed report as JSON (default: off)")
    p.add_argument("--fail-under", metavar="PERCENT", type=_percent,
                   help="exit 1 when under PERCENT of the declared responses were exercised (default: none)")


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 100:  # NaN too
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage (expected a number 0-100)")
    return value


def run(args: argparse.Namespace) -> int:
    import json
    import os

    from plantstub.client.admin import AdminClient, message_of
    from plantstub.recording.coverage import coverage_rows, report_problem, sum_reports, tally_of

    token = os.environ.get(env_name("admin_token")) or None
    reports: list[dict[str, Any]] = []
    for url in args.urls:
        said: str | None = None
        try:
            client = AdminClient(url, token)
            status, report = client.send("GET", "coverage?total=true", deadline=COVERAGE_DEADLINE)
        except PlantstubError as exc:
            print(f"plantstub: coverage of {url}: {exc}", file=sys.stderr)
            return 1
        if status != 200:
            said = f"GET {client.url}/__plantstub/coverage?total=true answered {status}: {message_of(report)}"
            if status == 401:  # the one way this command takes the token: say it
                said += f" (plantstub coverage reads it from {env_name('admin_token')})"
        else:
            problem = report_problem(report)
            said = None if problem is None else f"not a plantstub coverage report: {problem}"
        if said is not None:
            print(f"plantstub: coverage of {url}: {said}", file=sys.stderr)
            return 1
        reports.append(report)
    report = sum_reports(reports)
    if args.json:
        print(json.dumps({**report, "stubs": list(args.urls)}, indent=2))
    else:
        print(f"plantstub: contract coverage of {plural(len(args.urls), 'stub')}, summed")
        print("\n".join(coverage_rows(tally_of(report))))
        print(f"plantstub: {report['covered']} of {report['total']} declared responses exercised "
              f"({report['percent']:.1f}%)")
    if args.fail_under is not None and report["percent"] < args.fail_under:
        print(f"plantstub: FAIL: contract coverage {report['percent']:.1f}% is under --fail-under="
              f"{args.fail_under:g}", file=sys.stderr)
        return 1
    return 0
