"""`plantstub import-har`: a scenario file written from a HAR file, by the rules of --record."""

from __future__ import annotations

import argparse
import sys

from plantstub._words import plural
from plantstub.cli.help import option_help
from plantstub.config import SPEC_HELP, build_settings
from plantstub.server.runtime import load


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import-har", help="write a scenario from a HAR file, by the rules of --record",
        description="Write a scenario from a HAR file (saved from a browser's devtools, or GET "
                    "/__plantstub/calls?format=har): a rule per request, repeats as replies, secrets redacted; "
                    "entries for other hosts, other paths, non-JSON bodies or answers that break the contract are "
                    "left out and listed in the file's leading comment.",
    )
    p.add_argument("file", metavar="FILE", help="the HAR file")
    p.add_argument("--out", metavar="FILE.yaml", required=True, help="the scenario file to write")
    p.add_argument("--spec", metavar="FILE", help=option_help(SPEC_HELP, "spec"))
    p.add_argument("--spec-root", metavar="DIR", help=option_help("folder whose files the spec's $refs may read", "spec_root"))
    p.add_argument("--base", metavar="PATH", default="",
                   help="a path prefix the service is served under (/v1), taken off each URL (default: none)")
    p.add_argument("--record-secrets", metavar="MODE",
                   help=option_help("redact: secrets become REDACTED; keep: written as they came", "record_secrets"))
    p.add_argument("--record-ignore-query", metavar="NAMES",
                   help=option_help("query parameters the rules do not match on (a timestamp, a nonce), separated by commas",
                              "record_ignore_query"))


def run(args: argparse.Namespace) -> int:
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
    except json.JSONDecodeError as exc:  # told in our words and where, not in the json module's
        print(f"plantstub: {args.file}:{exc.lineno}:{exc.colno}: not a HAR log: not JSON there (a HAR file is the JSON "
              "a browser's network panel or a proxy exports)", file=sys.stderr)
        return 1
    except UnicodeDecodeError:
        print(f"plantstub: {args.file}: not a HAR log: not UTF-8 text", file=sys.stderr)
        return 1
    except (ValueError, HarError) as exc:
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
    print(f"plantstub: wrote {args.out}: {plural(len(document.rules), 'rule')} answering "
          f"{plural(document.recorded, 'entry', 'entries')}"
          + (f"; {left} left out (listed in its leading comment)" if left else ""))
    return 0
