"""The `plantstub` command: serve, check, schema, health, coverage, import-har, verify."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import gc
import signal
import sys
from collections.abc import Sequence
from typing import Any

from plantstub._gc import collector_paused
from plantstub._version import __version__
from plantstub.config import (
    BUNDLED_SPECS,
    DEFAULT_SCENARIOS,
    HEALTH_TIMEOUT,
    Settings,
    build_settings,
    env_name,
    shown_default,
)
from plantstub.errors import PlantstubError
from plantstub.server.runner import start
from plantstub.server.runtime import load
from plantstub.server.table import Sessions
from plantstub.server.tls import Throwaway, server_context
from plantstub.webhooks.outbox import GRACE

COVERAGE_DEADLINE = 30.0  # seconds `plantstub coverage` gives each stub to answer, the whole answer
# Never the token itself: this line goes to logs.
TOKEN_ON_COMMAND_LINE = ("plantstub: --admin-token is visible in the process list (ps) to other users of this "
                         f"machine; set {env_name('admin_token')} in the environment instead")


def _serve_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="run the stub", description="Run the stub until SIGTERM or Ctrl-C.")
    flags = [  # each help ends with the default config.py gives (shown_default) and the environment variable
        ("--spec", "FILE", f"OpenAPI 3.0/3.1 document, or a bundled one by name ({', '.join(BUNDLED_SPECS)})"),
        ("--spec-root", "DIR", "folder whose files the spec's $refs may read"),
        ("--spec-cache", "DIR", "folder of the cache of big specs (1 MiB or more) loaded and bundled, or 'off'"),
        ("--scenarios", "DIR", "folder of scenario files"),
        ("--scenario", "NAME", "scenario active at start"),
        ("--host", "HOST", "address to bind"),
        ("--port", "PORT", "port to listen on; 0 picks a free one"),
        ("--journal", "FILE", "append every call to FILE as one JSON line (-: standard output)"),
        ("--journal-size", "N", "calls kept in memory"),
        ("--journal-bytes", "BYTES", "memory the kept calls may take (headers included), within --max-bytes"),
        ("--journal-flush", "MODE", "batch: a call reaches the file within 0.1 s; call: before its answer is sent"),
        ("--admin-token", "TOKEN", "the admin API then needs 'Authorization: Bearer TOKEN' (health stays open)"),
        ("--max-body", "BYTES", "largest request body accepted"),
        ("--read-timeout", "SECONDS", "close a connection that has not sent a whole request within it, or idles that long"),
        ("--log-format", "FORMAT", "one line per request: none, text or json"),
        ("--session-idle", "SECONDS", "a session unused that long ends"),
        ("--max-sessions", "N", "sessions served at once, at most"),
        ("--proxy", "URL", "forward what no rule, scenario or store answers to the real service at URL, checking its answers"),
        ("--proxy-timeout", "SECONDS", "how long the real service (--proxy) may take to answer"),
        ("--proxy-ca", "FILE", "a CA certificate (PEM) trusted besides the system's when forwarding to https://"),
        ("--record", "DIR", "with --proxy: write the real service's exchanges to a scenario file in DIR at stop (and on "
                            "POST /__plantstub/record/save)"),
        ("--record-secrets", "MODE", "redact: secrets in recorded files and HAR exports become REDACTED; keep: written "
                                     "as they came"),
        ("--record-ignore-query", "NAMES", "query parameters recorded rules do not match on (a timestamp, a nonce), "
                                           "separated by commas"),
        ("--tls-cert", "FILE", "serve HTTPS with this certificate (PEM, chain included); needs --tls-key"),
        ("--tls-key", "FILE", "the private key (PEM) of --tls-cert"),
        ("--max-bytes", "BYTES", "memory what clients send may take (calls, records, rules, deliveries), all sessions together"),
        ("--seed", "N", "seed of dynamic answers (--dynamic, 'Prefer: dynamic=true'): the same seed and calls give the same answers"),
    ]
    for flag, metavar, text in flags:
        dest = flag[2:].replace("-", "_")
        p.add_argument(flag, metavar=metavar, dest=dest, help=_help(text, dest))
    p.add_argument("--watch", action="store_const", const=True, default=None,
                   help=_help("reload scenarios when their files change", "watch"))
    p.add_argument("--webhook", metavar="[NAME=]URL", action="append", default=None,
                   help=_help("send webhook NAME (a key of the spec's webhooks; without NAME=, every webhook) to URL; "
                              "repeatable", "webhook", ": values separated by spaces"))
    p.add_argument("--cors", action="store_const", const=True, default=None,
                   help=_help("answer CORS preflights and let web pages of any origin read the answers", "cors"))
    p.add_argument("--stateful", action="store_const", const=True, default=None,
                   help=_help("remember what is created, listed, read, updated and deleted", "stateful"))
    p.add_argument("--dynamic", action="store_const", const=True, default=None,
                   help=_help("default answers made anew for each call, with random values that keep the schema",
                              "dynamic"))
    p.add_argument("--tls", action="store_const", const=True, default=None,
                   help=_help("serve HTTPS with a throwaway CA's certificate (needs trustme); stderr names the CA file "
                              "clients trust", "tls"))


def _help(text: str, field: str, env_note: str = "") -> str:
    """An option's help: what it does, its default (from config.py) and the variable that also sets it."""
    return f"{text} (default: {shown_default(field)}) [env {env_name(field)}{env_note}]"


