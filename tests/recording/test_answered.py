"""Who answered (recording/answered.py) in JSON and in words, and the one verdict (recording/verdict.py) every view
asks: who broke the contract on a call, in the order of blame."""

from __future__ import annotations

import io
import json

import pytest

from plantstub._json import NO_BODY
from plantstub.recording.answered import (
    CHECK,
    CLIENT_LEFT,
    DEFAULT,
    PROXY,
    Answerer,
    answered_text,
    code_rule,
    scenario_rule,
)
from plantstub.recording.call import OBJECT_OVERHEAD, Call, Record
from plantstub.recording.requestlog import RequestLogger
from plantstub.recording.verdict import contract_problems, verdict_of

BROKE = {"url": "http://svc/plants", "status": 200, "valid": False, "errors": ["response.body.name: 42 is not of "
                                                                              "type 'string'"]}
KEPT = {"url": "http://svc/plants", "status": 200, "valid": True, "errors": []}
UNREACHABLE = {"url": "http://svc/plants", "status": None, "valid": False,
               "errors": ["upstream: http://svc/plants refused the connection; is the real service running?"]}


def record(answerer: Answerer, fault: str | None = None, upstream: dict | None = None, errors: tuple = (),
           stub_errors: tuple = ()) -> Record:
    return Record.of(1, 0.0, "POST", "/plants", "", (), b"{}", NO_BODY, not errors, errors, None, None,
                     None if fault else 200, {}, b"{}", True, fault, stub_errors, upstream, answerer)


@pytest.mark.parametrize(("answerer", "fault", "upstream", "json", "text"), [
    (DEFAULT, None, None, {"kind": "default"}, "default"),
    (CHECK, None, None, {"kind": "check"}, "check"),
    (CLIENT_LEFT, None, None, {"kind": "client_left"}, "client left"),
    (scenario_rule("closed", "rules[0]", "s/closed.yaml", 4), None, None,
     {"kind": "scenario", "scenario": "closed", "rule": "rules[0]", "at": "s/closed.yaml:4"},
     "scenario closed rules[0] (s/closed.yaml:4)"),
    (scenario_rule("closed", "rules[1].replies[1]", "s/closed.yaml", 9), "connection_reset", None,
     {"kind": "scenario", "scenario": "closed", "rule": "rules[1].replies[1]", "at": "s/closed.yaml:9",
      "fault": "connection_reset"}, "scenario closed rules[1].replies[1] (s/closed.yaml:9), fault connection_reset"),
    (code_rule("r2", "r2.replies[1]", "tests/test_x.py:12"), None, None,
     {"kind": "rule", "id": "r2", "rule": "r2.replies[1]", "at": "tests/test_x.py:12"},
     "rule r2.replies[1] (tests/test_x.py:12)"),
    (PROXY, None, BROKE, {"kind": "proxy", **BROKE}, "real service http://svc/plants"),
    (PROXY, None, UNREACHABLE, {"kind": "proxy", **UNREACHABLE}, "real service http://svc/plants (no answer)"),
], ids=["default", "check", "client-left", "scenario", "scenario-fault", "rule", "proxy", "proxy-no-answer"])
def test_answered_by_in_json_and_in_words(answerer, fault, upstream, json, text):
    kept = record(answerer, fault, upstream)
    assert kept.answered_by == json == kept.view().answered_by
    assert Call.from_dict(kept.view().to_dict()).answered_by == json  # read back over the admin API
    assert answered_text(json) == text


def test_a_call_from_a_stub_without_the_field_says_unknown():
    data = record(DEFAULT).view().to_dict()
    del data["answered_by"]
    assert answered_text(Call.from_dict(data).answered_by) == "unknown"


def test_only_a_rule_from_codes_answerer_is_counted_in_the_record():
    """The others are shared (constants, or one per scenario reply): a call holds a reference to them."""
    plain = record(DEFAULT).size
    assert record(scenario_rule("s", "rules[0]", "f.yaml", 1)).size == plain
    assert record(code_rule("r1", "r1", "t.py:3")).size == plain + OBJECT_OVERHEAD


@pytest.mark.parametrize(("errors", "stub_errors", "upstream", "problems", "verdict"), [
    ((), (), None, {}, "ok"),
    ((), (), KEPT, {}, "ok"),
    ((), (), UNREACHABLE, {}, "ok"),  # the service did not answer: it broke nothing (a 502 of ours)
    ((), (), BROKE, {"upstream": BROKE["errors"]}, "upstream"),
    (("body.id: bad",), (), None, {"invalid": ["body.id: bad"]}, "invalid"),
    ((), ("rule r1 sent a reply that breaks the contract: x",), None,
     {"stub": ["rule r1 sent a reply that breaks the contract: x"]}, "stub"),
    (("body.id: bad",), (), BROKE, {"invalid": ["body.id: bad"], "upstream": BROKE["errors"]}, "invalid"),
], ids=["ok", "proxied-ok", "unreachable", "service-broke", "request-broke", "stub-broke", "both"])
def test_who_broke_the_contract_in_the_order_of_blame(errors, stub_errors, upstream, problems, verdict):
    assert contract_problems(errors, stub_errors, upstream) == problems
    assert list(contract_problems(errors, stub_errors, upstream)) == list(problems)  # the order of blame
    assert verdict_of(problems) == verdict
    kept = record(PROXY if upstream else DEFAULT, None, upstream, errors, stub_errors)
    assert (kept.problems, kept.verdict) == (problems, verdict)
    assert (kept.view().problems, kept.view().verdict) == (problems, verdict)  # the Call view asks the same


def test_the_request_log_says_who_answered_and_that_the_real_service_broke_the_contract():
    text, lines = io.StringIO(), io.StringIO()
    broke = record(PROXY, None, BROKE)
    RequestLogger("text", text).log(broke)
    RequestLogger("json", lines).log(broke)
    assert text.getvalue() == ("plantstub: #1 POST /plants -> 200 [-] valid REAL SERVICE BROKE THE CONTRACT: "
                               "response.body.name: 42 is not of type 'string'\n")
    assert json.loads(lines.getvalue())["answered_by"] == {"kind": "proxy", **BROKE}
    RequestLogger("text", text := io.StringIO()).log(record(PROXY, None, UNREACHABLE))  # it broke nothing
    assert text.getvalue() == "plantstub: #1 POST /plants -> 200 [-] valid\n"
