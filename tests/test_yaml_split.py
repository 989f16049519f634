"""A big block-YAML document read in two processes (plantstub/_yaml_split.py) reads exactly as it reads in one:
the same value in the same order, or the same error, whatever the cut falls on."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plantstub import _yaml_split
from plantstub._yaml import _Unusual, parse_text, read_events
from tests.synthetic import big_document


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: object) -> bool:
        return True


def block(data: object) -> str:
    """`data` as block YAML, as generators of OpenAPI documents write it."""
    return yaml.dump(data, Dumper=_NoAliases, sort_keys=False, default_flow_style=False, allow_unicode=True)


@pytest.fixture
def children(monkeypatch):
    """Split every document, however small, and count the child processes started."""
    started = []
    real = subprocess.Popen

    def popen(*args, **kwargs):
        started.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(_yaml_split, "MIN_SPLIT", 0)
    monkeypatch.setattr(_yaml_split.subprocess, "Popen", popen)
    return started


def outcome(text: str) -> object:
    """What parse_text makes of `text`: its value as JSON text (order and all), or its error's words."""
    try:
        return json.dumps(parse_text(text, "spec.yaml"))
    except ValueError as exc:
        return f"error: {exc}"


def test_a_big_document_reads_the_same_in_two_processes(children, monkeypatch):
    text = block(big_document(200, 200))
    split = outcome(text)
    monkeypatch.setattr(_yaml_split, "MIN_SPLIT", 10**12)
    assert (split, len(children)) == (outcome(text), 1)
    _, second, path = _yaml_split._halves(text)
    assert path == ["components", "schemas"]  # the middle falls among the schemas: cut there, under both keys
    assert second.startswith("components:\n  schemas:\n    entity")


@pytest.mark.parametrize(("text", "why"), [
    ("a:\n  x: 1\nb: 2\na: 3\n", "a key in both halves"),
    ("a: 'one\nb: two'\nc: 3\n", "a quoted scalar across the cut"),
    ("a: {x: 1,\nb: 2}\nc: 3\n", "a flow mapping across the cut"),
    ("a: 1\nb:\n  c: 2\n  cc: 5\n d: 3\n  e: 4\n  f: 5\ng: 6\n", "a line indented between two levels"),
    ("a: 1\nb:\n  c: 2\n  cc: 5\n  e: 4\n d: 3\n  f: 5\ng: 6\n", "the same, in the second half"),
    ("a:\n  b:\n    c: 1\n    d: 2\n    e: 3\n    f: 4\n", "a cut two levels down"),
    ("a:\n  b:\n    c: 1\n    d: 2\n    c: 3\n    f: 4\n", "a key in both halves, two levels down"),
    ("a: |\nb: 2\nc: 3\n", "an empty block scalar before the cut"),
    ("a: 1\n\"b\": 2\n'c': 3\n", "quoted keys"),
    ("# a comment\na: 1\nb: 2\nc: [1, 2]\n", "a comment first"),
])
def test_what_a_cut_could_change_reads_as_the_whole_text_does(children, monkeypatch, text, why):
    split = outcome(text)
    assert len(children) == 1  # it was cut, and the second half read by a child process
    monkeypatch.setattr(_yaml_split, "MIN_SPLIT", 10**12)
    assert split == outcome(text), why


@pytest.mark.parametrize(("text", "why"), [
    ("a: &x 1\nb: 2\nc: *x\n", "an alias"),
    ("a: 1\nb: !!str 2\nc: 3\n", "a tag"),
    ("a: 1\nb: 2\n---\nc: 3\n", "two documents"),
    ("a: 1\nb: 2\n...\nc: 3\n", "a document's end"),
    ("- a\n- b\n", "a list, not a mapping"),
    ("{a: 1,\nb: 2}\n", "a flow mapping"),
])
def test_what_a_cut_would_change_is_read_in_one_piece(children, text, why):
    outcome(text)
    assert children == [], why


def test_a_child_that_cannot_start_leaves_the_whole_text_to_this_process(children, monkeypatch):
    text = block(big_document(20, 20))
    monkeypatch.setattr(_yaml_split.sys, "executable", "/nonexistent/python")
    assert outcome(text) == json.dumps(read_events(text))


# -- the cut itself, without a second process ------------------------------------------------------
KEYS = st.text("abcxyz/_-. 0123456789", min_size=1, max_size=6).filter(lambda k: k.strip() == k)
VALUES = st.recursive(
    st.one_of(st.integers(), st.booleans(), st.none(), st.text(max_size=12), st.sampled_from(["a\nb", "x: y", "- z"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=4)), max_leaves=25)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.dictionaries(KEYS, VALUES, min_size=2, max_size=8), st.sampled_from([{}, {"indent": 4}, {"width": 10}]))
def test_the_two_halves_merged_are_the_whole(data, style):
    text = yaml.dump(data, Dumper=_NoAliases, sort_keys=False, default_flow_style=False, allow_unicode=True, **style)
    try:
        first, second, path = _yaml_split._halves(text)
    except _yaml_split._NoSplit:
        return
    try:
        whole = read_events(text)
    except _Unusual:
        return
    try:
        merged = _yaml_split._merged(read_events(first), read_events(second), path)
    except (_Unusual, _yaml_split._NoSplit):
        return  # the caller reads the whole text instead
    assert json.dumps(merged) == json.dumps(whole)


def test_a_child_that_answers_nonsense_leaves_the_whole_text_to_this_process(children, monkeypatch, tmp_path):
    text = block(big_document(20, 20))
    other = tmp_path / "not-python"
    other.write_text("#!/bin/sh\necho nonsense\n")
    other.chmod(0o755)
    monkeypatch.setattr(_yaml_split.sys, "executable", str(other))
    assert outcome(text) == json.dumps(read_events(text))
    assert len(children) == 1
