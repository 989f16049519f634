"""The request pipeline's decision, without I/O: route, pick the scenario, check, then Prefer / rule from code /
scenario rule / store (--stateful) / default answer; and whether the answer sends webhooks. Who answered is decided
here too, once (`Decision.answerer`, recording/answered.py), and kept in the call's record.

`decide(runtime, session, incoming)` reads no aiohttp type and returns a frozen Decision; server/app.py adapts
aiohttp to it and back.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any, Final, NamedTuple, cast

from plantstub._json import NO_BODY
from plantstub._regex import REQUEST_SECONDS, RegexBudget
from plantstub.contract.model import Operation
from plantstub.contract.operations import ServedOperation, preferred
from plantstub.contract.outgoing import ErrorRecord, Outgoing, error_reply
from plantstub.contract.requests import challenge
from plantstub.contract.schema import Violation
from plantstub.contract.webhooks import RequestValues
from plantstub.errors import UnknownScenario
from plantstub.incoming import IncomingRequest, control_header
from plantstub.recording.answered import (
    CHECK,
    CLIENT_LEFT,
    CRASH,
    DEFAULT,
    PREFER,
    PROXY,
    STORE,
    Answerer,
    code_rule,
    scenario_rule,
)
from plantstub.recording.verdict import Upstream
from plantstub.scenarios.model import Fault, Rule, Scenario
from plantstub.scenarios.replies import rule_reply, rule_webhooks
from plantstub.scenarios.select import select_rule
from plantstub.server.runtime import Runtime
from plantstub.server.session import Session
from plantstub.webhooks.dispatch import RuleWebhooks
from plantstub.webhooks.sender import WEBHOOK_HEADER

SCENARIO_HEADER = "X-Plantstub-Scenario"
class _Now(Enum):
    ACTIVE = 0  # decide()'s `active` when not given: the session's active scenario now


_ACTIVE: Final = _Now.ACTIVE


class Decision(NamedTuple):
    """What the pipeline decided for one request, recorded as the call. `out` None: nothing was answered (yet).

    A NamedTuple: immutable, and built faster than a frozen dataclass on every request.
    """

    out: Outgoing | None = None
    op: Operation | None = None
    params: dict[str, str] = {}  # noqa: RUF012 - never mutated: a NamedTuple's default
    body: object = None  # the request body as validated (None: none read)
    created: object = None  # with --stateful, the record a create stored (its key assigned)
    errors: tuple[str, ...] = ()  # the request's contract violations
    stub_errors: tuple[str, ...] = ()  # the stub's own: a rule's reply that breaks the contract, a crash
    scenario: str | None = None
    rule: str | None = None
    fault: Fault | None = None
    delay_ms: int = 0
    hooks: RuleWebhooks | None = None  # the answering rule's `webhooks:`, when it has some
    sends: bool = False  # whether the answer may send webhooks or callbacks (a 2xx of a watched operation)
    # --proxy: nothing here answers; the pipeline forwards the request to the real service (plantstub/proxy/)
    forward: bool = False
    upstream: Upstream | None = None  # the real service's answer as recorded: url, status, valid, errors
    answerer: Answerer = DEFAULT  # who answered (a shared constant but for rules): the call's `answered_by`

    def refused(self, out: Outgoing, answerer: Answerer = CHECK) -> Decision:
        """This decision answered by a refusal instead (its message is the call's error): the request check's, or
        `answerer`'s (Prefer's that cannot be met; a client that left mid-body)."""
        # No `ours`: the body is the Error record itself (the cast costs a call only then).
        return self._replace(out=out, errors=(out.ours if out.ours is not None else cast(ErrorRecord, out.body)["message"],),
                             fault=None, sends=False, answerer=answerer)

    def unsent(self, out: Outgoing) -> Decision:
        """This decision's answer never went out (the client left, the stub stopped): `out`, a 499 saying so
        (answered.unanswered()), is recorded; the request keeps its verdict, nothing is covered, no webhook sent."""
        return self._replace(out=out, op=None, fault=None, sends=False, answerer=CLIENT_LEFT)

    def crashed(self, message: str) -> Decision:
        """This decision answered by a plantstub bug's 500 (the stub's error: the client is not to blame)."""
        return self._replace(out=error_reply(500, message), fault=None, stub_errors=(message,), sends=False,
                             answerer=CRASH)

    def forwarded(self, out: Outgoing, upstream: Upstream, left: bool = False) -> Decision:
        """This forwarded decision answered by the real service (`upstream`: its verdict), or by a 502 of ours when
        it could not; `left`: the client left before it answered (`out` a 499 saying so), recorded as such."""
        return self._replace(out=out, upstream=upstream, answerer=CLIENT_LEFT if left else PROXY)


UNANSWERED = Decision()
_new = tuple.__new__  # a Decision from a tuple, faster than _replace() on the request path
_SENDS = Decision._fields.index("sends")
assert Decision._fields[4] == "created" and Decision._fields[-1] == "answerer"  # what the store's answer replaces


def _answered(base: Decision, out: Outgoing) -> Decision:
    """`base` with its answer: `base._replace(out=out)`, for the default and the store's answers."""
    return _new(Decision, (out, *base[1:]))


