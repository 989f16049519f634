"""Hostile spec and scenario files, loaded in process: deep nesting, alias bombs, odd tags, files that must not be quoted.

The same files through `plantstub check` and `plantstub serve` (real processes): tests/integration/test_hostile_files.py.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from plantstub._yaml import MAX_ALIASED, MAX_DEPTH, parse_text
from plantstub.contract.load import load_spec
from plantstub.errors import SpecError
from plantstub.scenarios.load import load_scenario_file, load_scenarios
from tests.helpers import SCENARIO_DATA, no_hang, same, write

SPEC = load_spec()
TOO_DEEP = "nested deeper than the 100 levels plantstub reads"
BOMB = "aliases expand to more than the 100,000 values plantstub reads"
SECRET = "TOPSECRET-7f3a9c"


def too_deep(where: str) -> re.Pattern[str]:
    """`where: reason` for a YAML file nested far too deeply. Since PyYAML 6.0.4 libyaml refuses deep flow nesting
    itself, before plantstub counts levels: then plantstub says `not valid YAML` and the reason is the library's."""
    return re.compile(rf"{re.escape(where)}: ({re.escape(TOO_DEEP)}|not valid YAML: .+)")


def deep_flow(levels: int) -> str:
    return "[" * levels + "]" * levels


def laughs(width: int = 9, levels: int = 9, indent: str = "") -> str:
    """The "billion laughs": each anchor is a list of `width` aliases of the one before (9 ** 10 values)."""
    lines = [f"{indent}a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [f"{indent}a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def scenario_errors(folder: Path) -> list[str]:
    return [str(e) for e in load_scenarios(folder, SPEC)[1]]


def spec_error(path: Path) -> str:
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    return str(caught.value)


def spec_with_schema(schema: str, extra: str = "") -> str:
    return (
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\n" + extra + "paths:\n  /plants:\n    post:\n      responses:\n"
        "        '200':\n          description: ok\n          content:\n            application/json:\n"
        f"              schema: {schema}\n"
    )


# -- the limits themselves -----------------------------------------------------------------------
def test_limits_are_the_documented_ones():
    assert (MAX_DEPTH, MAX_ALIASED) == (100, 100_000)


@pytest.mark.parametrize(("text", "expected"), [
    (f"x: {deep_flow(99)}\n", None),  # the root mapping and 99 lists: 100 levels
    (f"x: {deep_flow(100)}\n", f"t.yaml:1: {TOO_DEEP}"),
    ("a:\n" + "".join("  " * i + "- \n" for i in range(1, 2)) + "\n" + "b: " + deep_flow(50_000) + "\n",
     too_deep("t.yaml:4")),
    ("".join("  " * i + f"k{i}:\n" for i in range(120)) + "  " * 120 + "x: 1\n", f"t.yaml:101: {TOO_DEEP}"),
    ("- " * 200 + "x\n", f"t.yaml:1: {TOO_DEEP}"),
    # 60 levels written once, used 50 levels down: 110 levels once the alias is expanded
    (f"a: &a {deep_flow(60)}\nb: " + "[" * 50 + "*a" + "]" * 50 + "\n", f"t.yaml:2: {TOO_DEEP} once an alias is expanded"),
    ("a: &a [*a]\n", "t.yaml:1: an alias inside the anchored value it stands for: a loop, which JSON data cannot hold"),
    (laughs(), f"t.yaml:6: {BOMB}"),
], ids=["100-levels", "101-levels", "50000-levels", "block-mapping", "compact-sequences", "alias-depth", "loop",
        "billion-laughs"])
def test_parse_text_bounds_depth_and_aliases_before_composing(text, expected):
    if expected is None:
        parse_text(text, "t.yaml")
        return
    with pytest.raises(ValueError) as caught:
        parse_text(text, "t.yaml")
    assert same([str(caught.value)], [expected])


def test_parse_text_json_is_bounded_too_with_its_line():
    assert parse_text(deep_flow(99), "t.json") is not None
    with pytest.raises(ValueError) as caught:
        parse_text('{"a": "[[[[ in a string ]]]",\n "b":\n' + deep_flow(50_000) + "}", "t.json")
    assert str(caught.value) == f"t.json:3: {TOO_DEEP}"


def test_parse_text_keeps_small_anchors_and_merge_keys():
    text = "base: &base {status: 400, body: &body {error: 400}}\nuse:\n  <<: *base\n  delay_ms: 5\nagain: [*body, *body]\n"
    assert parse_text(text, "t.yaml") == {
        "base": {"status": 400, "body": {"error": 400}},
        "use": {"status": 400, "body": {"error": 400}, "delay_ms": 5},
        "again": [{"error": 400}, {"error": 400}],
    }


def test_parse_text_aliases_may_add_up_to_the_limit():
    # 100 aliases of a 1,000-value list: exactly 100,000 values added, still read
    text = "a: &a [" + ", ".join(["1"] * 999) + "]\nb: [" + ", ".join(["*a"] * 100) + "]\n"
    assert len(parse_text(text, "t.yaml")["b"]) == 100
    with pytest.raises(ValueError, match=f"^t.yaml:3: {BOMB}$"):
        parse_text(text + "c: *a\n", "t.yaml")


@pytest.mark.parametrize(("text", "expected"), [
    ("x: !!int abc\n", "t.yaml:1: not valid YAML: 'abc' is not a !!int"),
    ("x: !!float huge\n", "t.yaml:1: not valid YAML: 'huge' is not a !!float"),
    ("x: !!bool maybe\n", "t.yaml:1: not valid YAML: 'maybe' is not a !!bool"),
    ("x: !!timestamp never\n", "t.yaml:1: not valid YAML: 'never' is not a !!timestamp"),
    ("x: {!!timestamp 2001-01-01: 1}\n", "t.yaml:1: not valid YAML: a key must be text, a number, true, false or null"),
    ("x: " + "7" * 5000 + "\n", "t.yaml:1: not valid YAML: a number of 5000 digits is longer than the 4300 digits"
                                " plantstub reads"),
    # PyYAML's words between ours and the tag, cut after 77 of its 500 characters
    (f"x: !{'t' * 500} 1\n", re.compile(f"t.yaml:1: not valid YAML: [^!]*'!{'t' * 79}…'")),
    (f"{'k' * 500}: 1\n{'k' * 500}: 2\n", f"t.yaml:2: not valid YAML: duplicate key '{'k' * 80}…' (first at line 1)"),
], ids=["int", "float", "bool", "timestamp", "date-key", "long-int", "long-tag", "long-duplicate-key"])
def test_parse_text_refuses_unreadable_scalars_in_its_own_words(text, expected):
    with pytest.raises(ValueError) as caught:
        parse_text(text, "t.yaml")
    if isinstance(expected, re.Pattern):
        assert expected.fullmatch(str(caught.value)), str(caught.value)
    else:
        assert str(caught.value).startswith(expected)
    assert len(str(caught.value)) < 200


# -- scenario files --------------------------------------------------------------------------------
def test_scenario_deep_and_bomb_files_are_refused_and_the_rest_loads(tmp_path):
    write(tmp_path, "deep.yaml", f"description: deep\nrules: []\nx: {deep_flow(50_000)}\n")
    write(tmp_path, "bomb.yaml", "description: bomb\nrules: []\n" + laughs())
    write(tmp_path, "loop.yaml", "description: loop\nrules: &r [*r]\n")
    write(tmp_path, "fine.yaml", "description: fine\nrules: []\n")
    with no_hang("the load"):  # about 5 ms: each is refused before it is built (in a spec, the bomb never ended)
        scenarios, errors = load_scenarios(tmp_path, SPEC)
    assert list(scenarios) == ["fine"]
    assert same([str(e) for e in errors], [
        f"{tmp_path / 'bomb.yaml'}:8: {BOMB}",
        too_deep(f"{tmp_path / 'deep.yaml'}:3"),
        f"{tmp_path / 'loop.yaml'}:2: an alias inside the anchored value it stands for: a loop, which JSON data cannot"
        " hold",
    ])


def test_scenario_anchors_and_merge_keys_still_load():
    scenario = load_scenario_file(SCENARIO_DATA / "good" / "anchors.yaml", SPEC)
    assert [r.replies[0].delay_ms for r in scenario.rules] == [0, 100]
    assert scenario.rules[1].replies[0].body == {"error": 400, "message": "Closed"}


# -- specs -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "text", "line", "reason"), [
    ("deep.yaml", spec_with_schema(deep_flow(50_000)), 11, None),  # None: too_deep()
    ("deep.json", '{"openapi": "3.1.0",\n"x": ' + deep_flow(50_000) + "}", 2, TOO_DEEP),  # plantstub's check only
    ("bomb.yaml", spec_with_schema("{type: array, enum: *a9}", "x-lol:\n" + laughs(indent="  ")), 9, BOMB),
], ids=["deep-yaml", "deep-json", "billion-laughs-enum"])
def test_spec_deep_and_bomb_documents_are_refused_with_file_and_line(tmp_path, name, text, line, reason):
    path = write(tmp_path, name, text)
    where = f"cannot use spec {path}:{line}"
    with no_hang("the load"):  # the bomb used 8 GB and never ended before
        assert same([spec_error(path)], [too_deep(where) if reason is None else f"{where}: {reason}"])


