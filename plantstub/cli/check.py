"""`plantstub check`: scenario files against the scenario schema and the spec, each problem as file:line."""

from __future__ import annotations

import argparse
import sys

from plantstub._words import plural
from plantstub.cli.help import option_help
from plantstub.config import SPEC_HELP, env_name


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check", help="check scenario files against the scenario schema and the spec",
        description="Check scenario files; print each problem as file:line: path: message; exit 1 on any.",
    )
    p.add_argument("--spec", metavar="FILE", help=option_help(SPEC_HELP, "spec"))
    p.add_argument("--spec-root", metavar="DIR", help=option_help("folder whose files the spec's $refs may read", "spec_root"))
    p.add_argument("paths", nargs="+", metavar="PATH", help="a scenario file, or a folder of them (*.yaml, *.yml)")


def run(args: argparse.Namespace) -> int:
    import os

    from plantstub.contract.load import load_spec
    from plantstub.scenarios.load import check_paths

    spec = load_spec(args.spec or os.environ.get(env_name("spec")) or None,
                     root=args.spec_root or os.environ.get(env_name("spec_root")) or None)
    errors, scenarios, notes = check_paths(args.paths, spec)
    for note in notes:
        print(f"plantstub: note: {note}")
    for error in errors:
        print(error, file=sys.stderr)
    if errors:
        files = len({error.file for error in errors})
        print(f"plantstub: {plural(len(errors), 'error')} in {plural(files, 'file')}", file=sys.stderr)
        return 1
    print(f"plantstub: {plural(scenarios, 'scenario')} OK")
    return 0
