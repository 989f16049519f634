"""The code examples of docs/*.md and README.md run in the suite, so they stay true.

Each ```python, ```yaml, ```sh and ```console block is one test, and so is a plain block with a directive. A
`<!-- docs-test: KIND ... -->` line right above a block says how it runs (the rest of the line is for the
reader); without one, a block runs as its language's default:
- `python` (default for python): executed with the README's `plant_client.py` importable, `pytest`, `Stub`,
  `create_plant`, `StoreError` and `stub` (a running `Stub()`, whose URL replaces `http://localhost:4010`);
  a `plantstub_settings` fixture it defines is called, and what it gives checked as settings;
- `pytest ARGS [(note)]` (default for a python block that defines a `test_` function): the block is a test
  module, run by `pytest ARGS` in a fresh folder (the README's `plant_client.py` beside it, an empty
  `scenarios/`); every test it defines must pass;
  a block naming `https://staging.example.com/api` (the real service of docs/real-service.md) meets a real one
  there, tests/upstream_app.py's;
- `readme-project ARGS [(note)]` (a plain block): the README's consumer project run with `pytest ARGS` prints
  the block's lines, one after the other;
- `readme-run [(note)]` (a sh block of one `pytest ARGS` line): the README's consumer project run with that
  command line; every test passes;
- `check ARGS [as FILE][, errors below] [(note)]` (default for yaml): the block saved as FILE (default: the
  `# scenarios/NAME.yaml` comment it opens with, else example.yaml) and checked with `plantstub check ARGS FILE`;
  it passes, or prints exactly the lines of the next plain block;
- `yaml` (a file for another tool: compose, CI): it is read as YAML, nothing more;
- `shell [, with FILE...]` (default for sh and console): the files named (in tests/data/) are put in the folder
  first; `plantstub ...` lines are parsed by the real command line, `plantstub serve` starts a Stub with those
  settings, other `plantstub` commands run, and `curl` lines are sent to the stub; a console block's output lines
  must be what the command prints, and a sh block's commands must not fail;
- `elsewhere FILE (why)`: a block another test runs (a real nginx, HAProxy): FILE, the tests' module that reads the
  page, must exist and name the page;
- `skip (why)`: a block that needs what the suite cannot start (a Docker engine, CI's clean clone); the reason
  shows in the test report.
In README.md, the block under `<!-- setup -->` is CI's (`.ci/run` runs it on a clean clone: skipped here), and
each block under `<!-- example: NAME -->` is file NAME of the consumer project that
tests/consumer/test_consumer_untouched.py runs (checked here to be among the files it reads).
"""

from __future__ import annotations

import contextlib
import importlib.util
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
from tests.helpers import REPO, Receiver, Upstream, raw_call

DOCS = REPO / "docs"
PAGES = [REPO / "README.md", *sorted(DOCS.glob("*.md"))]
LANGUAGES = ("python", "yaml", "sh", "console")
DEFAULT_KIND = {"python": "python", "yaml": "check", "sh": "shell", "console": "shell"}
BLOCK = re.compile(r"(?:^ *<!-- (?:docs-test: (?P<directive>.*?)|(?P<readme>setup|example: \S+)) -->\n)?"
                   r"^(?P<indent> *)```(?P<lang>\w*)\n(?P<code>.*?)^(?P=indent)```", re.S | re.M)
TEST_FUNCTION = re.compile(r"^(?:async )?def test_", re.M)
DOC_URL = "http://localhost:4010"  # where the docs' examples find a running stub
STAGING = "https://staging.example.com/api"  # where docs/real-service.md's examples find the real service
DATA = REPO / "tests" / "data"


@dataclass(frozen=True)
class Block:
    """One fenced block of a docs page, with the plain block after it (an example's expected output)."""

    where: str  # file:line, as the test's id
    lang: str
    kind: str
    directive: str
    code: str
    after: str


