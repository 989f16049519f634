"""Every option's default is the same in `plantstub COMMAND --help`, in docs/cli.md and in config.py."""

from __future__ import annotations

import re

import pytest

from plantstub import config
from plantstub.cli import build_parser, main
from plantstub.verify.options import OWN_DEFAULTS
from tests.helpers import REPO

CLI_DOC = REPO / "docs" / "cli.md"


def help_defaults(command: str, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """{--flag: the text in its "(default: ...)"} of `plantstub COMMAND --help`, as a user reads it."""
    with pytest.MonkeyPatch.context() as patch, pytest.raises(SystemExit) as exited:
        patch.setenv("COLUMNS", "120")  # wide enough that argparse never cuts a long word (a URL) in two
        main([command, "--help"])
    assert exited.value.code == 0
    options = capsys.readouterr().out.split("\noptions:\n", 1)[1]
    found = {}
    for entry in re.split(r"\n  (?=-)", "\n" + options):
        text = " ".join(entry.split())  # argparse wraps the help over lines
        flag = re.match(r"(--[\w-]+)", text)
        if flag and flag.group(1) != "--help":
            default = re.search(r"\(default: (.*?)\)(?= \[env|$)", text)
            found[flag.group(1)] = default.group(1) if default else "(no default shown)"
    return found


def documented_defaults() -> dict[str, str]:
    """{--flag: its default column} of every table in docs/cli.md that has a default column, backticks dropped."""
    found: dict[str, str] = {}
    column = None
    for line in CLI_DOC.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if not cells:
            column = None
        elif "default" in cells:
            column = cells.index("default")
        elif column is not None and (flag := re.match(r"`(--[\w-]+)", cells[0])):
            default = cells[column].replace("`", "")
            assert found.setdefault(flag.group(1), default) == default, f"docs/cli.md: two defaults for {flag.group(1)}"
    return found


def config_default(flag: str) -> str:
    """What config.py (or verify's settings, for verify's own flags) says a flag defaults to."""
    health = {"--timeout": f"{config.HEALTH_TIMEOUT:g}",
              "--url": f"http://127.0.0.1:${config.env_name('port')}, port {config.Settings().port} when unset",
              "--json": "off", "--fail-under": "none"}  # health's and coverage's own
    field = flag[2:].replace("-", "_")
    return health.get(flag) or (OWN_DEFAULTS[field] if field in OWN_DEFAULTS else config.shown_default(field))


@pytest.mark.parametrize("command", ["serve", "check", "health", "coverage", "verify"])
def test_every_option_default_is_the_same_in_help_docs_and_config(command, capsys):
    shown = help_defaults(command, capsys)
    expected = {flag: config_default(flag) for flag in shown}
    assert shown == expected
    documented = documented_defaults()
    assert {flag: documented.get(flag, "(not in docs/cli.md)") for flag in shown} == expected


def test_serve_has_a_flag_for_every_setting_and_no_default_of_its_own(capsys):
    assert sorted(flag[2:].replace("-", "_") for flag in help_defaults("serve", capsys)) == sorted(config.FIELDS)
    args = vars(build_parser().parse_args(["serve"]))
    assert config.build_settings({k: v for k, v in args.items() if k != "command"}, env={}) == config.Settings()
    assert build_parser().parse_args(["health"]).timeout == config.HEALTH_TIMEOUT


def test_max_sessions_defaults_to_what_the_stub_enforces(capsys):
    assert help_defaults("serve", capsys)["--max-sessions"] == str(config.Settings().max_sessions) == "100"
