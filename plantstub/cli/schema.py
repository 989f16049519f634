"""`plantstub schema`: the JSON Schema of scenario files, for editors."""

from __future__ import annotations

import argparse
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    sub.add_parser(
        "schema", help="print the JSON Schema of scenario files",
        description="Print the JSON Schema of scenario files (for editors: yaml-language-server, IDEs).",
    )


def run(args: argparse.Namespace) -> int:
    from plantstub.scenarios.load import schema_text

    sys.stdout.write(schema_text())
    return 0
