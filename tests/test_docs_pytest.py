"""docs/pytest.md's tables say what the plugin offers: every fixture, the marker, every option and ini setting.

Compared with what pytest itself shows a user (`pytest --help`, `--fixtures`, `--markers`), so an option added to
the plugin without a row, or a row left behind by a removed option, fails here.
"""

from __future__ import annotations

import re

import pytest

from plantstub import pytest_plugin
from plantstub.plugin import markers
from tests.helpers import REPO

PYTEST_DOC = REPO / "docs" / "pytest.md"
CLI_COLUMN = "command line (paths relative to the folder pytest runs in)"
INI_COLUMN = "ini (paths relative to the ini file)"


def doc_tables() -> list[list[list[str]]]:
    """Every table of docs/pytest.md: its rows (the header first), each a list of cells."""
    tables: list[list[list[str]]] = []
    rows: list[list[str]] = []
    for line in [*PYTEST_DOC.read_text(encoding="utf-8").splitlines(), ""]:
        if line.startswith("|"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if not set("".join(cells)) <= set("-: "):  # the |---| line
                rows.append(cells)
        elif rows:
            tables.append(rows)
            rows = []
    return tables


def table_with(header: str) -> list[dict[str, str]]:
    """The rows of the one table whose header has a column `header`, as {column: cell}."""
    (table,) = [t for t in doc_tables() if header in t[0]]
    return [dict(zip(table[0], row, strict=True)) for row in table[1:]]


def shown(pytester: pytest.Pytester, *args: str) -> list[str]:
    """The lines `pytest ARGS` prints (in process: these runs only list what is registered)."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")  # pytest-asyncio's warning off
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:aiohttp", *args)  # pytest-aiohttp 1.0 warns as it loads
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    return result.stdout.lines


def test_every_option_and_ini_setting_of_the_plugin_has_a_row(pytester: pytest.Pytester) -> None:
    help_text = shown(pytester, "--help")
    options = {m.group(1) for line in help_text if (m := re.match(r"  (--plantstub-[\w-]+)", line))}
    ini = {m.group(1) for line in help_text if (m := re.match(r"  (plantstub_\w+) \(", line))}
    rows = table_with(INI_COLUMN)
    documented_options = {flag for row in rows for flag in re.findall(r"`(--plantstub-[\w-]+)", row[CLI_COLUMN])}
    documented_ini = {name for row in rows for name in re.findall(r"`(plantstub_\w+)", row[INI_COLUMN])}
    assert (sorted(documented_options), sorted(documented_ini)) == (sorted(options), sorted(ini))
    (url,) = [row[CLI_COLUMN] for row in rows if "`--plantstub-url" in row[CLI_COLUMN]]
    assert f"env `{pytest_plugin.URL_ENV}`" in url


def test_every_fixture_of_the_plugin_has_a_row_with_its_scope(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    fixtures = {}
    for line in shown(pytester, "--fixtures"):
        found = re.match(r"(plantstub\w*)(?: \[(\w+) scope\])? -- ", line)
        if found:
            fixtures[found.group(1)] = found.group(2) or "function"
    documented = {row["name"].strip("`"): row["scope"] for row in table_with("scope") if row["kind"] == "fixture"}
    assert documented == fixtures


def test_the_marker_row_is_the_registered_marker_and_its_arguments(pytester: pytest.Pytester) -> None:
    registered = [line.split(":", 1)[0] for line in shown(pytester, "--markers") if line.startswith("@pytest.mark.plantstub(")]
    (marker,) = [row for row in table_with("scope") if row["kind"] == "marker"]
    assert [marker["name"].strip("`")] == registered
    arguments = re.search(r"\((.*)\)", registered[0])
    assert arguments and [a.split("=")[0] for a in arguments.group(1).split(", ")] == list(markers.MARKER_ARGUMENTS)
