"""The `plantstub` command: serve, check, schema, health."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from plantstub._gc import collector_paused
from plantstub._version import __version__
from plantstub.config import Settings, build_settings, env_name
from plantstub.errors import PlantstubError
from plantstub.server.runner import start
from plantstub.server.runtime import load
from plantstub.server.table import Sessions


def _serve_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="run the stub", description="Run the stub until SIGTERM or Ctrl-C.")
    flags = [
        ("--spec", "FILE", "OpenAPI 3.0/3.1 document (default: the bundled Plant Store)"),
        ("--spec-root", "DIR", "folder whose files the spec's $refs may read (default: the spec's folder)"),
        ("--scenarios", "DIR", "folder of scenario files (default: scenarios/ when it exists)"),
        ("--scenario", "NAME", "scenario active at start (default: none)"),
        ("--host", "HOST", "address to bind (default: 127.0.0.1)"),
        ("--port", "PORT", "port to listen on; 0 picks a free one (default: 4010)"),
        ("--journal", "FILE", "append every call to FILE as one JSON line"),
        ("--journal-size", "N", "calls kept in memory (default: 10000)"),
        ("--journal-bytes", "BYTES", "memory the kept calls may take, about (default: 67108864, 64 MiB)"),
        ("--journal-flush", "MODE", "batch: a call reaches the file within 0.1 s; call: before its answer "
                                    "is sent (default: batch)"),
        ("--admin-token", "TOKEN", "the admin API then needs 'Authorization: Bearer TOKEN' (health stays open)"),
        ("--max-body", "BYTES", "largest request body accepted (default: 1048576)"),
        ("--read-timeout", "SECONDS", "close a connection that has not sent a whole request within it, "
                                      "or idles that long (default: 30)"),
        ("--log-format", "FORMAT", "one line per request: none, text or json (default: none)"),
        ("--session-idle", "SECONDS", "a session unused that long ends (default: 600)"),
        ("--max-sessions", "N", "sessions served at once, at most (default: 1000)"),
    ]
    for flag, metavar, text in flags:
        dest = flag[2:].replace("-", "_")
        p.add_argument(flag, metavar=metavar, dest=dest, help=f"{text} [env {env_name(dest)}]")
    p.add_argument("--watch", action="store_const", const=True, default=None,
                   help=f"reload scenarios when their files change [env {env_name('watch')}]")
    p.add_argument("--webhook", metavar="[NAME=]URL", action="append", default=None,
                   help="send webhook NAME (a key of the spec's webhooks; without NAME=, every webhook) to URL; "
                        f"repeatable [env {env_name('webhook')}: values separated by spaces]")
    p.add_argument("--cors", action="store_const", const=True, default=None,
                   help=f"answer CORS preflights and let web pages of any origin read the answers [env {env_name('cors')}]")
    p.add_argument("--stateful", action="store_const", const=True, default=None,
                   help=f"remember what is created, listed, read, updated and deleted [env {env_name('stateful')}]")


def _health_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "health", help="exit 0 if a running stub answers its health route (for HEALTHCHECK)",
        description="Ask a running stub for GET /__plantstub/health; exit 0 if it answers ok, else 1.",
    )
    p.add_argument("--url", help="base URL of the stub (default: http://127.0.0.1:$PLANTSTUB_PORT, port 4010)")
    p.add_argument("--timeout", type=float, default=2.0, help="seconds to wait (default: 2)")


def _problem(problem: object) -> str:
    """One health problem as a line: `where: what` (a `{"at", "message"}` record), else as it came."""
    if isinstance(problem, dict) and "at" in problem and "message" in problem:
        return f"{problem['at']}: {problem['message']}"
    return str(problem)


def _health(args: argparse.Namespace) -> int:
    import json
    import os
    import urllib.error
    import urllib.request

    url = args.url or f"http://127.0.0.1:{os.environ.get(env_name('port')) or 4010}"
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/__plantstub/health", timeout=args.timeout) as response:
            answer = json.load(response)
    except urllib.error.HTTPError as exc:  # 503 degraded carries its problems
        try:
            answer = json.load(exc)
        except ValueError:
            answer = {"status": f"HTTP {exc.code}"}
    except Exception as exc:  # noqa: BLE001 - any failure means "not healthy"
        print(f"plantstub: {url} is not healthy: {exc}", file=sys.stderr)
        return 1
    status = answer.get("status") if isinstance(answer, dict) else None
    if status != "ok":
        problems = answer.get("problems") if isinstance(answer, dict) else None
        detail = "".join(f"\n  {_problem(p)}" for p in problems) if isinstance(problems, list) else ""
        print(f"plantstub: {url} answered status {status!r}{detail}", file=sys.stderr)
        return 1
    return 0


def _check_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check", help="check scenario files against the scenario schema and the spec",
        description="Check scenario files; print each problem as file:line: path: message; exit 1 on any.",
    )
    p.add_argument("--spec", metavar="FILE",
                   help=f"OpenAPI 3.0/3.1 document (default: the bundled Plant Store) [env {env_name('spec')}]")
    p.add_argument("--spec-root", metavar="DIR", help="folder whose files the spec's $refs may read (default: the"
                   f" spec's folder) [env {env_name('spec_root')}]")
    p.add_argument("paths", nargs="+", metavar="PATH", help="a scenario file, or a folder of them (*.yaml, *.yml)")


def _check(args: argparse.Namespace) -> int:
    import os

    from plantstub.contract.load import load_spec
    from plantstub.scenarios.load import check_paths

    spec = load_spec(args.spec or os.environ.get(env_name("spec")) or None,
                     root=args.spec_root or os.environ.get(env_name("spec_root")) or None)
    errors, scenarios = check_paths(args.paths, spec)
    for error in errors:
        print(error, file=sys.stderr)
    if errors:
        files = len({error.file for error in errors})
        print(f"plantstub: {_count(len(errors), 'error')} in {_count(files, 'file')}", file=sys.stderr)
        return 1
    print(f"plantstub: {_count(scenarios, 'scenario')} OK")
    return 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _schema_parser(sub: argparse._SubParsersAction) -> None:
    sub.add_parser(
        "schema", help="print the JSON Schema of scenario files",
        description="Print the JSON Schema of scenario files (for editors: yaml-language-server, IDEs).",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="plantstub", description="A contract-checked stub of the Plant Store API."
    )
    parser.add_argument("--version", action="version", version=f"plantstub {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _serve_parser(sub)
    _health_parser(sub)
    _check_parser(sub)
    _schema_parser(sub)
    return parser


DEFAULT_SCENARIOS = Path("scenarios")


def _with_default_folder(settings: Settings) -> Settings:
    """The command line alone reads ./scenarios when no folder is named (Stub and create_app never do)."""
    if settings.scenarios is None and DEFAULT_SCENARIOS.is_dir():
        return dataclasses.replace(settings, scenarios=DEFAULT_SCENARIOS)
    return settings


class _StoppedStarting(BaseException):
    """SIGTERM came before the stub listened (a BaseException: no `except Exception` on the way swallows it)."""


def _stop_starting(signum: int, frame: object) -> None:
    raise _StoppedStarting


async def _serve(settings: Settings) -> int:
    try:  # a big spec takes seconds to load: the line says the silence is not a hang
        size = settings.spec.stat().st_size if settings.spec is not None else 0
    except OSError:
        size = 0
    if size >= 2**20:
        print(f"plantstub: loading {settings.spec} ({size / 2**20:.1f} MiB)", file=sys.stderr, flush=True)
    # The collector stays off until what is loaded is frozen: a collection of a big spec's objects in between
    # (the scenario checks, the built-ins) took seconds, and what it walked all lives on.
    with collector_paused():
        sessions = Sessions(load(settings))
        gc.freeze()  # what is loaded lives as long as the process: no later collection walks a big spec again
    try:
        running = await start(sessions, settings.host, settings.port)
    except OSError as exc:
        sessions.default.close()
        print(f"plantstub: cannot listen on {settings.host}:{settings.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"plantstub listening on {running.url}", flush=True)
    try:
        await stop.wait()
    finally:
        await running.stop()
    lost = sessions.default.figures()["journal"]["file_lost"]
    if lost:
        print(f"plantstub: {_count(lost, 'call')} could not be written to the journal file "
              f"{settings.journal}; exit status 1", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if args.command == "health":
        return _health(args)
    if args.command == "schema":
        from plantstub.scenarios.load import schema_text

        sys.stdout.write(schema_text())
        return 0
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "serve":
            # Until the server's own handlers replace it (once the spec is loaded), SIGTERM stops start-up
            # at once; as PID 1 in a container, a process without a handler would ignore it.
            signal.signal(signal.SIGTERM, _stop_starting)
            options = {k: v for k, v in vars(args).items() if k != "command"}
            return asyncio.run(_serve(_with_default_folder(build_settings(options))))
    except PlantstubError as exc:
        print(f"plantstub: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    except _StoppedStarting:
        print("plantstub: stopped by SIGTERM before listening; exit status 143", file=sys.stderr)
        return 128 + signal.SIGTERM
    return 2
