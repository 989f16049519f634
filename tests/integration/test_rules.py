"""Rules from code (`stub.when(...)`, admin `/__plantstub/rules`) and `wait_for_calls`, over HTTP against a Stub."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from plantstub import CallAssertionError, Stub
from plantstub.errors import ScenarioError
from tests.helpers import HANG, JSON_AUTH, ServeProcess, write


def call(url: str, method: str, path: str, body=None, headers=JSON_AUTH):
    """(status, parsed JSON body) of one request."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def plant(url: str, name: str, headers=JSON_AUTH):
    return call(url, "POST", "/plants", {"id": 1, "name": name}, headers)


CLOSED = {"error": 503, "message": "closed"}
DEEP = {"match": {"body": json.loads("[" * 70 + "]" * 70)}, "reply": {"status": 200}}


@pytest.fixture
def stub(tmp_path):
    write(tmp_path, "closed.yaml", "rules:\n  - match: {path: /plants}\n    reply: {status: 400, body: {error: 1, message: scenario}}\n")
    with Stub(scenarios=tmp_path) as running:
        yield running


# -- rules from Python ------------------------------------------------------------------------------
def test_when_reply_answers_matching_requests_only(stub):
    handle = stub.when(method="POST", path="/plants", body={"name": "Cactus"}).reply(400, CLOSED, {"X-Why": "test"})
    assert plant(stub.url, "Cactus") == (400, CLOSED)
    assert plant(stub.url, "Fern") == (200, {"name": "Fern"})
    assert handle.id == "r1" and handle.uses == 1
    first, second = stub.calls
    assert (first.rule, first.response["headers"]["X-Why"], second.rule) == ("r1", "test", None)


def test_when_replies_in_turn_and_the_last_repeats(stub):
    stub.when(path="/plants").replies([{"status": 400, "body": CLOSED}, {"status": 200, "body": {"name": "{{ request.body.name }}"}}])
    assert [plant(stub.url, "Fern")[0] for _ in range(3)] == [400, 200, 200]
    assert [c.rule for c in stub.calls] == ["r1.replies[0]", "r1.replies[1]", "r1.replies[1]"]


def test_when_fault_drops_the_connection(stub):
    stub.when(path="/plants", body={"name": "Unplugged"}).fault("connection_reset")
    with pytest.raises((ConnectionError, urllib.error.URLError)):
        plant(stub.url, "Unplugged")
    assert stub.calls[0].response.get("fault") == "connection_reset"


def test_when_times_then_falls_through_to_the_scenario(stub):
    stub.use("closed")
    stub.when(path="/plants", times=2).reply(200, {"name": "code"})
    statuses = [plant(stub.url, "Fern") for _ in range(3)]
    assert statuses == [(200, {"name": "code"}), (200, {"name": "code"}), (400, {"error": 1, "message": "scenario"})]
    assert [(c.scenario, c.rule) for c in stub.calls] == [("closed", "r1"), ("closed", "r1"), ("closed", "rules[0]")]


def test_rules_from_code_come_before_the_active_scenario_in_declaration_order(stub):
    stub.use("closed")
    stub.when(path="/plants", body={"name": "Fern"}).reply(200, {"name": "first"})
    stub.when(path="/plants").reply(200, {"name": "second"})
    assert plant(stub.url, "Fern") == (200, {"name": "first"})
    assert plant(stub.url, "Ivy") == (200, {"name": "second"})


def test_reset_removes_the_rules_and_a_handle_cannot_reach_a_newer_one(stub):
    old = stub.when(path="/plants").reply(400, CLOSED)
    stub.reset()
    assert stub.rules == []
    assert plant(stub.url, "Fern")[0] == 200
    new = stub.when(path="/plants").reply(400, CLOSED)
    assert new.id == "r2" and old.remove() is False
    assert new.remove() is True and plant(stub.url, "Fern")[0] == 200


def test_a_rule_breaking_the_contract_raises_at_the_tests_own_line(stub):
    with pytest.raises(ScenarioError) as caught:
        stub.when(path="/plants").reply(418)  # this line is in the message
    error = caught.value
    assert error.file.endswith("test_rules.py")
    source = Path(__file__).read_text(encoding="utf-8").splitlines()
    assert "reply(418)" in source[error.line - 1]
    assert str(error) == (f"{error.file}:{error.line}: reply.status: 418 is not declared for POST /plants (declared: "
                          "200, 400); add `off_contract: true` to this rule to serve it anyway")
    assert stub.rules == []


