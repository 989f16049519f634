"""read_events(): a spec's YAML built straight from libyaml's events reads as JsonSafeLoader reads it, and whatever
it leaves to JsonSafeLoader (tags, merge keys, duplicates, errors) is read or refused in JsonSafeLoader's words."""

from __future__ import annotations

import math

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plantstub._yaml import parse_text, read_events
from plantstub._yaml_events import _Unusual
from plantstub._yaml_loaders import JsonSafeLoader
from tests.helpers import SPECS, examples


def full(text: str) -> object:
    return yaml.load(text, Loader=JsonSafeLoader)


def same(a: object, b: object) -> bool:
    """Equal, NaN included."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("path", sorted(SPECS.rglob("*.yaml")), ids=lambda p: p.name)
def test_every_yaml_spec_of_the_tests_reads_the_same(path):
    text = path.read_text(encoding="utf-8")
    try:
        fast = read_events(text)
    except _Unusual:
        return  # left to JsonSafeLoader, which parse_text uses then
    assert same(fast, full(text))


WORDS = ["true", "True", "TRUE", "false", "yes", "NO", "on", "null", "Null", "~", "", "0", "007", "-12", "+3", "0o17",
         "0x1F", "0b11", "1.5", "1.", ".5", "1e3", "-1E-3", ".inf", "-.Inf", ".NaN", "1_000", "18:00", "2001-01-01",
         "2001-01-01T00:00:00Z", "x", "<<", "- x", "a: b", "#", "'q'", '"dq"', "é", "7" * 30]
SCALAR = st.one_of(st.sampled_from(WORDS), st.text(max_size=8), st.integers(), st.floats(), st.booleans(), st.none())
DATA = st.recursive(SCALAR, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(st.sampled_from(WORDS), st.text(max_size=5), st.integers()),
                                                 inner, max_size=4)), max_leaves=20)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(DATA, st.sampled_from([{}, {"default_flow_style": True}, {"default_style": '"'}, {"default_style": "'"},
                              {"canonical": True}, {"width": 2}]))
def test_any_document_reads_as_json_safe_loader_reads_it(data, style):
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, **style)
    for variant in (text, text.replace("'", ""), text.replace('"', "")):  # quoted words then read plain
        try:
            expected = full(variant)
        except yaml.YAMLError:
            with pytest.raises(_Unusual):
                read_events(variant)
            continue
        try:
            fast = read_events(variant)
        except _Unusual:
            continue
        assert same(fast, expected), variant


@pytest.mark.parametrize("text", [
    "a: !!str 1\n", "a: ! 12\n", "base: &b {x: 1}\nuse: {<<: *b, y: 2}\n", "a: 1\na: 2\n", "1: a\n1.0: b\n",
    ".nan: 1\n.nan: 2\n", "? [a]\n: 1\n", "&a k: 1\n*a : 2\n", "a: &x 1\nb: &x 2\n", "a: &x [&x 1]\n", "a: *nowhere\n",
    "--- 1\n--- 2\n", "a: [1\n", "x: !!set {a}\n", "x: " + "7" * 5000 + "\n",
], ids=["tag", "bang", "merge", "duplicate", "int-float-keys", "nan-keys", "complex-key", "alias-key", "anchor-twice",
        "anchor-inside-itself", "undefined-alias", "two-documents", "syntax", "set", "long-int"])
def test_the_unusual_is_left_to_json_safe_loader(text):
    with pytest.raises(_Unusual):
        read_events(text)
    try:
        expected: object = full(text)
    except yaml.YAMLError as exc:
        with pytest.raises(ValueError) as caught:
            parse_text(text, "t.yaml")
        assert str(caught.value).startswith("t.yaml:") and type(exc).__name__.endswith("Error")
        return
    assert same(parse_text(text, "t.yaml"), expected)


def test_aliases_share_their_value_as_json_safe_loader_does():
    value = read_events("a: &x {b: [1]}\nc: *x\nd: [*x, *x]\n")
    assert value["a"] is value["c"] is value["d"][0] is value["d"][1]


def test_values_are_counted_before_composing_keys_left_out_aliases_in():
    from plantstub._yaml import DocumentLimit
    from plantstub._yaml_loaders import LineMarkedLoader

    def load(text: str, most: int) -> object:
        loader = LineMarkedLoader(text, most)
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()

    assert load("a: 1\nb: [2, 3]\n", 5) == {"a": 1, "b": [2, 3]}  # the mapping, 1, the list, 2, 3: keys do not count
    with pytest.raises(DocumentLimit) as caught:
        load("a: 1\nb: [2, 3]\nc: 4\n", 5)
    assert (caught.value.line, caught.value.reason) == (3, "too large: more than the 5 values plantstub reads in one "
                                                           "file (each list item and mapping value counts); split it into several files")
    with pytest.raises(DocumentLimit, match=r"^too large: .* counts, aliases expanded\)") as caught:
        load("a: &x [1, 2, 3]\nb: *x\n", 7)
    assert caught.value.line == 2


@pytest.mark.parametrize("data", [
    b"a: 1\r\nb: 'two\r\n  lines'\r\nc: |\r\n  kept\r\n  text\r\n", b"\xef\xbb\xbfa: [1, 2]\n", b"a: 1\rb: x\r",
    "t\u00eftle: caf\u00e9 \u2014 \U0001f331\n".encode(), b'{\t"a": 1}', b"a: !!str 1\n", b"a: \xff\n", b"a: \xed\xa0\x80\n",
    "a: 1\n".encode("utf-16"), b"a: [1\n", b"x: &a [*a]\n", b"a:\x00 1\n", b"a: \"\\r\\n\"\nb: 'x\r\n\r\n  y'\n",
], ids=["crlf", "bom", "cr", "unicode", "json-tab", "tag", "not-utf8", "surrogate", "utf16", "syntax", "alias-loop",
        "nul", "escapes"])
def test_a_file_read_from_its_bytes_reads_or_is_refused_as_its_text(data):
    """parse_bytes() hands a YAML file's bytes to libyaml (no text copy beside them): the same value, or the same
    refusal, as decode_text() and parse_text()."""
    from plantstub._yaml import decode_text, parse_bytes

    try:
        expected: object = parse_text(decode_text(data, "t.yaml"), "t.yaml")
    except ValueError as exc:
        with pytest.raises(ValueError) as caught:
            parse_bytes(data, "t.yaml")
        assert str(caught.value) == str(exc)
        return
    assert same(parse_bytes(data, "t.yaml"), expected)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(DATA, st.sampled_from(["\n", "\r\n", "\r"]), st.booleans())
def test_any_document_reads_the_same_from_its_bytes(data, newline, bom):
    from plantstub._yaml import decode_text, parse_bytes

    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True).replace("\n", newline)
    raw = (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8", "surrogatepass")
    try:
        expected: object = parse_text(decode_text(raw, "t.yaml"), "t.yaml")
    except ValueError as exc:
        with pytest.raises(ValueError) as caught:
            parse_bytes(raw, "t.yaml")
        assert str(caught.value) == str(exc)
        return
    assert same(parse_bytes(raw, "t.yaml"), expected)