def _health_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "health", help="exit 0 if a running stub answers its health route (for HEALTHCHECK)",
        description="Ask a running stub for GET /__plantstub/health; exit 0 if it answers ok, else 1.",
    )
    p.add_argument("--url", help=f"base URL of the stub; https:// when {env_name('tls_cert')} or {env_name('tls')} is "
                                 f"set, its certificate not verified on 127.0.0.1 (default: {_health_url()})")
    p.add_argument("--timeout", metavar="SECONDS", type=float, default=HEALTH_TIMEOUT, help=f"seconds to wait (default: {HEALTH_TIMEOUT:g})")


def _health_url() -> str:
    return f"http://127.0.0.1:${env_name('port')}, port {Settings().port} when unset"


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

    context = None
    url = args.url
    if url is None:
        tls = os.environ.get(env_name("tls_cert")) or os.environ.get(env_name("tls"), "") not in ("", "0", "false", "no",
                                                                                               "off")
        url = f"{'https' if tls else 'http'}://127.0.0.1:{os.environ.get(env_name('port')) or Settings().port}"
        if tls:  # the stub's own certificate names the service, not 127.0.0.1: this probe of our own process trusts it
            import ssl

            context = ssl._create_unverified_context()
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/__plantstub/health", timeout=args.timeout,
                                    context=context) as response:
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
    if isinstance(answer, dict) and status is None and isinstance(answer.get("message"), str):  # an Error record
        print(f"plantstub: {url} is not healthy: it answered {answer.get('error')}: {answer['message']}",
              file=sys.stderr)
        return 1
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
    p.add_argument("--spec", metavar="FILE", help=_help("OpenAPI 3.0/3.1 document", "spec"))
    p.add_argument("--spec-root", metavar="DIR", help=_help("folder whose files the spec's $refs may read", "spec_root"))
    p.add_argument("paths", nargs="+", metavar="PATH", help="a scenario file, or a folder of them (*.yaml, *.yml)")


def _check(args: argparse.Namespace) -> int:
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
        print(f"plantstub: {_count(len(errors), 'error')} in {_count(files, 'file')}", file=sys.stderr)
        return 1
    print(f"plantstub: {_count(scenarios, 'scenario')} OK")
    return 0


def _import_har_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import-har", help="write a scenario from a HAR file, by the rules of --record",
        description="Write a scenario from a HAR file (saved from a browser's devtools, or GET "
                    "/__plantstub/calls?format=har): a rule per request, repeats as replies, secrets redacted; "
                    "entries for other hosts, other paths, non-JSON bodies or answers that break the contract are "
                    "left out and listed in the file's leading comment.",
    )
    p.add_argument("file", metavar="FILE", help="the HAR file")
    p.add_argument("--out", metavar="FILE.yaml", required=True, help="the scenario file to write")
    p.add_argument("--spec", metavar="FILE", help=_help("OpenAPI 3.0/3.1 document", "spec"))
    p.add_argument("--spec-root", metavar="DIR", help=_help("folder whose files the spec's $refs may read", "spec_root"))
    p.add_argument("--base", metavar="PATH", default="",
                   help="a path prefix the service is served under (/v1), taken off each URL (default: none)")
    p.add_argument("--record-secrets", metavar="MODE",
                   help=_help("redact: secrets become REDACTED; keep: written as they came", "record_secrets"))
    p.add_argument("--record-ignore-query", metavar="NAMES",
                   help=_help("query parameters the rules do not match on (a timestamp, a nonce), separated by commas",
                              "record_ignore_query"))


