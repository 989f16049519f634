"""`plantstub verify`: each scenario rule sent to the real service, its answer judged against the rule and the spec."""

from __future__ import annotations

import argparse
import sys

from plantstub.config import DEFAULT_SCENARIOS, SPEC_HELP, env_name

HEADER_ON_COMMAND_LINE = (f"plantstub: a --header with credentials is visible in the process list (ps) to other users "
                          f"of this machine; set {env_name('header')} in the environment instead")


def add_parser(sub: argparse._SubParsersAction) -> None:
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
    p.add_argument("--spec", metavar="FILE", help=helped(SPEC_HELP, "spec"))
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
    p.add_argument("--ca", metavar="FILE", help=helped("a PEM file of CA certificates the service's certificate is "
                                                       "checked against, besides the system's", "ca"))
    p.add_argument("--junit", metavar="FILE", help=helped("write JUnit XML: a test case per rule", "junit", env=False))
    p.add_argument("--json", action="store_true", default=None,
                   help=helped("print the results as JSON instead of lines", "json", env=False))
    p.add_argument("--record", metavar="DIR", help=helped("write the service's answers as a recording in DIR, by the "
                                                          "rules of serve --record", "record", env=False))


def run(args: argparse.Namespace) -> int:
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