# -- nothing but a short excerpt of a value is quoted, and no file outside what the user named -----------
@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    """A file outside the spec's and scenarios' folders holding a recognisable secret."""
    path = tmp_path / "secret.txt"
    path.write_text(f"{SECRET} is the password\nanother line of it\n")
    return path


def ref_spec(folder: Path, ref: str) -> Path:
    folder.mkdir(exist_ok=True)
    return write(folder, "api.yaml", spec_with_schema(f"{{$ref: '{ref}'}}"))


def test_spec_ref_outside_its_folder_is_not_read(tmp_path, secret_file):
    path = ref_spec(tmp_path / "api", "../secret.txt")
    where = "paths./plants.post.responses.200.content.application/json.schema"
    assert spec_error(path) == (
        f"cannot use spec {path}: {where}: $ref '../secret.txt': {secret_file} is outside the spec's folder"
        f" {tmp_path / 'api'}; not read (--spec-root DIR lets $refs read files under DIR)")


@pytest.mark.parametrize("ref", ["/etc/passwd", "../secret.txt#/0", "inner.yaml", "link.yaml", "bad.yaml", "dup.yaml"])
def test_spec_ref_never_quotes_the_file_it_names(tmp_path, secret_file, ref):
    folder = tmp_path / "api"
    path = ref_spec(folder, ref)
    os.link(secret_file, folder / "inner.yaml")  # a hard link: inside the folder, but a text file, not YAML data
    (folder / "link.yaml").symlink_to(secret_file)
    write(folder, "bad.yaml", f"x: [{SECRET}\n")
    write(folder, "dup.yaml", f"{SECRET}: 1\n{SECRET}: 2\n")
    message = spec_error(path)
    assert SECRET not in message
    assert message.startswith(f"cannot use spec {path}: paths./plants.post.responses.200.content.application/json."
                              f"schema: $ref '{ref}': ")