def refusal(status: int, message: str, headers: dict[str, str] | None = None) -> Decision:
    """A request refused before it reached the spec's operations."""
    return UNANSWERED.refused(error_reply(status, message, headers))


def decide(runtime: Runtime, session: Session, incoming: IncomingRequest,
           active: str | _Now | None = _ACTIVE) -> Decision:
    """Steps 1-5 of the pipeline, without I/O. `active`: the scenario when the request arrived (default: now)."""
    route = runtime.router.route(incoming.method, incoming.raw_path or incoming.path)
    op = route.operation
    if route.status == 405:
        allow = ", ".join(route.allow)
        return refusal(405, f"method: {incoming.method} is not allowed on {incoming.path} (allowed: {allow})",
                       {"Allow": allow})
    if route.status == 404 or op is None:  # the router found an operation whenever it says 200
        return refusal(404, f"path: no path in the spec matches {incoming.path}{route.reason}")
    served = runtime.served[op]
    decision = _decide(session, served, op, route.path_params, incoming, active)
    out = decision.out
    if out is not None and out.ours is not None:  # our own refusal: in the error shape the operation declares
        return _answered(decision, served.own(out))
    return decision


def _decide(session: Session, served: ServedOperation, op: Operation, params: dict[str, str],
            incoming: IncomingRequest, active: str | _Now | None) -> Decision:
    """The request to a routed operation: pick the scenario, check, answer (our refusals as our Error record)."""
    name = incoming.headers.get(SCENARIO_HEADER)
    if name is not None:
        name, twice = control_header(incoming.headers, SCENARIO_HEADER)
        if twice is not None:
            return Decision(op=op, params=params).refused(error_reply(400, twice))
    name = name or (session.active if active is _ACTIVE else active)
    scenario = None
    if name is not None:
        try:
            scenario = session.scenarios.get(name)
        except UnknownScenario as exc:
            return Decision(op=op, params=params).refused(error_reply(400, f"headers.{SCENARIO_HEADER}: {exc}"))
    violations, body = served.check.violations(incoming, params)
    errors = tuple(map(str, violations)) if violations else ()
    base = _new(Decision, (None, op, params, body, None, errors, (), scenario and scenario.name,
                           None, None, 0, None, False, False, None, DEFAULT))
    if violations and (scenario is None or scenario.validate_requests):
        return _new(Decision, (_violation_reply(op, violations, errors), *base[1:-1], CHECK))
    decision = _answer(session, served, scenario, incoming, base)
    if (decision.hooks is not None or op in session.webhooks.watched) and decision.fault is None:
        sends = _sends(incoming, decision)  # decision._replace(sends=...), without its frames, on every such call
        return _new(Decision, (*decision[:_SENDS], sends, *decision[_SENDS + 1:])) if sends else decision
    return decision


def _violation_reply(op: Operation, violations: Sequence[Violation], errors: tuple[str, ...]) -> Outgoing:
    """401 naming the security problems when there are some, else 400 naming every violation (`errors`: their texts)."""
    unauthorized = [v for v in violations if v.status == 401]
    if unauthorized:
        return error_reply(401, "; ".join(map(str, unauthorized)), {"WWW-Authenticate": challenge(op)})
    return error_reply(400, "; ".join(errors))


def _answer(session: Session, served: ServedOperation, scenario: Scenario | None, incoming: IncomingRequest,
            base: Decision) -> Decision:
    """Prefer, then a rule from code, a scenario rule, the store (--stateful), else the default answer."""
    prefer = incoming.headers.get("Prefer")
    if prefer:
        out, problem = preferred(served, prefer, base.body, session.draws)
        if out is not None:  # a Prefer that cannot be met answers its refusal
            return base.refused(out, PREFER) if problem is not None else base._replace(out=out, answerer=PREFER)
    declared = session.declared
    if declared.rules or scenario is not None:
        if not declared.regex and (scenario is None or not session.scenarios.indexes[scenario.name].regex):
            decision = _by_rule(session.runtime, session, scenario, incoming, base)  # no `$regex` to budget
            if decision is not None:
                return decision
        else:
            with RegexBudget(REQUEST_SECONDS, "request") as budget:  # every `$regex` of the rules tried, together
                decision = _by_rule(session.runtime, session, scenario, incoming, base)
            if budget.spent is not None:  # say so: a rule that needed the pattern did not match
                if decision is not None:
                    return decision._replace(stub_errors=(*decision.stub_errors, budget.message()))
                base = base._replace(stub_errors=(budget.message(),))
            elif decision is not None:
                return decision
    store = session.store
    if store is not None:  # --stateful: the records answer where the default answer would
        action = session.actions.get(served.op)  # base.op: the operation routed, served's own
        if action is not None:
            # No body sent (an optional one): the record starts empty; None is a body that was sent but not read.
            out = store.answer(action, base.params, incoming.query, base.body if incoming.raw else {})
            if out is not None:  # with the response headers its status requires (our refusals: own() in decide())
                # base._replace(out=..., created=..., answerer=STORE), built whole: a store answers every call
                return _new(Decision, (served.headed(out) if served.heads else out, base[1], base[2], base[3],
                                       store.created, *base[5:-1], STORE))
    if session.runtime.forwarder is not None:  # --proxy: the real service answers instead
        return base._replace(forward=True, answerer=PROXY)
    return _answered(base, served.default(base.body, not base.errors, session.draws))