@pytest.mark.parametrize(
    ("declare", "expected"),
    [
        (lambda s: s.when(path="/plant").reply(200), "match.path: /plant matches no path in the spec (paths: /plants)"),
        (lambda s: s.when(path="/plants").reply(200, {"nam": 1}), "reply.body: 'name' is a required property (POST /plants response 200)"),
        (lambda s: s.when(path="/plants", times=1).replies([{"status": 200}, {"status": 400}]),
         "times: is 1 but 2 replies are listed, so replies[1] would never answer; raise `times` or remove those replies"),
        (lambda s: s.when(path="/plants").fault("explode"), "reply.fault: 'explode' is not one of ['connection_reset', 'empty_reply', 'malformed_body']"),
        (lambda s: s.when(headers={"X-A": {"$regx": "a"}}).reply(200), "match.headers.X-A: unknown key '$regx' (did you mean '$regex'?)"),
    ],
    ids=["path", "body", "times", "fault", "matcher"],
)
def test_rule_errors_read_as_a_scenario_files(stub, declare, expected):
    with pytest.raises(ScenarioError) as caught:
        declare(stub)
    assert str(caught.value).split(": ", 1)[1] == expected


def test_a_rule_holding_something_that_is_not_json_is_refused(stub):
    with pytest.raises(ScenarioError, match=r"test_rules\.py:\d+: match\.body\.tags: a set is not a JSON value$"):
        stub.when(path="/plants", body={"tags": {"a", "b"}}).reply(200)
    assert stub.rules == []


def test_declare_takes_a_whole_rule_and_names_the_callers_line(stub):
    rule_id = stub.declare({"match": {"path": "/plants"}, "times": 1, "reply": {"status": 400, "body": CLOSED}})
    assert [plant(stub.url, "Fern")[0] for _ in range(2)] == [400, 200] and stub.rules[0]["id"] == rule_id
    with pytest.raises(ScenarioError, match=r"test_rules\.py:\d+: match: unknown key 'pth'"):
        stub.declare({"match": {"pth": "/plants"}, "reply": {}})


def test_off_contract_serves_what_the_spec_does_not_declare(stub):
    stub.when(path="/plants", off_contract=True).reply(418, {"teapot": True})
    assert plant(stub.url, "Fern") == (418, {"teapot": True})


def test_the_rule_is_copied_when_declared(stub):
    body = {"name": "Fern"}
    stub.when(path="/plants").reply(200, body)
    body["name"] = "changed later"
    assert plant(stub.url, "Ivy") == (200, {"name": "Fern"})


def test_two_hundred_rules_declared_one_after_another_all_answer(stub):
    # The time a declaration takes is tests/benchmarks/declare_rules.py's to print, not this test's.
    for i in range(200):
        stub.when(path="/plants", body={"name": f"n{i}"}).reply(200, {"name": "x"})
    assert len(stub.rules) == 200 and plant(stub.url, "n199") == (200, {"name": "x"})


def test_many_rules_keep_declaration_order(stub):
    for i in range(300):
        stub.when(path="/plants", body={"name": f"n{i}"}).reply(200, {"name": f"rule {i}"})
    stub.when(path="/plants").reply(200, {"name": "catch-all"})
    stub.when(path="/plants", body={"name": "n7"}).reply(200, {"name": "too late"})
    assert plant(stub.url, "n7") == (200, {"name": "rule 7"})
    assert plant(stub.url, "other") == (200, {"name": "catch-all"})
    assert stub.remove_rule("r8") and plant(stub.url, "n7") == (200, {"name": "catch-all"})


def test_rules_are_bounded_in_number(stub, monkeypatch):
    monkeypatch.setattr("plantstub.scenarios.declared.MAX_RULES", 2)
    stub.when(path="/plants").reply(200)
    stub.when(path="/plants").reply(200)
    with pytest.raises(ScenarioError, match="2 rules from code are declared already; remove some"):
        stub.when(path="/plants").reply(200)
    assert call(stub.url, "POST", "/__plantstub/rules", {"match": {}, "reply": {}})[0] == 400


def test_a_rule_checked_while_others_filled_the_count_is_refused_as_too_many(stub, monkeypatch):
    # POST rules checks a rule in a thread, then keeps it on the loop: others may be declared in between.
    monkeypatch.setattr("plantstub.scenarios.declared.MAX_RULES", 2)
    session = stub._live()
    data = {"match": {"path": "/plants"}, "reply": {"status": 200}}
    checked = session.check_rule(data, "POST /__plantstub/rules")  # room for it then
    stub.when(path="/plants").reply(200)
    stub.when(path="/plants").reply(200)
    with pytest.raises(ScenarioError, match="2 rules from code are declared already; remove some"):
        stub._call(session.keep_rule, checked, data, "POST /__plantstub/rules")
    assert len(stub.rules) == 2


