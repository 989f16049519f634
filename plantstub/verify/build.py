"""A scenario rule turned into the request it makes a claim about: method, path, query, headers and body from its
`match:` where it gives values, its matchers met by values built for them (`name: {$regex: "^Cact"}` sends a name
that starts with Cact), the rest from the spec's examples or valid generated values; or why no such request is sent.

A rule's request must keep the contract, unless the rule is made to catch one that breaks it (a 4xx reply to a
match the contract refuses): then it is that broken request that is sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import cast
from urllib.parse import quote

from plantstub._json import JSON, MISSING, NO_BODY, is_json, pick_json, shown
from plantstub.contract.compiled import Checks
from plantstub.contract.flatten import defs_of
from plantstub.contract.model import Operation, Parameter
from plantstub.matching import as_text, is_matcher, matcher_mismatches, template_names
from plantstub.scenarios.contract import ScenarioContract
from plantstub.scenarios.model import Criteria, Rule, Scenario
from plantstub.verify.request import NOT_SENT, NOT_VERIFIABLE, WRITES, Request, Unsent
from plantstub.verify.values import Filler, NoValue, absent, candidates, misses, sample_of

_PATH_SAFE = "/:@!$&'()*+,;=-._~"  # what a literal path of a scenario keeps as written


def _label(match: Criteria) -> str:
    return f"{match.method or '*'} {match.path or '*'}"


def why_not_verifiable(rule: Rule) -> str | None:
    """Why a rule makes no claim a single request can check: call order, faults, delays, deliberate breaks."""
    if rule.off_contract:
        return "`off_contract: true`: the rule breaks the contract on purpose; that is no claim about the service"
    if rule.times is not None:
        return f"`times: {rule.times}`: whether it answers depends on the calls before"
    if len(rule.replies) > 1:
        return f"{len(rule.replies)} replies in sequence: which one answers depends on the calls before"
    reply = rule.replies[0]
    if reply.fault is not None:
        return f"`fault: {reply.fault.value}`: the stub failing on purpose is no claim about the service"
    if reply.delay_ms:
        return f"`delay_ms: {reply.delay_ms}`: the stub waiting on purpose is no claim about the service"
    return None


def plan(rule: Rule, scenario: Scenario, contract: ScenarioContract, extra: tuple[tuple[str, str], ...],
         allow_writes: bool) -> Request | Unsent:
    """The request `rule` is verified with, or why it is not sent. `extra`: the --header pairs."""
    label = _label(rule.match)
    why = why_not_verifiable(rule)
    if why is not None:
        return Unsent(NOT_VERIFIABLE, why, label)
    ops, what, problem = contract.operations(rule.match)
    if rule.answers is not None:
        ops = [op for op in ops if op.label in rule.answers]
    if not ops:
        return Unsent(NOT_VERIFIABLE, f"its match.{what}: {problem}", label)
    if rule.match.body is not NO_BODY:
        ops = [op for op in ops if op.body] or ops
    op = ops[0]  # a rule without `method:` is verified with the first operation it answers, in the spec's order
    try:
        request = _Builder(op, contract.served[op].samples, rule.match, extra).request()
    except NoValue as exc:
        return Unsent(NOT_VERIFIABLE, f"no request meets its match: {exc}", f"{op.method} {rule.match.path or op.path}")
    checked = _checked(request, rule, scenario, contract, extra)
    if isinstance(checked, Unsent):
        return checked
    if checked.method in WRITES and not allow_writes:
        return Unsent(NOT_SENT, f"{checked.method} changes the service's state; --allow-writes sends it",
                      checked.shown, checked)
    return checked


def _checked(request: Request, rule: Rule, scenario: Scenario, contract: ScenarioContract,
             extra: tuple[tuple[str, str], ...]) -> Request | Unsent:
    """`request` if it matches the rule and keeps the contract, or breaks it only where the rule's match says and
    the rule is made to catch that; else why it is not sent."""
    incoming = request.incoming(extra)
    route = contract.router.route(request.method, request.raw_path)
    if route.operation is not request.op:
        other = route.operation.label if route.operation is not None else "no operation"
        return Unsent(NOT_VERIFIABLE, f"the path built for {request.op.label}, {request.path}, is {other}'s",
                      request.shown, request)
    violations, body = contract.served[request.op].check.violations(incoming, route.path_params)
    missed = rule.match.mismatches(request.method, request.path, incoming.headers, incoming.query,
                                   request.body if body is None else body)
    if missed:
        return Unsent(NOT_VERIFIABLE, f"the request built does not match it ({missed[0]})", request.shown, request)
    if not violations:
        return request
    places = _constrained(rule.match)
    unmeant = [v for v in violations if not _within(v.where, places)]
    credentials = [v for v in unmeant if v.status == 401]
    if credentials:
        return Unsent(NOT_SENT, f"{request.op.label} needs credentials ({credentials[0]}); give them with "
                                "--header 'NAME: VALUE' or PLANTSTUB_HEADER", request.shown, request)
    if unmeant:
        return Unsent(NOT_VERIFIABLE, f"no valid value found where the rule says nothing ({unmeant[0]})",
                      request.shown, request)
    status = rule.replies[0].status
    if 400 <= status < 500 or not scenario.validate_requests:
        return replace(request, breaks=tuple(map(str, violations)))
    return Unsent(NOT_VERIFIABLE, f"a request it matches breaks the contract ({violations[0]}), and the stub answers "
                                  f"such a request {violations[0].status} before any rule, not {status}", request.shown,
                  request)


def _constrained(match: Criteria) -> list[str]:
    """The places the rule's match says something about, in the location notation (`body.name`, `query.limit`)."""
    places = [f"query.{name}" for name in match.query] + [f"headers.{name.lower()}" for name in match.headers]
    if match.body is not NO_BODY:
        places.extend(_leaves(match.body, "body"))
    return places