def _by_rule(runtime: Runtime, session: Session, scenario: Scenario | None, incoming: IncomingRequest,
             base: Decision) -> Decision | None:
    """The answer of the first rule from code, else of the scenario, that matches; None when none does."""
    assert base.op is not None  # routed before any rule is tried
    operation = base.op.label  # a rule without `method:` may answer only the operations its replies fit
    if session.declared.rules:  # rules from code come first
        declared = session.declared.select(incoming, base.body, operation)
        if declared is not None:
            from_code, at = declared
            label = from_code.label(at)
            answerer = code_rule(from_code.id, label, from_code.source)
            return _rule_answer(runtime, from_code.rule, at, incoming, base._replace(rule=label, answerer=answerer),
                                session.declared.templates)
    if scenario is not None:
        index = session.scenarios.indexes[scenario.name]
        chosen = select_rule(index, session.counters, incoming, base.body, operation)
        if chosen is not None:
            rule, at = chosen
            by: Answerer | None = index.answerers.get((rule.index, at))
            if by is None:  # made once per reply, kept (and dropped) with the scenario's index
                label = rule.label if len(rule.replies) == 1 else f"{rule.label}.replies[{at}]"
                by = index.answerers[(rule.index, at)] = scenario_rule(scenario.name, label, scenario.file,
                                                                       rule.replies[at].line)
            return _rule_answer(runtime, rule, at, incoming, base._replace(rule=by.rule, answerer=by), index.templates)
    return None


def _who(answerer: Answerer) -> str:
    """The rule that sent a reply, as its `stub_errors` name it."""
    if answerer.kind == "rule":
        return f"rule {answerer.rule} ({answerer.at})"
    return f"scenario {answerer.scenario!r} {answerer.rule} ({answerer.at})"


def _rule_answer(runtime: Runtime, rule: Rule, at: int, incoming: IncomingRequest, base: Decision,
                 templates: dict[int, Any]) -> Decision:
    """The answer of a rule's reply `at` (a rule from code or a scenario's); a rendered body that breaks the contract
    is the rule's fault, not the consumer's: recorded apart from `errors`, naming the rule that sent it."""
    reply = rule.replies[at]
    hooks = rule_webhooks(rule, incoming, base.body, templates) if rule.webhooks is not None else None
    out, fault = rule_reply(reply, incoming, base.body, templates)
    stub_errors: tuple[str, ...] = ()
    if not rule.off_contract and reply.fault is None:
        assert base.op is not None  # a rule answers an operation
        served = runtime.served[base.op]
        if served.heads:  # the response headers its status requires
            out = served.headed(out)
        if out.body is not NO_BODY:
            broken = runtime.contract.rendered_violations(base.op, reply, out.body)
            if broken:
                who = _who(base.answerer)
                stub_errors = tuple(f"{who} sent a reply that breaks the contract: {v}" for v in broken)
    return base._replace(out=out, fault=fault, delay_ms=reply.delay_ms, hooks=hooks, stub_errors=stub_errors)


def _sends(incoming: IncomingRequest, decision: Decision) -> bool:
    """A 2xx answer sends; a delivery of this stub's own, subscribed back to it, does not (no endless loop)."""
    out = decision.out
    return out is not None and 200 <= out.status < 300 and WEBHOOK_HEADER not in incoming.headers


def created_record(decision: Decision) -> object:
    """What the default trigger sends: the record the store created (--stateful), else the validated request body."""
    return decision.created if decision.created is not None else decision.body


def send_webhooks(session: Session, incoming: IncomingRequest, decision: Decision) -> None:
    """Queue the webhooks and callbacks a decision sends; they go out after its answer, never delaying it."""
    assert decision.op is not None and decision.out is not None
    # Only a rule's `webhooks:` and callbacks read the request (runtime expressions); the default trigger does not.
    values = None if decision.hooks is None and not decision.op.callbacks else RequestValues(
        incoming.url, incoming.method, incoming.headers, incoming.query, decision.params, decision.body)
    session.webhooks.answered(decision.op, decision.out.status, created_record(decision), values, decision.hooks)
