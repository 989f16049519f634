"""No private name of a dependency outside server/parser.py (the guide's rule; webhooks/receivers.py once built
aiohttp's ConnectionKey to fake its exception types)."""

from __future__ import annotations

import ast
from pathlib import Path

import plantstub

PACKAGE = Path(plantstub.__file__).parent
ALLOWED = {PACKAGE / "server" / "parser.py"}
PRIVATE_MODULES = ("aiohttp.client_reqrep", "aiohttp.client_proto", "aiohttp.connector", "aiohttp.web_protocol")


def _private_uses(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("aiohttp", "yarl"):
            if node.module.startswith(PRIVATE_MODULES) or any(part.startswith("_") for part in node.module.split(".")):
                found.append(f"line {node.lineno}: from {node.module}")
            found += [f"line {node.lineno}: {alias.name}" for alias in node.names if alias.name.startswith("_")]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in ("aiohttp", "web", "yarl"):
                found.append(f"line {node.lineno}: {base.id}...{node.attr}")
    return found


def test_no_module_but_the_parser_uses_a_private_name_of_aiohttp() -> None:
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in ALLOWED:
            continue
        uses = _private_uses(ast.parse(path.read_text(encoding="utf-8")))
        if uses:
            offenders[str(path.relative_to(PACKAGE))] = uses
    assert offenders == {}


def test_the_check_sees_a_private_import() -> None:
    assert _private_uses(ast.parse("from aiohttp.client_reqrep import ConnectionKey\n")) != []
    assert _private_uses(ast.parse("import aiohttp\naiohttp.web._run_app\n")) != []
