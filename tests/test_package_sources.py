"""Every module of the package compiles as pytest compiles it: installed, plantstub is a pytest plugin's package, and
pytest rewrites the asserts of all its modules, compiling their syntax trees again, which refuses a string constant
UTF-8 cannot encode (a lone surrogate written with a `\\ud800` escape outside a raw string)."""

from __future__ import annotations

import ast
from pathlib import Path

import plantstub

PACKAGE = Path(plantstub.__file__).parent


def test_no_module_holds_a_string_constant_utf8_cannot_encode():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                try:
                    node.value.encode("utf-8")
                except UnicodeEncodeError:
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
        compile(tree, str(path), "exec", dont_inherit=True)  # what pytest's assertion rewriter does
    assert found == []
