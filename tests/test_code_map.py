"""docs/development.md's code map names every module of plantstub/, and no module that is gone."""

from __future__ import annotations

import re

from tests.helpers import REPO

PACKAGE = REPO / "plantstub"


def mapped() -> set[str]:
    """The modules the code map's table names (`server/app.py`, `stub.py`): backticked `.py` names in a row's first
    cell, relative to plantstub/."""
    text = (REPO / "docs" / "development.md").read_text(encoding="utf-8")
    start = text.index("\n## Code map")
    section = text[start:text.index("\n## ", start + 1)]
    return {name for line in section.splitlines() if line.startswith("| `")
            for name in re.findall(r"`([^`]+\.py)`", line.split("|")[1])}


def modules(packages: bool = False) -> set[str]:
    """Every module of the package, relative to plantstub/; its packages' `__init__.py` too when `packages` (the map
    names one where it holds code, as `cli/__init__.py` does)."""
    return {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
            if packages or path.name != "__init__.py"}


def test_the_code_map_names_every_module_of_the_package():
    missing = sorted(modules() - mapped())
    assert missing == [], f"docs/development.md's code map lacks a row for: {', '.join(missing)}"


def test_the_code_map_names_no_module_that_is_gone():
    gone = sorted(mapped() - modules(packages=True))
    assert gone == [], f"docs/development.md's code map names modules plantstub/ no longer has: {', '.join(gone)}"