def test_spec_ref_to_a_text_file_or_a_syntax_error_says_what_without_quoting(tmp_path, secret_file):
    folder = tmp_path / "api"
    path = ref_spec(folder, "inner.yaml")
    os.link(secret_file, folder / "inner.yaml")
    assert spec_error(path).endswith(
        "$ref 'inner.yaml': inner.yaml holds no YAML or JSON mapping or list, so nothing in it can be referenced")
    path = ref_spec(folder, "dup.yaml")
    write(folder, "dup.yaml", f"{SECRET}: 1\n{SECRET}: 2\n")
    assert spec_error(path).endswith("$ref 'dup.yaml': dup.yaml:2: not valid YAML")


def test_spec_value_in_a_refusal_is_cut_short(tmp_path):
    path = write(tmp_path, "api.yaml", spec_with_schema(f"{{type: '{SECRET}{'x' * 5000}'}}"))
    message = spec_error(path)
    assert len(message) < 500
    assert f"at type: '{SECRET}{'x' * (80 - len(SECRET))}…'" in message


def test_scenario_hard_link_to_another_file_is_not_quoted(tmp_path, secret_file):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    os.link(secret_file, folder / "leak.yaml")
    write(folder, "long.yaml", f"rules:\n  - match: {{path: '{SECRET}{'x' * 5000}'}}\n    reply: {{status: 200}}\n")
    assert scenario_errors(folder) == [
        f"{folder / 'leak.yaml'}:1: a scenario file holds a mapping (description:, rules:), not a string",
        f"{folder / 'long.yaml'}:2: rules[0].match.path: '{SECRET}{'x' * (80 - len(SECRET))}…' does not match '^/'",
    ]


def test_a_link_to_a_named_pipe_is_not_read(tmp_path):
    api, folder = tmp_path / "api", tmp_path / "scenarios"
    folder.mkdir()
    path = ref_spec(api, "pipe.yaml")
    for place in (api, folder):
        os.mkfifo(place / ".pipe")
        (place / "pipe.yaml").symlink_to(place / ".pipe")  # reading it would wait for a writer for ever
    assert spec_error(path).endswith("$ref 'pipe.yaml': pipe.yaml is not a regular file; not read")
    assert scenario_errors(folder) == [
        f"{folder / 'pipe.yaml'}: links to something that is not a regular file; not read"]
