"""decide(runtime, session, incoming) called directly: no server, no aiohttp request; each answer a frozen Decision."""

from __future__ import annotations

import dataclasses

import orjson
import pytest

from plantstub.config import build_settings
from plantstub.scenarios.model import Fault
from plantstub.server.decide import Decision, decide
from plantstub.server.runtime import Runtime, load
from plantstub.server.session import Session
from plantstub.server.table import Sessions
from tests.helpers import AUTH, JSON_AUTH, make_request, write

FERN = orjson.dumps({"id": 1, "name": "Fern"})
CLOSED = """\
description: the store is closed
rules:
  - match: {method: POST, path: /plants}
    replies:
      - {status: 400, body: {error: 503, message: Store is closed}}
      - {status: 200, body: {id: 7, name: "{{ request.body.name }}"}}
"""
RUNTIMES: dict[str, Runtime] = {}


def session_for(spec: str = "plant-store", **options: object) -> tuple[Runtime, Session]:
    settings = build_settings({"spec": spec, **options})
    runtime = load(settings)
    return runtime, Sessions(runtime).default


def post(body: bytes = FERN, headers: dict[str, str] | None = None, path: str = "/plants", method: str = "POST"):
    return make_request(method, path, headers={**JSON_AUTH, **(headers or {})}, raw=body)


def test_decide_answers_an_unknown_path_404():
    runtime, session = session_for()
    decision = decide(runtime, session, post(path="/plant"))
    assert decision.out is not None and decision.out.status == 404
    assert decision.errors == ("path: no path in the spec matches /plant",)
    assert decision.op is None


def test_decide_answers_a_method_the_path_lacks_405_with_allow():
    runtime, session = session_for()
    decision = decide(runtime, session, post(method="PUT"))
    assert decision.out is not None and (decision.out.status, decision.out.headers) == (405, {"Allow": "POST"})
    assert decision.errors == ("method: PUT is not allowed on /plants (allowed: POST)",)


@pytest.mark.parametrize(
    ("headers", "body", "status", "error"),
    [
        (JSON_AUTH, b'{"id": 1, "name": 3}', 400, "body.name: 3 is not of type 'string'"),
        ({"Content-Type": "application/json"}, FERN, 401, "headers.Authorization"),
    ],
    ids=["invalid-body", "no-credential"],
)
def test_decide_refuses_a_request_that_breaks_the_contract(headers, body, status, error):
    runtime, session = session_for()
    decision = decide(runtime, session, make_request(headers=headers, raw=body))
    assert decision.out is not None and decision.out.status == status
    assert decision.errors and decision.errors[0].startswith(error)
    assert decision.out.body["message"] == "; ".join(decision.errors)


def test_decide_answers_the_default_with_the_validated_body():
    runtime, session = session_for()
    decision = decide(runtime, session, post())
    assert decision.out is not None and decision.out.status == 200
    assert (decision.body, decision.errors, decision.rule, decision.scenario) == ({"id": 1, "name": "Fern"}, (), None, None)
    assert decision.op is not None and decision.op.method == "POST"


def test_decide_honours_prefer_code():
    runtime, session = session_for()
    decision = decide(runtime, session, post(headers={"Prefer": "code=400"}))
    assert decision.out is not None and decision.out.status == 400
    assert decision.errors == ()  # the consumer asked for it: not a violation


def test_decide_answers_with_a_rule_from_code_first():
    runtime, session = session_for()
    session.add_rule({"match": {"body": {"name": "Fern"}}, "reply": {"status": 200, "body": {"id": 1, "name": "F"}}},
                     "test_decide.py", 1)
    decision = decide(runtime, session, post())
    assert decision.out is not None and decision.out.body == {"id": 1, "name": "F"}
    assert decision.rule == "r1"
    assert decide(runtime, session, post(b'{"id": 2, "name": "Ivy"}')).rule is None  # the rule does not match: the default


def test_decide_answers_with_the_active_scenario_in_sequence(tmp_path):
    write(tmp_path, "closed.yaml", CLOSED)
    runtime, session = session_for(scenarios=str(tmp_path), scenario="closed")
    first, second = decide(runtime, session, post()), decide(runtime, session, post())
    assert (first.scenario, first.rule, first.out.status if first.out else None) == ("closed", "rules[0].replies[0]", 400)
    assert second.out is not None and second.out.body == {"id": 7, "name": "Fern"}


def test_decide_reads_the_scenario_as_it_was_when_the_request_arrived(tmp_path):
    write(tmp_path, "closed.yaml", CLOSED)
    runtime, session = session_for(scenarios=str(tmp_path))
    assert decide(runtime, session, post(), active="closed").scenario == "closed"
    assert decide(runtime, session, post()).scenario is None  # the session's own: none active
    unknown = decide(runtime, session, post(headers={"X-Plantstub-Scenario": "nope"}))
    assert unknown.out is not None and unknown.out.status == 400
    assert unknown.errors[0].startswith("headers.X-Plantstub-Scenario: unknown scenario 'nope'")


def test_decide_answers_from_the_store_when_stateful():
    runtime, session = session_for("plant-store-full", stateful=True)
    created = decide(runtime, session, post())
    assert created.out is not None and created.created == {"id": 1, "name": "Fern"}
    listed = decide(runtime, session, make_request("GET", headers=AUTH))
    assert listed.out is not None and listed.out.body == [{"name": "Fern"}]  # as the listing declares a Plant


def test_decide_says_which_answers_send_webhooks():
    runtime, session = session_for("plant-store-full")
    assert not decide(runtime, session, post()).sends  # nothing subscribed: a create sends nothing, and pays nothing
    session.webhooks.subscribe("http://127.0.0.1:9/hook", "*")
    assert decide(runtime, session, post()).sends  # a create: the default trigger of /plant/webhook
    assert not decide(runtime, session, post(b'{"id": 1, "name": 3}')).sends  # refused: nothing is sent
    assert not decide(runtime, session, post(headers={"X-Plantstub-Webhook": "1"})).sends  # its own delivery
    assert not decide(runtime, session, make_request("GET", headers=AUTH)).sends  # no webhook for a listing
    session.webhooks.reset()  # the start-up subscriptions again: none
    assert not decide(runtime, session, post()).sends


def test_decide_records_a_fault_and_nothing_to_send(tmp_path):
    runtime, session = session_for("plant-store-full")
    session.add_rule({"match": {"path": "/plants"}, "reply": {"fault": "connection_reset"}}, "test_decide.py", 2)
    decision = decide(runtime, session, post())
    assert (decision.fault, decision.sends) == (Fault.CONNECTION_RESET, False)


def test_a_decision_is_immutable():
    runtime, session = session_for()
    decision = decide(runtime, session, post())
    assert isinstance(decision, Decision) and not dataclasses.is_dataclass(decision)
    with pytest.raises(AttributeError):
        decision.rule = "changed"  # type: ignore[misc]