def _leaves(value: object, where: str) -> Iterable[str]:
    if isinstance(value, dict) and value and not is_matcher(value):
        for key, item in value.items():
            yield from _leaves(item, f"{where}.{key}")
    else:
        yield where


def _within(where: str, places: list[str]) -> bool:
    """Whether a violation at `where` lies on a place the match constrains (above it, at it, or under it)."""
    where = where.lower() if where.startswith("headers.") else where
    return any(p == where or p.startswith((where + ".", where + "[")) or where.startswith((p + ".", p + "["))
               for p in places)


class _Builder:
    """The parts of one rule's request for one operation."""

    def __init__(self, op: Operation, samples: Checks, match: Criteria, extra: tuple[tuple[str, str], ...]) -> None:
        self.op = op
        self.samples = samples
        self.match = match
        self.extra = extra
        self.params = {(p.location, p.name.lower()): p for p in op.parameters}

    def request(self) -> Request:
        path, raw_path = self.path()
        body = self.body()
        headers = self.headers(body)
        withheld = frozenset(name.lower() for name, _ in self.extra if absent(self.match.headers.get(name.lower())))
        return Request(self.op.method, path, raw_path, tuple(self.query()), tuple(headers), body, self.op,
                       withheld=withheld)

    # -- values from a schema ----------------------------------------------------------------------------------
    def sample(self, schema: object, defs: dict[str, object] | None = None) -> object:
        return sample_of(schema, self.samples, defs)

    def text(self, param: Parameter | None, where: str) -> str:
        value = self.sample(param.schema) if param is not None else MISSING
        text = as_text(value) if value is not MISSING else "x"
        if text is None:
            raise NoValue(where, f"{param.name if param else where} is a list or an object; verify builds text")
        return text

    def meet_text(self, matcher: dict[str, object], param: Parameter | None, where: str) -> str | None:
        """Text meeting a header's or query value's matcher (None: `$absent`)."""
        if absent(matcher):
            return None
        base = self.sample(param.schema) if param is not None else MISSING
        found = [c for c in [*candidates(matcher), base] if c is not MISSING and as_text(c) is not None]
        for candidate in found:
            text = as_text(candidate)
            if not matcher_mismatches(matcher, text, where):
                return text
        raise NoValue(where, f"no text found that meets {shown(matcher)}")

    # -- the parts ---------------------------------------------------------------------------------------------
    def path(self) -> tuple[str, str]:
        """(decoded, encoded): the match's literal path as written, else the spec's template with each parameter
        from the match's literal segments, the spec's example, or a generated value."""
        mine = self.match.path if self.match.path is not None else self.op.path
        if "{" not in mine:
            return mine, quote(mine, safe=_PATH_SAFE)
        decoded, encoded = [], []
        for own, spec in zip(mine.split("/"), self.op.path.split("/"), strict=False):
            if "{" not in own:
                decoded.append(own)
                encoded.append(quote(own, safe=_PATH_SAFE))
                continue
            plain, coded = spec, spec
            for name in template_names(spec):
                text = self.text(self.params.get(("path", name.lower())), f"path.{name}")
                plain = plain.replace(f"{{{name}}}", text)
                coded = coded.replace(f"{{{name}}}", quote(text, safe=""))
            decoded.append(plain)
            encoded.append(coded)
        return "/".join(decoded), "/".join(encoded)

    def query(self) -> list[tuple[str, str]]:
        pairs: list[tuple[str, str]] = []
        for name, want in self.match.query.items():
            param = self.params.get(("query", name.lower()))
            pairs.extend((name, text) for text in self.values(want, param, f"query.{name}"))
        for param in self.op.parameters:
            if param.location == "query" and param.required and param.name not in self.match.query:
                pairs.extend((param.name, text) for text in self.param_texts(param))
        return pairs

    def values(self, want: object, param: Parameter | None, where: str) -> list[str]:
        """The texts of one header or query name the match gives: a text, a matcher's, or each of a list."""
        if isinstance(want, list):
            return [text for i, item in enumerate(want) for text in self.values(item, param, f"{where}[{i}]")]
        if isinstance(want, dict):
            text = self.meet_text(want, param, where)
            return [] if text is None else [text]
        return [cast(str, want)]  # a match's header and query values are text (expected_text())

    def param_texts(self, param: Parameter) -> list[str]:
        """A required parameter the match says nothing of: its example or a generated value, as text(s)."""
        value = self.sample(param.schema)
        if isinstance(value, list) and param.location == "query":
            texts = [as_text(v) for v in value]
            if any(t is None for t in texts):
                raise NoValue(f"query.{param.name}", "an array of lists or objects; verify builds text")
            return [t for t in texts if t is not None] if param.explode else [",".join(t or "" for t in texts)]
        return [self.text(param, f"{param.location}.{param.name}")]

    def headers(self, body: object) -> list[tuple[str, str]]:
        given = {name.lower(): value for name, value in self.extra}
        headers: list[tuple[str, str]] = []
        for name, want in self.match.headers.items():
            param = self.params.get(("header", name))
            if name in given and not misses(want, given[name], name):
                continue  # the --header value meets the rule: it is sent as given
            shown_name = param.name if param is not None else name
            headers.extend((shown_name, text) for text in self.values(want, param, f"headers.{name}"))
        named = {name.lower() for name, _ in headers} | set(given)
        for param in self.op.parameters:
            if param.location == "header" and param.required and param.name.lower() not in named:
                headers.append((param.name, self.text(param, f"headers.{param.name}")))
        if body is not NO_BODY and "content-type" not in named:
            headers.append(("Content-Type", JSON))
        return headers

    def body(self) -> object:
        name = pick_json(self.op.body or {})
        media = self.op.body[name] if self.op.body and name is not None and is_json(name) else None
        schema = media.schema if media is not None else None
        base: object = MISSING
        if media is not None:  # the spec's own example of the request body, when it keeps the schema
            given = [media.example, *media.examples.values()]
            base = next((v for v in given if v is not MISSING and (not isinstance(schema, dict)
                                                                     or self.samples.valid(v, schema, defs_of(schema)))),
                        MISSING)
            if base is MISSING:
                base = self.sample(schema)
        if self.match.body is not NO_BODY:
            return Filler(schema, self.samples).fill(self.match.body, (), base, "body")
        if not (self.op.body and self.op.body_required):
            return NO_BODY
        if media is None:
            raise NoValue("body", f"{self.op.label} takes {', '.join(self.op.body)} bodies; verify sends JSON")
        if base is MISSING:
            raise NoValue("body", "no value of the request body's schema found")
        return base