def page_blocks(name: str, text: str) -> list[Block]:
    """Every block of one page (`name`: its path in the repository) that this file runs or skips."""
    blocks = []
    found = list(BLOCK.finditer(text))
    for here, following in itertools.pairwise([*found, None]):
        if here["lang"] not in LANGUAGES and here["directive"] is None and here["readme"] is None:
            continue
        code = textwrap.dedent(here["code"]) if here["indent"] else here["code"]  # a block in a list item
        if here["readme"] == "setup":
            directive = "skip (CI's two set-up commands: .ci/run runs them on a clean clone)"
        elif here["readme"]:
            directive = here["readme"]
        elif here["directive"] is not None:
            directive = here["directive"]
        elif here["lang"] == "python" and TEST_FUNCTION.search(code):
            directive = "pytest"
        else:
            directive = DEFAULT_KIND.get(here["lang"], "")
        after = following["code"] if following and not following["lang"] else ""
        line = text.count("\n", 0, here.start("lang")) + 1
        kind = (directive.split() or [""])[0].rstrip(",:")
        blocks.append(Block(f"{name}:{line}", here["lang"], kind, directive, code, after))
    return blocks


def doc_blocks() -> list[Block]:
    """Every block of README.md and docs/*.md that this file runs or skips."""
    return [block for path in PAGES
            for block in page_blocks(path.relative_to(REPO).as_posix(), path.read_text(encoding="utf-8"))]


def problems(blocks: list[Block]) -> list[str]:
    """Blocks that would pass without being checked: a skip with no reason, test functions that would only be
    defined, a kind this file does not know."""
    found = []
    for block in blocks:
        if block.kind == "skip" and not re.fullmatch(r"skip \(\w.{8,}\)", block.directive):
            found.append(f"{block.where}: a skip must say why: `<!-- docs-test: skip (why) -->`")
        elif block.kind == "elsewhere" and not re.fullmatch(r"elsewhere \S+ \(\w.{8,}\)", block.directive):
            found.append(f"{block.where}: say which tests' module runs it, and how: "
                         "`<!-- docs-test: elsewhere FILE (why) -->`")
        elif block.kind == "python" and TEST_FUNCTION.search(block.code):
            found.append(f"{block.where}: defines tests that `python` would not run: say `pytest ARGS`")
        elif block.kind not in KINDS:
            found.append(f"{block.where}: unknown docs-test kind {block.kind!r} (known: {', '.join(KINDS)})")
    return found


KINDS = ("python", "pytest", "readme-project", "readme-run", "check", "yaml", "shell", "example", "elsewhere", "skip")
BLOCKS = doc_blocks()
INNER = ("pytest", "readme-project", "readme-run")  # run by an inner pytest session: their own test, marked slow


