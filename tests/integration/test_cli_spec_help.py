"""Every subcommand's `--spec` help says what --spec takes: OpenAPI 3.0 to 3.2, Swagger 2.0, a bundled document by
name; and each takes a bundled name as that help says.

Found by a new user's trial: `--help` said `OpenAPI 3.0/3.1 document` (check and import-har without the bundled
names), while the README serves 3.2 and Swagger 2.0 documents too.
"""

from __future__ import annotations

import re

import pytest

from plantstub.cli import main


@pytest.mark.parametrize("command", ["serve", "check", "verify", "import-har"])
def test_the_spec_help_names_every_kind_of_document_it_takes(command, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # argparse wraps at the terminal's width: one line per option
    with pytest.raises(SystemExit):
        main([command, "--help"])
    [line] = [line for line in capsys.readouterr().out.splitlines() if re.match(r"\s+--spec FILE\s", line)]
    for said in ("OpenAPI 3.0, 3.1 or 3.2", "Swagger 2.0", "a bundled one by name (plant-store, plant-store-full)"):
        assert said in line, line


def test_check_takes_a_bundled_spec_by_name(tmp_path, capsys):
    (tmp_path / "hook.yaml").write_text(
        "rules:\n  - match: {method: DELETE, path: /plants/1}\n    reply: {status: 204}\n")
    assert main(["check", "--spec", "plant-store-full", str(tmp_path / "hook.yaml")]) == 0
    assert capsys.readouterr().out == "plantstub: 1 scenario OK\n"