def test_a_rule_from_code_sends_its_webhooks_as_a_scenario_rule_does():
    from tests.helpers import Receiver

    with Receiver() as receiver, Stub(spec="plant-store-full", webhook=[receiver.url]) as stub:
        stub.declare({"match": {"method": "POST", "path": "/plants"}, "reply": {"status": 200, "body": {"name": "x"}},
                      "webhooks": [{"name": "/plant/webhook", "body": {"id": 9, "name": "{{ request.body.name }}"}}]})
        assert plant(stub.url, "Fern") == (200, {"name": "x"})
        [delivery] = stub.wait_for_deliveries(1, timeout=HANG)
        assert delivery.body == {"id": 9, "name": "Fern"}
        with pytest.raises(ScenarioError, match=r"webhooks\[0\]\.name: 'nope' is not a webhook of the spec"):
            stub.declare({"match": {"path": "/plants"}, "reply": {}, "webhooks": [{"name": "nope"}]})


# -- the admin API --------------------------------------------------------------------------------
def test_admin_rules_post_get_delete(stub):
    rule = {"match": {"path": "/plants", "headers": {"X-Tenant": {"$regex": "^ac"}}}, "reply": {"status": 400, "body": CLOSED}}
    assert call(stub.url, "POST", "/__plantstub/rules", rule) == (201, {"id": "r1"})
    assert plant(stub.url, "Fern", {**JSON_AUTH, "X-Tenant": "acme"}) == (400, CLOSED)
    assert plant(stub.url, "Fern")[0] == 200
    assert call(stub.url, "GET", "/__plantstub/rules") == (200, {"rules": [
        {"id": "r1", "source": "POST /__plantstub/rules", "uses": 1, "rule": rule}]})
    assert stub.rules[0]["id"] == "r1"  # the Python API shows the same
    assert call(stub.url, "POST", "/__plantstub/rules", rule) == (201, {"id": "r2"})
    assert call(stub.url, "DELETE", "/__plantstub/rules/r1") == (200, {"deleted": 1})
    assert call(stub.url, "DELETE", "/__plantstub/rules/r1") == (404, {"error": 404, "message": "path: no rule 'r1' (rules: r2)"})
    assert call(stub.url, "DELETE", "/__plantstub/rules") == (200, {"deleted": 1})
    assert call(stub.url, "GET", "/__plantstub/rules") == (200, {"rules": []})


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"match": {"path": "/plants"}, "reply": {"status": 418}},
         "body.reply.status: 418 is not declared for POST /plants (declared: 200, 400); add `off_contract: true` to this rule to serve it anyway"),
        ({"match": {"path": "/plants"}}, "body: has no `reply:`; add `reply:` (one answer) or `replies:` (successive answers, the last repeats)"),
        ({"match": {"body": {"name": {"$regex": "("}}}, "reply": {"status": 200}}, "body.match.body.name.$regex: '(' is not a regular expression"),
        ([1], "body: a list is not of type 'object'"),
        (DEEP, "body: nested more than 64 levels deep"),
    ],
    ids=["contract", "no-reply", "bad-regex", "not-a-rule", "too-deep"],
)
def test_admin_rule_problems_answer_400_with_the_problem(stub, body, message):
    status, answer = call(stub.url, "POST", "/__plantstub/rules", body)
    assert status == 400 and answer["error"] == 400
    assert answer["message"].startswith(message), answer["message"]
    assert stub.rules == []


def test_admin_rule_problems_come_apart_too_and_a_client_may_name_the_source(stub):
    request = urllib.request.Request(stub.url + "/__plantstub/rules", method="POST", headers={
        **JSON_AUTH, "X-Plantstub-Source": "tests/test_x.py:12"}, data=json.dumps({"match": {"path": "/plant"}, "reply": {}}).encode())
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    assert json.loads(caught.value.read())["problems"] == [
        {"at": "body.match.path", "message": "/plant matches no path in the spec (paths: /plants)"}]
    request.data = json.dumps({"match": {"path": "/plants"}, "reply": {}}).encode()
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 201
    assert stub.rules[0]["source"] == "tests/test_x.py:12"


def test_admin_rule_with_a_body_that_is_not_json_is_refused(stub):
    request = urllib.request.Request(stub.url + "/__plantstub/rules", data=b"{nope", method="POST", headers=JSON_AUTH)
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    assert caught.value.code == 400
    assert json.loads(caught.value.read())["message"].startswith("body: not valid JSON")


def test_admin_rules_against_plantstub_serve(tmp_path):
    server = ServeProcess("--port", "0", "--scenarios", str(tmp_path))
    try:
        status, created = call(server.url, "POST", "/__plantstub/rules",
                               {"match": {"body": {"name": "Cactus"}}, "times": 1, "reply": {"status": 400, "body": CLOSED}})
        assert (status, created) == (201, {"id": "r1"})
        assert [plant(server.url, "Cactus")[0] for _ in range(2)] == [400, 200]
        assert call(server.url, "POST", "/__plantstub/reset", {})[0] == 200
        assert call(server.url, "GET", "/__plantstub/rules") == (200, {"rules": []})
    finally:
        server.stop()


