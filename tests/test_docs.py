"""The code examples of docs/*.md run in the suite, so they stay true.

Each ```python, ```yaml, ```sh and ```console block is one test. A `<!-- docs-test: KIND ... -->` line right
above a block says how it runs (the rest of the line is for the reader); without one, a block runs as its
language's default:
- `python` (default for python): executed with the README's `plant_client.py` importable, `pytest`, `Stub`,
  `create_plant`, `StoreError` and `stub` (a running `Stub()`, whose URL replaces `http://localhost:4010`);
  a `plantstub_settings` fixture it defines is called, and what it gives checked as settings;
- `check ARGS [as FILE][, errors below]` (default for yaml): the block saved as FILE (default: the
  `# scenarios/NAME.yaml` comment it opens with, else example.yaml) and checked with `plantstub check ARGS FILE`;
  it passes, or prints exactly the lines of the next plain block;
- `yaml` (a file for another tool: compose, CI): it is read as YAML, nothing more;
- `shell` (default for sh and console): `plantstub ...` lines are parsed by the real command line, `plantstub
  serve` starts a Stub with those settings, and `curl` lines are sent to it; a console block's output lines must
  be what the command prints, and a sh block's requests must not fail;
- `skip (why)`: a fragment that cannot run alone; the reason shows in the test report.
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import re
import shlex
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from plantstub import Stub
from plantstub.cli import build_parser, main
from plantstub.config import build_settings
from tests.helpers import REPO, Receiver, raw_call

DOCS = REPO / "docs"
LANGUAGES = ("python", "yaml", "sh", "console")
DEFAULT_KIND = {"python": "python", "yaml": "check", "sh": "shell", "console": "shell"}
BLOCK = re.compile(r"(?:^ *<!-- docs-test: (?P<directive>.*?) -->\n)?^(?P<indent> *)```(?P<lang>\w*)\n(?P<code>.*?)^(?P=indent)```",
                   re.S | re.M)
DOC_URL = "http://localhost:4010"  # where the docs' examples find a running stub


@dataclass(frozen=True)
class Block:
    """One fenced block of a docs page, with the plain block after it (an example's expected output)."""

    where: str  # file:line, as the test's id
    lang: str
    kind: str
    directive: str
    code: str
    after: str


def doc_blocks() -> list[Block]:
    """Every block of docs/*.md in a language this file runs."""
    blocks = []
    for path in sorted(DOCS.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        found = list(BLOCK.finditer(text))
        for here, following in itertools.pairwise([*found, None]):
            if here["lang"] not in LANGUAGES:
                continue
            directive = here["directive"] or DEFAULT_KIND[here["lang"]]
            after = following["code"] if following and not following["lang"] else ""
            line = text.count("\n", 0, here.start("lang")) + 1
            code = textwrap.dedent(here["code"]) if here["indent"] else here["code"]  # a block in a list item
            blocks.append(Block(f"{path.name}:{line}", here["lang"], directive.split()[0].rstrip(","), directive,
                                code, after))
    return blocks


BLOCKS = doc_blocks()


def readme_client() -> str:
    """plant_client.py of the README's consumer example."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- example: plant_client.py -->\n```python\n(.*?)```", text, re.S)
    assert found, "README.md: no `<!-- example: plant_client.py -->` block"
    return found.group(1)


@pytest.mark.parametrize("block", BLOCKS, ids=[block.where for block in BLOCKS])
def test_docs_example_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios").mkdir()
    if block.kind == "skip":
        pytest.skip(f"docs/{block.where}: {block.directive}")
    elif block.kind == "python":
        run_python(block, tmp_path, monkeypatch)
    elif block.kind == "check":
        check_scenario(block, tmp_path, capsys)
    elif block.kind == "yaml":
        assert yaml.safe_load(block.code), f"docs/{block.where}: empty YAML"
    elif block.kind == "shell":
        run_shell(block)
    else:
        raise AssertionError(f"docs/{block.where}: unknown docs-test kind {block.kind!r}")


def test_every_block_is_run_or_skipped_with_a_reason() -> None:
    assert len(BLOCKS) >= 20
    assert [b.where for b in BLOCKS if b.kind == "skip" and not re.fullmatch(r"skip \(.+\)", b.directive)] == []


def run_python(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "plant_client.py").write_text(readme_client(), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "plant_client", raising=False)
    import plant_client  # type: ignore[import-not-found]

    with Stub() as running:
        names = {"__name__": "docs_example", "__file__": str(tmp_path / "example.py"), "pytest": pytest, "Stub": Stub, "stub": running,
                 "create_plant": plant_client.create_plant, "StoreError": plant_client.StoreError}
        code = compile(block.code.replace(DOC_URL, running.url), f"docs/{block.where}", "exec")
        exec(code, names)  # the docs' own example: running it is the point
    if "plantstub_settings" in names:  # a conftest.py's fixture: what it gives must be settings plantstub takes
        build_settings(inspect.unwrap(names["plantstub_settings"])(), env={})


def check_scenario(block: Block, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    found = re.fullmatch(r"check(?P<args>.*?)(?: as (?P<file>\S+))?(?P<errors>, errors below)?", block.directive)
    assert found, f"docs/{block.where}: cannot read {block.directive!r}"
    named = re.match(r"# (scenarios/\S+\.ya?ml)\n", block.code)
    file = found["file"] or (named.group(1) if named else "example.yaml")
    (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / file).write_text(block.code, encoding="utf-8")
    status = main(["check", *shlex.split(found["args"]), file])
    err = capsys.readouterr().err
    if found["errors"]:
        expected = block.after.splitlines()
        assert (status, err.splitlines()[:len(expected)]) == (1, expected)
    else:
        assert (status, err) == (0, ""), f"docs/{block.where}: plantstub check {file}:\n{err}"


def run_shell(block: Block) -> None:
    with contextlib.ExitStack() as stack:
        receiver = stack.enter_context(Receiver())  # stands in for the webhook receivers the docs name
        stub: Stub | None = None
        for command, expected in shell_commands(block.code.replace("http://127.0.0.1:8000", receiver.url)):
            argv = shlex.split(command, comments=True)
            if argv[0] == "plantstub":
                try:
                    args = build_parser().parse_args(argv[1:])
                except SystemExit:
                    raise AssertionError(f"docs/{block.where}: plantstub refuses {command!r}") from None
                if args.command == "serve":
                    options = {k: v for k, v in vars(args).items() if k not in ("command", "port")}
                    stub = stack.enter_context(Stub(settings=build_settings(options, env={})))
            elif argv[0] == "curl":
                stub = stub or stack.enter_context(Stub())
                status, printed = curl(argv, stub.url)
                if block.lang == "console":
                    assert printed.rstrip("\n") == expected, f"docs/{block.where}: {command}"
                else:  # a sh block's comments may say the status (`# -> 400`); else it must not be an error
                    said = re.search(r"-> (\d{3})", command.partition(" #")[2] + expected)
                    assert (int(said.group(1)) == status) if said else status < 400, \
                        f"docs/{block.where}: {command} -> {status} {printed}"
            else:
                raise AssertionError(f"docs/{block.where}: this test runs only plantstub and curl, not {argv[0]!r}")


def shell_commands(code: str) -> Iterator[tuple[str, str]]:
    """(command, the lines below it) of a shell block: in a console block, commands start with `$ ` and the lines
    below are their output; in a sh block, the comment lines below a command say what it gets."""
    console = code.startswith("$ ")
    commands: list[list[str]] = []
    for line in code.replace("\\\n", " ").splitlines():
        if not line.strip():
            continue
        starts = line.startswith("$ ") if console else not line.lstrip().startswith("#")
        if starts:
            commands.append([line.removeprefix("$ ")])
        elif commands:
            commands[-1].append(line)
    for command, *output in commands:
        yield command, "\n".join(output)


def curl(argv: list[str], base: str) -> tuple[int, str]:
    """What `curl ARGS` prints against the stub at `base` (the few options the docs use), and the status."""
    method, data, url, headers = None, None, "", {}
    out, write_out = True, ""
    args = iter(argv[1:])
    for arg in args:
        if arg in ("-s", "-f", "-sf", "-fs"):
            continue
        if arg == "-X":
            method = next(args)
        elif arg == "-H":
            name, value = next(args).split(":", 1)
            headers[name.strip()] = value.strip()
        elif arg in ("--json", "-d"):
            data = next(args).encode()
            headers.setdefault("Content-Type", "application/json" if arg == "--json" else "application/x-www-form-urlencoded")
        elif arg == "-o":
            out = next(args) != "/dev/null"
        elif arg == "-w":
            write_out = next(args)
        elif arg.startswith("-"):
            raise AssertionError(f"curl option {arg} is not one this test knows")
        else:
            url = arg
    assert url.startswith("localhost:4010/"), f"the docs' curl examples ask localhost:4010, not {url!r}"
    status, body, _ = raw_call(base, method or ("POST" if data is not None else "GET"), url.removeprefix("localhost:4010"),
                               data, headers)
    printed = body.decode() if out else ""
    return status, printed + write_out.replace("%{http_code}", str(status)).replace("\\n", "\n")