def _import_har(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from plantstub.proxy.har import HarError, read_har
    from plantstub.proxy.recorded_file import build

    settings = build_settings({"spec": args.spec, "spec_root": args.spec_root, "record_secrets": args.record_secrets,
                               "record_ignore_query": args.record_ignore_query})
    redact = settings.record_secrets != "keep"
    runtime = load(settings)
    try:
        data = json.loads(Path(args.file).read_bytes())
        read = read_har(data, runtime.router, runtime.served, args.base, redact)
    except OSError as exc:
        print(f"plantstub: {args.file}: cannot read ({exc.strerror or exc})", file=sys.stderr)
        return 1
    except RecursionError:  # JSON nested deeper than Python's stack
        print(f"plantstub: {args.file}: not a HAR log: nested too deep to read", file=sys.stderr)
        return 1
    except (ValueError, HarError) as exc:  # JSON that does not parse is a ValueError too
        print(f"plantstub: {args.file}: {exc}", file=sys.stderr)
        return 1
    document = build(read.exchanges, runtime.contract, redact, settings.record_ignore_query)
    document.left_out[:0] = read.left_out
    if not document.rules:
        advice = f" {read.advice[0].upper()}{read.advice[1:]}." if read.advice else ""
        print(f"plantstub: {args.file}: no entry could become a rule; nothing written.{advice} Left out:"
              + "".join(f"\n  {line}" for line in document.left_out), file=sys.stderr)
        return 1
    try:
        Path(args.out).write_text(document.text(Path(args.file).name), encoding="utf-8")
    except OSError as exc:
        print(f"plantstub: {args.out}: cannot write ({exc.strerror or exc})", file=sys.stderr)
        return 1
    left = len(document.left_out)
    entries = f"{document.recorded} entr{'y' if document.recorded == 1 else 'ies'}"
    print(f"plantstub: wrote {args.out}: {_count(len(document.rules), 'rule')} answering {entries}"
          + (f"; {left} left out (listed in its leading comment)" if left else ""))
    return 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _deliveries(n: int) -> str:
    return f"{n} webhook delivery was" if n == 1 else f"{n} webhook deliveries were"


def _coverage_parser(sub: argparse._SubParsersAction) -> None:
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


def _coverage(args: argparse.Namespace) -> int:
    import json
    import os

    from plantstub.client.remote import AdminClient, message_of
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
        print(f"plantstub: contract coverage of {_count(len(args.urls), 'stub')}, summed")
        print("\n".join(coverage_rows(tally_of(report))))
        print(f"plantstub: {report['covered']} of {report['total']} declared responses exercised "
              f"({report['percent']:.1f}%)")
    if args.fail_under is not None and report["percent"] < args.fail_under:
        print(f"plantstub: FAIL: contract coverage {report['percent']:.1f}% is under --fail-under="
              f"{args.fail_under:g}", file=sys.stderr)
        return 1
    return 0


def _schema_parser(sub: argparse._SubParsersAction) -> None:
    sub.add_parser(
        "schema", help="print the JSON Schema of scenario files",
        description="Print the JSON Schema of scenario files (for editors: yaml-language-server, IDEs).",
    )


def _verify_parser(sub: argparse._SubParsersAction) -> None:
    from plantstub.verify.options import COMPARE, verify_default

    p = sub.add_parser(
        "verify", help="send each scenario rule to the real service and check its answer against the rule and the spec",
        description="Turn each scenario rule into a request, send it to the real service at --against URL, and judge the "
                    "answer against the contract and against the rule's reply. One line per rule (file:line), a "
                    "summary; exit 1 when a rule differs or the service broke the contract.",
    )

    def helped(text: str, field: str, env: bool = True) -> str:
        return f"{text} (default: {verify_default(field)})" + (f" [env {env_name(field)}]" if env else "")

    p.add_argument("paths", nargs="*", metavar="PATH",
                   help=f"scenario files or folders (default: ${env_name('scenarios')}, else {DEFAULT_SCENARIOS}/)")
    p.add_argument("--against", metavar="URL", help=helped("the real service's base URL; nothing is sent anywhere else",
                                                           "against"))
    p.add_argument("--spec", metavar="FILE", help=helped("OpenAPI 3.0/3.1 document, or a bundled one by name", "spec"))
    p.add_argument("--spec-root", metavar="DIR", help=helped("folder whose files the spec's $refs may read", "spec_root"))
    p.add_argument("--header", metavar="'NAME: VALUE'", action="append", default=None,
                   help=helped("a header sent with every request (credentials), never shown; repeatable", "header")
                   + ": one per line")
    p.add_argument("--scenario", metavar="NAME", help=helped("verify this scenario only (a built-in one too)", "scenario"))
    p.add_argument("--compare", metavar="MODE", help=helped(f"how an answer is held to a rule's reply: {', '.join(COMPARE)}",
                                                            "compare"))
    p.add_argument("--allow-writes", action="store_const", const=True, default=None,
                   help=helped("send POST, PUT, PATCH and DELETE too (they change the service's state)", "allow_writes"))
    p.add_argument("--request-timeout", metavar="SECONDS",
                   help=helped("time each request has, its answer read whole", "request_timeout"))
    p.add_argument("--junit", metavar="FILE", help=helped("write JUnit XML: a test case per rule", "junit", env=False))
    p.add_argument("--json", action="store_true", default=None,
                   help=helped("print the results as JSON instead of lines", "json", env=False))
    p.add_argument("--record", metavar="DIR", help=helped("write the service's answers as a recording in DIR, by the "
                                                          "rules of serve --record", "record", env=False))


def _verify(args: argparse.Namespace) -> int:
    from plantstub.verify.options import verify_settings
    from plantstub.verify.run import verify
    from plantstub.verify.secrets import credential

    options = {k: v for k, v in vars(args).items() if k != "command"}
    settings = verify_settings(options)
    if args.header and any(credential(text.partition(":")[0].strip()) for text in args.header):
        print(HEADER_ON_COMMAND_LINE, file=sys.stderr, flush=True)
    try:
        return verify(settings)
    except KeyboardInterrupt:  # not the 0 that serve's Ctrl-C gives: a job stopped half-way has verified nothing
        print("plantstub: verify interrupted; exit status 130", file=sys.stderr)
        return 130


HEADER_ON_COMMAND_LINE = (f"plantstub: a --header with credentials is visible in the process list (ps) to other users "
                          f"of this machine; set {env_name('header')} in the environment instead")


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
    _coverage_parser(sub)
    _import_har_parser(sub)
    _verify_parser(sub)
    return parser


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
    if not settings.tls:
        return await _serve_with(settings)
    throwaway = Throwaway(settings.host)
    try:
        print(f"plantstub: HTTPS with a throwaway certificate; clients trust its CA, {throwaway.ca_file} (removed at "
              "stop)", file=sys.stderr, flush=True)
        return await _serve_with(dataclasses.replace(settings, tls_cert=throwaway.cert_file,
                                                     tls_key=throwaway.key_file))
    finally:
        throwaway.close()


async def _serve_with(settings: Settings) -> int:
    try:  # a big spec takes seconds to load: the line says the silence is not a hang
        size = settings.spec.stat().st_size if settings.spec is not None else 0
    except OSError:
        size = 0
    if size >= 2**20:
        print(f"plantstub: loading {settings.spec} ({size / 2**20:.1f} MiB)", file=sys.stderr, flush=True)
    # The collector stays off until what is loaded is frozen: a collection of a big spec's objects in between
    # (the scenario checks, the built-ins) took seconds, and what it walked all lives on.
    context = server_context(settings)  # a certificate that does not load stops the start, before the spec loads
    with collector_paused():
        sessions = Sessions(load(settings))
        gc.freeze()  # what is loaded lives as long as the process: no later collection walks a big spec again
    seed = sessions.runtime.seed
    said = f"plantstub: dynamic answers, seed {seed} (--seed {seed} gives the same answers to the same calls)"
    if settings.dynamic:  # before the listening line: a failing run's log says how to repeat it
        print(said, file=sys.stderr, flush=True)
    elif settings.seed is None and sessions.runtime.dynamic is not None:  # `Prefer: dynamic=true`: said when first met
        sessions.runtime.dynamic.first = functools.partial(print, said, file=sys.stderr, flush=True)
    try:
        running = await start(sessions, settings.host, settings.port, context)
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
    status = 0
    if running.unsent:
        print(f"plantstub: {_deliveries(running.unsent)} not sent (still pending when the {GRACE:g} s "
              "grace at stop or at their session's end ran out); exit status 1", file=sys.stderr)
        status = 1
    if sessions.unsaved:
        print(f"plantstub: {_count(sessions.unsaved, 'recorded exchange')} could not be saved to {settings.record} "
              "(--record); exit status 1", file=sys.stderr)
        status = 1
    lost = sessions.default.figures()["journal"]["file_lost"]
    if lost:
        print(f"plantstub: {_count(lost, 'call')} could not be written to the journal file "
              f"{settings.journal}; exit status 1", file=sys.stderr)
        status = 1
    return status


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if args.command == "health":
        return _health(args)
    if args.command == "coverage":
        return _coverage(args)
    if args.command == "schema":
        from plantstub.scenarios.load import schema_text

        sys.stdout.write(schema_text())
        return 0
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "import-har":
            return _import_har(args)
        if args.command == "verify":
            return _verify(args)
        if args.command == "serve":
            # Until the server's own handlers replace it (once the spec is loaded), SIGTERM stops start-up
            # at once; as PID 1 in a container, a process without a handler would ignore it.
            signal.signal(signal.SIGTERM, _stop_starting)
            options = {k: v for k, v in vars(args).items() if k != "command"}
            settings = build_settings(options)
            if args.admin_token is not None:
                print(TOKEN_ON_COMMAND_LINE, file=sys.stderr, flush=True)
            return asyncio.run(_serve(_with_default_folder(settings)))
    except PlantstubError as exc:
        print(f"plantstub: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    except _StoppedStarting:
        print("plantstub: stopped by SIGTERM before listening; exit status 143", file=sys.stderr)
        return 128 + signal.SIGTERM
    return 2
