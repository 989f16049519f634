"""`plantstub serve`: the stub until SIGTERM or Ctrl-C; what went unsent or unsaved at stop sets the exit status."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import gc
import signal
import sys

from plantstub._gc import collector_paused
from plantstub._words import plural
from plantstub.cli.help import option_help
from plantstub.config import DEFAULT_SCENARIOS, SPEC_HELP, Settings, build_settings, env_name
from plantstub.server.runner import start
from plantstub.server.runtime import load
from plantstub.server.table import Sessions
from plantstub.server.tls import Throwaway, server_context
from plantstub.webhooks.outbox import GRACE

# Never the token itself: this line goes to logs.
TOKEN_ON_COMMAND_LINE = ("plantstub: --admin-token is visible in the process list (ps) to other users of this "
                         f"machine; set {env_name('admin_token')} in the environment instead")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="run the stub", description="Run the stub until SIGTERM or Ctrl-C.")
    flags = [  # each help ends with the default config.py gives (shown_default) and the environment variable
        ("--spec", "FILE", SPEC_HELP),
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
        p.add_argument(flag, metavar=metavar, dest=dest, help=option_help(text, dest))
    p.add_argument("--watch", action="store_const", const=True, default=None,
                   help=option_help("reload scenarios when their files change", "watch"))
    p.add_argument("--webhook", metavar="[NAME=]URL", action="append", default=None,
                   help=option_help("send webhook NAME (a key of the spec's webhooks; without NAME=, every webhook) to URL; "
                              "repeatable", "webhook", ": values separated by spaces"))
    p.add_argument("--cors", action="store_const", const=True, default=None,
                   help=option_help("answer CORS preflights and let web pages of any origin read the answers", "cors"))
    p.add_argument("--stateful", action="store_const", const=True, default=None,
                   help=option_help("remember what is created, listed, read, updated and deleted", "stateful"))
    p.add_argument("--dynamic", action="store_const", const=True, default=None,
                   help=option_help("default answers made anew for each call, with random values that keep the schema",
                              "dynamic"))
    p.add_argument("--tls", action="store_const", const=True, default=None,
                   help=option_help("serve HTTPS with a throwaway CA's certificate (needs trustme); stderr names the CA file "
                              "clients trust", "tls"))


def run(args: argparse.Namespace) -> int:
    # Until the server's own handlers replace it (once the spec is loaded), SIGTERM stops start-up
    # at once; as PID 1 in a container, a process without a handler would ignore it.
    signal.signal(signal.SIGTERM, _stop_starting)
    options = {k: v for k, v in vars(args).items() if k != "command"}
    settings = build_settings(options)
    if args.admin_token is not None:
        print(TOKEN_ON_COMMAND_LINE, file=sys.stderr, flush=True)
    return asyncio.run(_serve(_with_default_folder(settings)))


def _with_default_folder(settings: Settings) -> Settings:
    """The command line alone reads ./scenarios when no folder is named (Stub and create_app never do)."""
    if settings.scenarios is None and DEFAULT_SCENARIOS.is_dir():
        return dataclasses.replace(settings, scenarios=DEFAULT_SCENARIOS)
    return settings


class StoppedStarting(BaseException):
    """SIGTERM came before the stub listened (a BaseException: no `except Exception` on the way swallows it)."""


def _stop_starting(signum: int, frame: object) -> None:
    raise StoppedStarting


async def _serve(settings: Settings) -> int:
    if not settings.tls:
        return await _serve_with(settings)
    throwaway = Throwaway(settings.host, "--tls (PLANTSTUB_TLS)")
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
        print(f"plantstub: {plural(running.unsent, 'webhook delivery', 'webhook deliveries')} {'was' if running.unsent == 1 else 'were'} not sent (still pending when the {GRACE:g} s "
              "grace at stop or at their session's end ran out); exit status 1", file=sys.stderr)
        status = 1
    if sessions.unsaved:
        print(f"plantstub: {plural(sessions.unsaved, 'recorded exchange')} could not be saved to {settings.record} "
              "(--record); exit status 1", file=sys.stderr)
        status = 1
    lost = sessions.default.figures()["journal"]["file_lost"]
    if lost:
        print(f"plantstub: {plural(lost, 'call')} could not be written to the journal file "
              f"{settings.journal}; exit status 1", file=sys.stderr)
        status = 1
    return status