def readme_client() -> str:
    """plant_client.py of the README's consumer example."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- example: plant_client.py -->\n```python\n(.*?)```", text, re.S)
    assert found, "README.md: no `<!-- example: plant_client.py -->` block"
    return found.group(1)


def consumer_examples() -> dict[str, str]:
    """The README's consumer project, read as tests/consumer/test_consumer_untouched.py reads it to run it."""
    spec = importlib.util.spec_from_file_location("consumer_untouched", REPO / "tests" / "consumer" / "test_consumer_untouched.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    examples: dict[str, str] = module.readme_examples()
    return examples


# a skipped block is not a test item: its reason is checked by problems(), and what it shows is run elsewhere
OWN_TEST = [block for block in BLOCKS if block.kind not in INNER and block.kind != "skip"]


@pytest.mark.parametrize("block", OWN_TEST, ids=[block.where for block in OWN_TEST])
def test_docs_example_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios").mkdir()
    if block.kind == "python":
        run_python(block, tmp_path, monkeypatch)
    elif block.kind == "check":
        check_scenario(block, tmp_path, capsys)
    elif block.kind == "yaml":
        assert yaml.safe_load(block.code), f"{block.where}: empty YAML"
    elif block.kind == "shell":
        run_shell(block, tmp_path, capsys)
    elif block.kind == "elsewhere":
        module = REPO / block.directive.split()[1]
        page = block.where.partition(":")[0]
        assert module.is_file(), f"{block.where}: no {module.relative_to(REPO)} to run it"
        assert Path(page).name in module.read_text(encoding="utf-8"), f"{block.where}: {module.name} does not read {page}"
    elif block.kind == "example":  # the consumer test runs the project; here: it is one of the files it reads
        name = block.directive.removeprefix("example: ")
        assert consumer_examples().get(name) == block.code, f"{block.where}: not among the consumer project's files"
    else:
        raise AssertionError(f"{block.where}: unknown docs-test kind {block.kind!r}")


RUN_BY_PYTEST = [block for block in BLOCKS if block.kind in INNER]


@pytest.mark.parametrize("block", RUN_BY_PYTEST, ids=[block.where for block in RUN_BY_PYTEST])
def test_docs_example_passes_under_pytest(block: Block, pytester: pytest.Pytester) -> None:
    args = shlex.split(re.sub(r"\(.*\)\s*$", "", block.directive))[1:]
    if block.kind == "readme-run":
        line = block.code.strip()
        assert line.startswith("pytest ") and "\n" not in line, f"{block.where}: not one `pytest ARGS` line"
        args = shlex.split(line)[1:]
    if block.kind == "pytest":
        files = {"plant_client.py": readme_client(), "test_example.py": block.code}
    else:
        files = consumer_examples()
    with contextlib.ExitStack() as stack:
        if STAGING in files.get("test_example.py", ""):  # the real service of docs/real-service.md, for real
            upstream = stack.enter_context(Upstream())
            files["test_example.py"] = files["test_example.py"].replace(STAGING, upstream.url)
        result, output = inner_run(pytester, files, args)
    assert result.ret == pytest.ExitCode.OK, f"{block.where}: pytest {shlex.join(args)}:\n{output}"
    tests = sum(len(TEST_FUNCTION.findall(code)) for name, code in files.items() if Path(name).name.startswith("test_"))
    result.assert_outcomes(passed=tests)
    if block.kind == "readme-project":
        wanted, printed = block.code.splitlines(), result.stdout.lines
        assert any(printed[i:i + len(wanted)] == wanted for i in range(len(printed))), \
            f"{block.where}: pytest {shlex.join(args)} printed:\n{output}"


def inner_run(pytester: pytest.Pytester, files: dict[str, str], args: list[str]) -> tuple[pytest.RunResult, str]:
    """`pytest ARGS` in a fresh folder holding `files` and an empty scenarios/: its result and what it printed."""
    (pytester.path / "scenarios").mkdir()
    for name, content in files.items():
        (pytester.path / name).parent.mkdir(parents=True, exist_ok=True)
        (pytester.path / name).write_text(content, encoding="utf-8")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    return result, result.stdout.str() + result.stderr.str()


def test_every_block_is_run_or_skipped_with_a_reason() -> None:
    assert len(BLOCKS) >= 20
    assert problems(BLOCKS) == []


@pytest.mark.parametrize(("page", "problem"), [
    ("<!-- docs-test: skip -->\n```python\nx = 1\n```\n", "docs/x.md:2: a skip must say why"),
    ("<!-- docs-test: skip () -->\n```python\nx = 1\n```\n", "docs/x.md:2: a skip must say why"),
    ("<!-- docs-test: python -->\n```python\ndef test_it(plantstub):\n    pass\n```\n",
     "docs/x.md:2: defines tests that `python` would not run"),
    ("<!-- docs-test: run it -->\n```python\nx = 1\n```\n", "docs/x.md:2: unknown docs-test kind 'run'"),
    ("<!-- docs-test: elsewhere tests/x.py -->\n```nginx\nx;\n```\n", "docs/x.md:2: say which tests' module runs it"),
], ids=["no reason", "empty reason", "tests never run", "unknown kind", "elsewhere, no reason"])
def test_a_block_that_would_pass_unchecked_is_a_problem(page: str, problem: str) -> None:
    (found,) = problems(page_blocks("docs/x.md", page))
    assert found.startswith(problem), found


def test_a_skip_with_a_reason_is_no_problem() -> None:
    page = "<!-- docs-test: skip (a fragment: what x is) -->\n```python\nx = 1\n```\n"
    assert problems(page_blocks("docs/x.md", page)) == []


def test_a_python_block_with_tests_runs_under_pytest_by_default() -> None:
    (block,) = page_blocks("docs/x.md", "```python\nasync def test_it(plantstub):\n    pass\n```\n")
    assert (block.kind, problems([block])) == ("pytest", [])


def run_python(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "plant_client.py").write_text(readme_client(), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "plant_client", raising=False)
    import plant_client  # type: ignore[import-not-found]

    with Stub() as running:
        names = {"__name__": "docs_example", "__file__": str(tmp_path / "example.py"), "pytest": pytest, "Stub": Stub, "stub": running,
                 "create_plant": plant_client.create_plant, "StoreError": plant_client.StoreError}
        code = compile(block.code.replace(DOC_URL, running.url), f"{block.where}", "exec")
        exec(code, names)  # the docs' own example: running it is the point
    if "plantstub_settings" in names:  # a conftest.py's fixture: what it gives must be settings plantstub takes
        build_settings(inspect.unwrap(names["plantstub_settings"])(), env={})


def check_scenario(block: Block, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    found = re.fullmatch(r"check(?P<args>.*?)(?: as (?P<file>\S+))?(?P<errors>, errors below)?(?: \(.*\))?",
                         block.directive)
    assert found, f"{block.where}: cannot read {block.directive!r}"
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
        assert (status, err) == (0, ""), f"{block.where}: plantstub check {file}:\n{err}"


def run_shell(block: Block, folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    given = re.search(r"\bwith (?P<files>[\w./ -]+)", block.directive)
    for name in given["files"].split() if given else ():
        (folder / name).write_bytes((DATA / name).read_bytes())
    with contextlib.ExitStack() as stack:
        receiver = stack.enter_context(Receiver())  # stands in for the webhook receivers the docs name
        stub: Stub | None = None
        for command, expected in shell_commands(block.code.replace("http://127.0.0.1:8000", receiver.url)):
            argv = shlex.split(command, comments=True)
            if argv[0] == "plantstub":
                try:
                    args = build_parser().parse_args(argv[1:])
                except SystemExit:
                    raise AssertionError(f"{block.where}: plantstub refuses {command!r}") from None
                if args.command == "serve":
                    options = {k: v for k, v in vars(args).items() if k not in ("command", "port")}
                    stub = stack.enter_context(Stub(settings=build_settings(options, env={})))
                else:  # the command itself: what it prints is the block's, and it succeeds
                    capsys.readouterr()
                    status = main(argv[1:])
                    said = capsys.readouterr()
                    assert status == 0, f"{block.where}: {command} exited {status}: {said.err}"
                    if block.lang == "console":
                        assert (said.out + said.err).rstrip("\n") == expected, f"{block.where}: {command}"
            elif argv[0] == "curl":
                stub = stub or stack.enter_context(Stub())
                status, printed = curl(argv, stub.url)
                if block.lang == "console":
                    assert printed.rstrip("\n") == expected, f"{block.where}: {command}"
                else:  # a sh block's comments may say the status (`# -> 400`); else it must not be an error
                    said = re.search(r"-> (\d{3})", command.partition(" #")[2] + expected)
                    assert (int(said.group(1)) == status) if said else status < 400, \
                        f"{block.where}: {command} -> {status} {printed}"
            else:
                raise AssertionError(f"{block.where}: this test runs only plantstub and curl, not {argv[0]!r}")


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
