"""What `import plantstub` gives: every exception the docs name, and nothing that costs aiohttp to import."""

from __future__ import annotations

import builtins
import inspect
import re
import subprocess
import sys

import plantstub
from plantstub import errors
from tests.helpers import REPO

# Exceptions the docs name that are not plantstub's, and whose they are.
FOREIGN = {
    "StoreError": "the README's plant_client.py",
    "HTTPError": "urllib's",
    "ClientConnectorError": "aiohttp's (a webhook delivery's error text)",
}
# A name the docs say is raised: `raises `X``, `raise the same `X``, `X` (a `LookupError`).
RAISED = re.compile(r"\braises?\b(?:\s+(?:the\s+same|an?|its))?\s+`?([A-Z][A-Za-z]+)`?")
NAMED = re.compile(r"`?\b([A-Z][A-Za-z]*(?:Error|Exception|Warning))\b`?")


def doc_exception_names() -> dict[str, str]:
    """Every exception name in README.md and docs/*.md, with the first file:line naming it."""
    found: dict[str, str] = {}
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for match in [*NAMED.finditer(text), *RAISED.finditer(text)]:  # the whole text: a phrase may wrap
            found.setdefault(match[1], f"{path.name}:{text.count(chr(10), 0, match.start(1)) + 1}")
    return found


def test_public_api_exports_every_exception_the_docs_name() -> None:
    names = doc_exception_names()
    assert {"SubscriptionError", "UnknownScenario", "ScenarioError", "CallAssertionError"} <= set(names)
    ours = {name: where for name, where in names.items() if name not in FOREIGN and not hasattr(builtins, name)}
    missing = [f"{name} ({where})" for name, where in sorted(ours.items())
               if not (inspect.isclass(getattr(plantstub, name, None)) and issubclass(getattr(plantstub, name), BaseException)
                       and name in plantstub.__all__)]
    assert missing == []


def test_public_api_exports_every_exception_of_plantstub_errors() -> None:
    declared = {name for name, value in vars(errors).items()
                if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == errors.__name__}
    assert declared - set(plantstub.__all__) == set()
    assert all(getattr(plantstub, name) is getattr(errors, name) for name in declared)


def test_public_api_exceptions_import_without_the_server() -> None:
    code = ("import sys; from plantstub import SubscriptionError, UnknownScenario, ScenarioError; "
            "print(sorted(m for m in ('aiohttp', 'jsonschema', 'yaml') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (0, "[]\n"), result.stderr
