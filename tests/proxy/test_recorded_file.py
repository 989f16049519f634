"""Issue 37, item 2: the file --record and `import-har` write holds the rules built and nothing else, whatever text
came from traffic: a property over hostile methods, paths, keys, values, problem texts and source names (every line
break YAML knows, controls, quotes, comment marks, texts YAML would read as another type), read back by the scenario
loader itself. Through the user's entry points: tests/integration/test_record_safety.py."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from plantstub.proxy.recorded_file import Document, comment, unwritable
from plantstub.scenarios.document import ScenarioDocument

BREAKS = ["\n", "\r", "\r\n", "\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x00", "\x1b", "\x7f", "\ufeff", "\ud800",
          "\ufffe", "\u202e", "\\"]
YAMLISH = ["#", ": ", "- ", "? ", "&a", "*a", "!!python/object", "{", "}", "[", "]", "'", '"', "|", ">", "%YAML", "---",
           "...", "validate_requests: false", "rules: []", "yes", "1e3", "0o17", "0x1F", ".inf", "~", "null", "12:30",
           "<<", "@", "`"]
HOSTILE = st.lists(st.one_of(st.sampled_from(BREAKS + YAMLISH), st.text(max_size=8)), max_size=12).map("".join)
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), HOSTILE),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(HOSTILE, children, max_size=4)),
    max_leaves=20)


def rule(method: str, path: str, body: object, answer: object) -> dict:
    return {"match": {"method": method, "path": path, "query": {"q": path}, "body": body},
            "reply": {"status": 200, "headers": {"Content-Type": path}, "body": answer}}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=HOSTILE, left_out=st.lists(HOSTILE, max_size=5),
       rules=st.lists(st.builds(rule, HOSTILE, HOSTILE, JSON_VALUES, JSON_VALUES), max_size=3))
def test_no_text_from_traffic_sets_a_key_or_breaks_the_file(source, left_out, rules):
    assume(unwritable(rules) is None)  # build() leaves such a rule out, saying why (below)
    text = Document(rules, left_out, len(rules)).text(source)
    read = ScenarioDocument("recorded.yaml", text)
    assert read.errors == []
    shown = re.sub("[\ud800-\udfff]", "\ufffd", source)  # a file name's undecodable bytes, shown as such
    assert read.data == {"description": f"Recorded from {shown}.", "rules": rules}  # exactly what was built
    head = text.split("\ndescription: ", 1)[0].split("\n")
    assert len(head) == 1 + (1 + len(left_out) if left_out else 0)  # one line each
    assert all(line.startswith("# ") for line in head)


def test_a_comment_escapes_what_could_end_its_line():
    assert comment("a\nb\rc\x85d\u2028e\u2029f\\g\x00h\u202ei") == "# a\\x0ab\\x0dc\\x85d\\u2028e\\u2029f\\\\g\\x00h\\u202ei"
    assert comment("Tab\tand ü 漢字 😀 stay") == "# Tab\tand ü 漢字 😀 stay"


def test_a_lone_surrogate_is_named_as_what_a_file_cannot_hold():
    assert unwritable({"a": ["x", {"k\udc80": 1}]}) == ("it holds a lone surrogate (\\udc80), which JSON's escapes allow "
                                                       "and a YAML file cannot hold")
    assert unwritable({"a": ["x", "\U0001f600"]}) is None
