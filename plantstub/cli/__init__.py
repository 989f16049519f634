"""The `plantstub` command: serve, check, schema, health, coverage, import-har, verify (a module each)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from plantstub._gc import collector_paused
from plantstub._version import __version__
from plantstub.errors import PlantstubError

with collector_paused():  # what the commands' imports build lives on: no collection walks it meanwhile
    from plantstub.cli import check, coverage, health, import_har, schema, serve, verify

COMMANDS = {"serve": serve, "health": health, "check": check, "schema": schema, "coverage": coverage,
            "import-har": import_har, "verify": verify}  # in the order --help lists them


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="plantstub", description="A contract-checked stub of the Plant Store API."
    )
    parser.add_argument("--version", action="version", version=f"plantstub {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS.values():
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return _run(args)
    except BrokenPipeError:  # `plantstub schema | head -1`: the reader left; no traceback (Python's docs' recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the flush at exit goes nowhere
        return 1


def _run(args: argparse.Namespace) -> int:
    command = COMMANDS[args.command]
    if command in (health, coverage, schema):  # each says its own failures
        return command.run(args)
    try:
        return command.run(args)
    except PlantstubError as exc:
        print(f"plantstub: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    except serve.StoppedStarting:
        print("plantstub: stopped by SIGTERM before listening; exit status 143", file=sys.stderr)
        return 128 + signal.SIGTERM
