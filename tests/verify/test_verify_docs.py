"""docs/verify.md's example runs as written: its scenario file and the built-in store-closed in a folder, its
commands against the tests' own Plant Store with the bug the page describes, every line compared (the service's URL
and the seconds in the summary aside)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

import pytest

from plantstub.cli import main
from plantstub.scenarios.load import builtin_folder
from tests.helpers import REPO, Upstream, call

PAGE = (REPO / "docs" / "verify.md").read_text(encoding="utf-8")
DOC_URL = "https://staging.example.com/api"
TOKEN = "docs-example-token-1234"


def block(starting: str) -> str:
    """The fenced block of the page whose first line starts with `starting`."""
    found = re.search(rf"```\w*\n({re.escape(starting)}.*?)```", PAGE, re.S)
    assert found, f"docs/verify.md: no block starting with {starting!r}"
    return found.group(1)


@pytest.fixture(scope="module")
def store() -> Iterator[Upstream]:
    with Upstream(script="plant_store_app.py", args=(TOKEN,)) as running:
        yield running


def test_the_pages_example_prints_what_the_page_shows(store, tmp_path, monkeypatch, capsys):
    assert call(store.url, "POST", "/__reset")[0] == 200
    assert call(store.url, "PUT", "/__bugs", ["nameless"])[0] == 200  # "whose list of plants lost the name"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "plants.yaml").write_text(block("# scenarios/plants.yaml"), encoding="utf-8")
    (tmp_path / "scenarios" / "store-closed.yaml").write_bytes((builtin_folder() / "store-closed.yaml").read_bytes())
    console = block("$ export PLANTSTUB_HEADER")
    commands = re.split(r"^\$ ", console, flags=re.M)[1:]
    assert commands[0] == 'export PLANTSTUB_HEADER="Authorization: Bearer $STAGING_TOKEN"\n'
    monkeypatch.setenv("PLANTSTUB_HEADER", f"Authorization: Bearer {TOKEN}")
    for command in commands[1:]:
        line, *expected = command.splitlines()
        argv = shlex.split(line)
        assert argv[:2] == ["plantstub", "verify"]
        status = main([arg.replace(DOC_URL, store.url) for arg in argv[1:]])
        out = capsys.readouterr().out.replace(store.url, DOC_URL)
        seconds = re.compile(r"\(\d+\.\d\d s\)$")
        assert [seconds.sub("(S s)", x) for x in out.splitlines()] == [seconds.sub("(S s)", x) for x in expected]
        assert status == 1  # "Both runs exit 1"
