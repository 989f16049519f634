"""The request pipeline's decision, without I/O: route, pick the scenario, check, then Prefer / rule from code /
scenario rule / store (--stateful) / default answer; and the webhooks a 2xx answer sends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiohttp import web

from plantstub._json import NO_BODY
from plantstub.contract.model import Operation
from plantstub.contract.operations import preferred
from plantstub.contract.outgoing import Outgoing, error_reply
from plantstub.contract.requests import challenge
from plantstub.contract.schema import Violation
from plantstub.contract.webhooks import RequestValues
from plantstub.incoming import IncomingRequest
from plantstub.scenarios.model import Fault, Rule
from plantstub.scenarios.replies import rule_reply, rule_webhooks
from plantstub.scenarios.select import select_rule
from plantstub.server.state import Control, UnknownScenario
from plantstub.webhooks.dispatch import RuleWebhooks
from plantstub.webhooks.sender import WEBHOOK_HEADER

SCENARIO_HEADER = "X-Plantstub-Scenario"


def _violation_reply(op: Operation, violations: Sequence[Violation]) -> Outgoing:
    unauthorized = [v for v in violations if v.status == 401]
    if unauthorized:
        return error_reply(401, "; ".join(map(str, unauthorized)), {"WWW-Authenticate": challenge(op)})
    return error_reply(400, "; ".join(map(str, violations)))


class Outcome:
    """What the pipeline decided, filled in step by step and recorded at the end."""

    __slots__ = ("body", "created", "delay_ms", "errors", "fault", "hooks", "op", "out", "params", "rule", "scenario", "stub_errors")

    def __init__(self) -> None:
        self.out: Outgoing | None = None
        self.body: Any = None
        self.created: Any = None  # with --stateful, the record a create stored (its key assigned)
        self.errors: tuple[str, ...] = ()
        self.stub_errors: tuple[str, ...] = ()
        self.scenario: str | None = None
        self.rule: str | None = None
        self.fault: Fault | None = None
        self.delay_ms = 0
        self.op: Operation | None = None
        self.params: dict[str, Any] = {}
        self.hooks: RuleWebhooks | None = None  # the answering rule's `webhooks:`, when it has some

    def refuse(self, out: Outgoing) -> None:
        self.out = out
        self.errors = (out.body["message"],)


def decide(
    control: Control, request: web.BaseRequest, raw: bytes, query: dict[str, list[str]], active: str | None, done: Outcome
) -> None:
    """Steps 1-5 of the pipeline, without I/O: fills `done`. `active` is the scenario when the request arrived."""
    method, path = request.method, request.path
    route = control.router.route(method, request.rel_url.raw_path)
    if route.status == 404:
        return done.refuse(error_reply(404, f"path: no path in the spec matches {path}"))
    if route.status == 405:
        allow = ", ".join(route.allow)
        return done.refuse(
            error_reply(405, f"method: {method} is not allowed on {path} (allowed: {allow})", {"Allow": allow})
        )
    op = done.op = route.operation
    if op is None:  # the router found one whenever it says 200
        return done.refuse(error_reply(404, f"path: no path in the spec matches {path}"))
    served = control.served[op]
    done.params = route.path_params
    name = request.headers.get(SCENARIO_HEADER) or active
    scenario = None
    if name is not None:
        try:
            scenario = control.scenario(name)
        except UnknownScenario as exc:
            return done.refuse(error_reply(400, f"headers.{SCENARIO_HEADER}: {exc}"))
        done.scenario = scenario.name
    incoming = IncomingRequest(method, path, query, request.headers, raw)
    violations, done.body = served.check.violations(incoming, route.path_params)
    if violations:
        done.errors = tuple(map(str, violations))
        if scenario is None or scenario.validate_requests:
            done.out = _violation_reply(op, violations)
            return None
    prefer = request.headers.get("Prefer")
    if prefer:
        out, problem = preferred(served, prefer, done.body)
        if out is not None and problem is not None:
            return done.refuse(out)
        if out is not None:
            done.out = out
            return None
    if control.declared.rules:  # rules from code come first
        declared = control.declared.select(incoming, done.body)
        if declared is not None:
            rule_from_code, at = declared
            done.rule = rule_from_code.label(at)
            return _rule_answer(control, op, rule_from_code.rule, at, incoming, done, control.declared.templates,
                                f"rule {done.rule} ({rule_from_code.source})")
    if scenario is not None:
        chosen = select_rule(control.indexes[scenario.name], control.counters, incoming, done.body)
        if chosen is not None:
            rule, at = chosen
            done.rule = rule.label if len(rule.replies) == 1 else f"{rule.label}.replies[{at}]"
            return _rule_answer(control, op, rule, at, incoming, done, control.indexes[scenario.name].templates,
                                f"scenario {scenario.name!r} {done.rule} ({scenario.file}:{rule.replies[at].line})")
    store = control.store
    if store is not None:  # --stateful: the records answer where the default answer would
        action = control.actions.get(op)
        if action is not None:
            done.out = store.answer(action, route.path_params, query, done.body)
            done.created = store.created
            if done.out is not None:
                return None
    done.out = served.default(done.body)
    return None


def _rule_answer(control: Control, op: Operation, rule: Rule, at: int, incoming: IncomingRequest, done: Outcome,
                 templates: dict[int, Any], who: str) -> None:
    """The answer of a rule's reply `at` (a rule from code or a scenario's); a rendered body that breaks the contract
    is the rule's fault, not the consumer's: recorded apart from `errors`, naming `who` sent it."""
    reply = rule.replies[at]
    done.delay_ms = reply.delay_ms
    if rule.webhooks is not None:
        done.hooks = rule_webhooks(rule, incoming, done.body, templates)
    done.out, done.fault = rule_reply(reply, incoming, done.body, templates)
    if not rule.off_contract and reply.fault is None and done.out.body is not NO_BODY:
        broken = control.contract.rendered_violations(op, reply, done.out.body)
        done.stub_errors = tuple(f"{who} sent a reply that breaks the contract: {v}" for v in broken)


def created_record(done: Outcome) -> Any:
    """What the default trigger sends: the record the store created (--stateful), else the validated request body."""
    return done.created if done.created is not None else done.body


def send_webhooks(control: Control, request: web.BaseRequest, query: dict[str, list[str]], done: Outcome) -> None:
    """Queue the webhooks and callbacks a 2xx answer sends; they go out after it, never delaying it."""
    assert done.op is not None and done.out is not None
    if WEBHOOK_HEADER in request.headers:  # a delivery of this stub's own, subscribed back to it: no endless loop
        return
    values = RequestValues(str(request.url), request.method, request.headers, query, done.params, done.body)
    control.webhooks.answered(done.op, done.out.status, created_record(done), values, done.hooks)
