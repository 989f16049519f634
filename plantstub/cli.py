"""The `plantstub` command: serve, check, schema, health."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence

from . import __version__
from .app import create_app
from .config import Settings, build_settings, env_name
from .errors import PlantstubError
from .server import start


def _serve_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="run the stub", description="Run the stub until SIGTERM or Ctrl-C.")
    flags = [
        ("--spec", "FILE", "OpenAPI 3.0/3.1 document (default: the bundled Plant Store)"),
        ("--scenarios", "DIR", "folder of scenario files (default: scenarios/ when it exists)"),
        ("--scenario", "NAME", "scenario active at start (default: none)"),
        ("--host", "HOST", "address to bind (default: 127.0.0.1)"),
        ("--port", "PORT", "port to listen on; 0 picks a free one (default: 4010)"),
        ("--journal", "FILE", "append every call to FILE as one JSON line"),
        ("--journal-size", "N", "calls kept in memory (default: 10000)"),
        ("--max-body", "BYTES", "largest request body accepted (default: 1048576)"),
        ("--log-format", "FORMAT", "one line per request: none, text or json (default: none)"),
    ]
    for flag, metavar, text in flags:
        dest = flag[2:].replace("-", "_")
        p.add_argument(flag, metavar=metavar, dest=dest, help=f"{text} [env {env_name(dest)}]")
    p.add_argument("--watch", action="store_const", const=True, default=None,
                   help=f"reload scenarios when their files change [env {env_name('watch')}]")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="plantstub", description="A contract-checked stub of the Plant Store API."
    )
    parser.add_argument("--version", action="version", version=f"plantstub {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _serve_parser(sub)
    return parser


async def _serve(settings: Settings) -> int:
    app = create_app(settings)
    try:
        runner, url = await start(app, settings.host, settings.port)
    except OSError as exc:
        print(f"plantstub: cannot listen on {settings.host}:{settings.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"plantstub listening on {url}", flush=True)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    options = {k: v for k, v in vars(args).items() if k != "command"}
    try:
        if args.command == "serve":
            return asyncio.run(_serve(build_settings(options)))
    except PlantstubError as exc:
        print(f"plantstub: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 2