# -- wait_for_calls ---------------------------------------------------------------------------------
def later(seconds: float, fn, *args) -> threading.Timer:
    timer = threading.Timer(seconds, fn, args)
    timer.start()
    return timer


def test_wait_for_calls_returns_once_they_arrive(stub):
    plant(stub.url, "Fern")
    timer = later(0.2, plant, stub.url, "Ivy")
    found = stub.wait_for_calls(2, method="POST", path="/plants")
    timer.join()
    assert [c.body["name"] for c in found] == ["Fern", "Ivy"]


def test_wait_for_calls_filters_like_assert_called(stub):
    timers = [later(0.1, plant, stub.url, "Fern"), later(0.2, plant, stub.url, "Cactus", {**JSON_AUTH, "X-Tenant": "acme"})]
    found = stub.wait_for_calls(1, body={"name": "Cactus"}, headers={"X-Tenant": {"$regex": "^ac"}}, status=200)
    for timer in timers:
        timer.join()
    assert [c.body["name"] for c in found] == ["Cactus"]


def test_wait_for_calls_times_out_with_what_arrived_and_the_closest(stub):
    plant(stub.url, "Cactos")
    with pytest.raises(CallAssertionError) as caught:
        stub.wait_for_calls(1, timeout=0.2, method="POST", body={"name": "Cactus"})
    assert str(caught.value) == (
        "plantstub: waited 0.2 s for 1 call POST with body {'name': 'Cactus'}; got 0.\n"
        "1 call recorded:\n"
        "  #1 POST   /plants  200\n"
        "Closest: #1 POST /plants\n"
        "  method     'POST'        ok\n"
        "  body.name  'Cactos'      expected 'Cactus'   <<<<<"
    )


def test_wait_for_calls_refuses_a_bad_count_or_timeout(stub):
    with pytest.raises(ValueError, match=r"^n: -1 is not a count of calls \(0 or more\)$"):
        stub.wait_for_calls(-1)
    with pytest.raises(ValueError, match=r"^timeout: -1 is not 0 to 600 seconds$"):
        stub.wait_for_calls(1, timeout=-1)
    assert stub.wait_for_calls(0, timeout=0) == []


def test_wait_for_calls_refuses_an_unknown_filter(stub):
    with pytest.raises(TypeError, match=r"^wait_for_calls\(\): bodi: unknown filter \(known: method, path, headers"):
        stub.wait_for_calls(1, bodi={"name": "x"})


def test_admin_wait_for_calls_long_polls(stub):
    timer = later(0.2, plant, stub.url, "Ivy")
    status, answer = call(stub.url, "POST", "/__plantstub/calls/wait", {"n": 1, "timeout": 5, "body": {"name": "Ivy"}})
    timer.join()
    assert status == 200 and answer["arrived"] is True and answer["message"] is None
    assert [c["body"]["name"] for c in answer["calls"]] == ["Ivy"]
    status, answer = call(stub.url, "POST", "/__plantstub/calls/wait", {"n": 2, "timeout": 0.1, "path": "/plants"})
    assert (status, answer["arrived"], len(answer["calls"])) == (200, False, 1)
    assert answer["message"].startswith("plantstub: waited 0.1 s for 2 calls /plants; got 1.\n")
    assert call(stub.url, "POST", "/__plantstub/calls/wait", {"n": 1, "colour": 1})[1]["message"] == (
        "body.colour: unknown filter (known: method, path, headers, query, body, status)")
    assert call(stub.url, "POST", "/__plantstub/calls/wait", {"n": 1, "timeout": 3600})[1]["message"] == (
        "body.timeout: 3600 is not 0 to 600 seconds")


def test_a_waiter_does_not_hold_up_other_requests(stub):
    # While the admin long-poll waits, the stub keeps answering (the wait is not a busy loop on the event loop).
    results = []
    waiter = threading.Thread(target=lambda: results.append(
        call(stub.url, "POST", "/__plantstub/calls/wait", {"n": 3, "timeout": 10, "path": "/plants"})))
    waiter.start()
    assert [plant(stub.url, n)[0] for n in ("a", "b", "c")] == [200, 200, 200]
    waiter.join(10)
    assert results[0][1]["arrived"] is True


def test_reset_wakes_a_waiter_that_then_counts_afresh(stub):
    plant(stub.url, "Fern")
    timers = [later(0.1, stub.reset), later(0.3, plant, stub.url, "Ivy")]
    found = stub.wait_for_calls(1, timeout=5, body={"name": "Ivy"})
    for timer in timers:
        timer.join()
    assert [c.body["name"] for c in found] == ["Ivy"]

