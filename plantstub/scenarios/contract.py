"""The contract check of scenario rules: statuses, bodies and media types against the spec."""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING

from plantstub._json import MISSING, NO_BODY, essence, match_media
from plantstub._memo import IdentityMemo
from plantstub._words import MOST_LISTED, did_you_mean, listed
from plantstub.contract.model import MediaType, Operation, Response, Spec
from plantstub.contract.operations import ServedOperation, serve
from plantstub.contract.router import Router
from plantstub.contract.schema import SchemaCheck, Violation, location_path
from plantstub.contract.streams import StreamCheck, is_stream
from plantstub.contract.webhooks import json_body_schema
from plantstub.errors import ScenarioError
from plantstub.scenarios.document import RuleData, ScenarioDocument
from plantstub.scenarios.model import Criteria, Reply, Rule
from plantstub.scenarios.placeholder_types import Source, describe, fits, placeholder_source, wanted_types
from plantstub.scenarios.templating import Placeholder, parse, placeholder_paths

if TYPE_CHECKING:
    from plantstub.stateful.resources import Resources

OFF_CONTRACT_HINT = "add `off_contract: true` to this rule to serve it anyway"


def _overlaps(pattern: str, template: str) -> bool:
    """Can the rule path `pattern` (with {x} segments) and the spec path `template` match one path?"""
    a, b = pattern.strip("/").split("/"), template.strip("/").split("/")
    return len(a) == len(b) and all(x == y or "{" in x or "{" in y for x, y in zip(a, b, strict=True))


def _media(response: Response, reply: Reply) -> tuple[str | None, str, MediaType | None]:
    """The Content-Type header key the reply sets (if any), the media type it is sent as, and its declaration."""
    header = next((k for k in reply.headers if k.lower() == "content-type"), None)
    if header is not None:
        media_type = essence(reply.headers[header])
    else:  # scenarios/replies.py sends a string as text/plain unless Content-Type says JSON
        media_type = "text/plain" if isinstance(reply.body, str) else "application/json"
    declared = match_media(media_type, response.content)
    return header, media_type, None if declared is None else response.content[declared]


def _probe(value: object, samples: dict[str, object], where: str) -> object:
    """`value` with the placeholder at each location of `samples` replaced by its sample (when it has one)."""
    if where in samples:
        return value if samples[where] is MISSING else samples[where]
    if isinstance(value, dict):
        return {k: _probe(v, samples, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_probe(v, samples, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


class ScenarioContract:
    """Checks rules against one spec; compiled response schemas live on the served operations, shared by every file.

    :param served: the running stub's operations, so load-time and run-time checks compile each schema once.
    :param router: the running stub's router (built once per spec).
    """

    def __init__(self, spec: Spec, served: dict[Operation, ServedOperation] | None = None,
                 router: Router | None = None) -> None:
        self.spec = spec
        self.served = serve(spec) if served is None else served
        self.router = Router(spec) if router is None else router  # the running stub's: built once
        self.methods = list(dict.fromkeys(op.method for op in spec.operations))
        self.paths = list(dict.fromkeys(op.path for op in spec.operations))
        # reply, op -> the check of its rendered body, or None when nothing to check
        self.rendered: IdentityMemo[SchemaCheck | None] = IdentityMemo()
        self.hook_checks: IdentityMemo[SchemaCheck] = IdentityMemo()  # webhook -> the check of its request body

    @cached_property
    def resources(self) -> Resources:
        """The spec's resources (for `state:` seeds and the --stateful store), with the schemas compiled above."""
        from plantstub.stateful.resources import Resources  # only then: a stub without either never imports it

        samples = next(iter(self.served.values())).samples if self.served else None
        return Resources(self.spec, samples)

    def state_errors(self, doc: ScenarioDocument, state: object) -> list[ScenarioError]:
        """A scenario's `state:`: each collection a path of the spec, each record one of it, with its key."""
        return [doc.error(where, message) for where, message in self.resources.state_problems(state)]

    def operations(self, criteria: Criteria) -> tuple[list[Operation], str, str]:
        """The operations a rule can match, else ([], the match key at fault, why)."""
        method, path = criteria.method, criteria.path
        ops = [op for op in self.spec.operations if method is None or op.method == method]
        if path is not None:
            if "{" in path:
                on_path = [op for op in self.spec.operations if _overlaps(path, op.path)]
            else:
                on_path = [r.operation for m in self.methods if (r := self.router.route(m, path)).operation]
            if not on_path:
                hint = did_you_mean(path, self.paths) if len(self.paths) > MOST_LISTED else ""
                return [], "path", (f"{path} matches no path in the spec (paths: {listed(self.paths)})"
                                    + (f"; {hint}" if hint else ""))
            ops = [op for op in on_path if method is None or op.method == method]
            if not ops:
                allowed = ", ".join(sorted({op.method for op in on_path}))
                return [], "method", f"{method} is not an operation of {path} (methods: {allowed})"
        elif not ops:
            allowed = ", ".join(sorted(self.methods))
            return [], "method", f"{method} matches no operation in the spec (methods: {allowed})"
        return list(dict.fromkeys(ops)), "", ""

    def reply_errors(
        self, doc: ScenarioDocument, op: Operation, reply: Reply, where: str, templated: list[str], lone: list[Placeholder]
    ) -> list[ScenarioError]:
        response = op.response_for(reply.status)
        if response is None:
            line = doc.lines.get(f"{where}.status")
            status = f"{reply.status}" if line else f"{reply.status} (the default status)"
            declared = ", ".join(op.responses) or "none"
            message = f"{status} is not declared for {op.label} (declared: {declared}); {OFF_CONTRACT_HINT}"
            return [doc.error(f"{where}.status", message, line or reply.line)]
        body_where, named = f"{where}.body", f"{op.label} response {response.status}"
        if reply.body is NO_BODY:
            return []
        sources = {location_path(where, p.location): (p, placeholder_source(op, parse(p.text)))
                   for p in lone if p.location and p.location[0] == "body"}
        found = self.placeholder_errors(doc, op, response, reply, sources)
        if body_where in templated:
            return found
        if not response.content:
            return [doc.error(body_where, f"{named} declares no body; remove it or {OFF_CONTRACT_HINT}")]
        header, media_type, media = _media(response, reply)
        if media is None:
            declared = ", ".join(response.content)
            if header is not None:
                message = f"{media_type!r} is not declared for {named} (declared: {declared}); {OFF_CONTRACT_HINT}"
                return [doc.error(f"{where}.headers.{header}", message)]
            kind = "a string body" if isinstance(reply.body, str) else "a JSON body"
            message = (f"{kind} is sent as {media_type}, which {named} does not declare (declared: {declared});"
                       f" set a Content-Type header or {OFF_CONTRACT_HINT}")
            return [doc.error(body_where, message)]
        if is_stream(media) and isinstance(reply.body, str):
            # OpenAPI 3.2: a stream written out in the reply, each item held to the item schema
            samples = self.served[op].samples
            stream = StreamCheck(media_type, None if media.item_schema is None else samples.check(media.item_schema),
                                 None if media.schema is None else samples.check(media.schema))
            return found + [doc.error(v.where, f"{v.message} ({named})")
                            for v in stream.violations(reply.body.encode("utf-8"), body_where)[0]]
        if media.schema is None:
            return found
        check = self.served[op].response_check(response.status, media)
        if isinstance(check, str):
            return [doc.error(body_where, f"cannot check the body: {check}")]
        # The body as a request could fill it: each lone placeholder replaced by a value of its request field,
        # so a oneOf or a required key around it is judged on a real value, not on the template's text.
        around: set[str] = set()
        if templated:
            probe = _probe(reply.body, {at: source.sample for at, (_, source) in sources.items()}, body_where)
            around = {v.where for v in check.errors(probe, body_where)}
        return found + [
            doc.error(v.where, f"{v.message} ({named})")
            for v in check.errors(reply.body, body_where)
            # At a placeholder the type check above speaks; around one, only what fails with a real value in it.
            if not any(v.where == t or v.where.startswith((t + ".", t + "[")) for t in templated)
            and (v.where in around or not any(t.startswith((v.where + ".", v.where + "[")) for t in templated))
        ]

    def placeholder_errors(
        self, doc: ScenarioDocument, op: Operation, response: Response, reply: Reply,
        sources: dict[str, tuple[Placeholder, Source]],
    ) -> list[ScenarioError]:
        """Each lone placeholder of the body must name a request value whose type the response takes there."""
        found: list[ScenarioError] = []
        _, _, media = _media(response, reply) if response.content else (None, "", None)
        for at, (p, source) in sources.items():
            if source.problem is not None:
                found.append(doc.error(at, f"{p.text}: {source.problem}; {OFF_CONTRACT_HINT}"))
                continue
            if source.types is None or media is None or media.schema is None:
                continue
            wanted = wanted_types(media.schema, p.location[1:])
            if wanted is not None and not fits(source.types, wanted):
                message = (f"{p.text} gives {describe(source.types)} (as the request schema of {op.label} says), "
                           f"but {op.label} response {response.status} needs {describe(wanted)} here; put it inside "
                           f"text (\"Plant {p.text}\") to send it as a string, or {OFF_CONTRACT_HINT}")
                found.append(doc.error(at, message))
        return found

    def rendered_violations(self, op: Operation, reply: Reply, body: object) -> list[Violation]:
        """Run time: a templated reply body, once filled in, against its declared response schema.

        Static bodies were checked at load and are skipped at no cost; so are replies whose status or
        media type has no schema. The first call per (operation, reply) decides, later ones reuse it.
        """
        check = self.rendered.make(reply, lambda: self._rendered_check(op, reply), op)
        if check is None or check.is_valid(body):
            return []
        response = op.response_for(reply.status)
        named = f"{op.label} response {response.status if response else reply.status}"
        return [Violation(v.where, f"{v.message} ({named})") for v in check.errors(body, "body")]

    def _rendered_check(self, op: Operation, reply: Reply) -> SchemaCheck | None:
        if reply.body is NO_BODY or not placeholder_paths(reply.body):
            return None
        response = op.response_for(reply.status)
        if response is None or not response.content:
            return None
        _, _, media = _media(response, reply)
        if media is None or media.schema is None:
            return None
        check = self.served[op].response_check(response.status, media)
        return check if isinstance(check, SchemaCheck) else None

    def check_rule(self, doc: ScenarioDocument, rule: Rule, raw: RuleData) -> tuple[list[ScenarioError], Rule]:
        """The rule's contract errors, and the rule as it answers: one without `method:` whose replies fit some of
        the operations its match allows, and not others, answers only those (`Rule.answers`)."""
        found: list[ScenarioError] = []
        if "reply" in raw:
            places, raws = [f"{rule.label}.reply"], [raw["reply"]]
        else:
            places, raws = [f"{rule.label}.replies[{j}]" for j in range(len(raw["replies"]))], raw["replies"]
        templated: list[str] = []
        lone: dict[str, list[Placeholder]] = {where: [] for where in places}
        for where, reply_raw in zip(places, raws, strict=True):  # templates are checked even off contract: they must render
            for p in placeholder_paths(reply_raw):
                at = location_path(where, p.location)
                if p.problem is not None:
                    found.append(doc.error(at, p.problem))
                elif p.lone:
                    templated.append(at)
                    lone[where].append(p)
        ops, what, why = self.operations(rule.match)
        if rule.off_contract:
            return found + (self.webhook_errors(doc, rule, ops) if rule.webhooks else []), rule
        if not ops:
            return [*found, *(self.webhook_errors(doc, rule, ops) if rule.webhooks else []),
                    doc.error(f"{rule.label}.match.{what}", why)], rule
        broken = {op: [error for where, reply in zip(places, rule.replies, strict=True) if reply.fault is None
                       for error in self.reply_errors(doc, op, reply, where, templated, lone[where])] for op in ops}
        fitting = [op for op in ops if not broken[op]]
        if rule.match.method is None and fitting and len(fitting) < len(ops):
            # No method given: the rule answers the operations its replies fit (POST /plants), and leaves the others
            # (GET /plants, whose answer is a list) to the default answer. At run time it answers those only.
            rule = replace(rule, answers=frozenset(op.label for op in fitting))
            ops = fitting
        if rule.webhooks:
            found.extend(self.webhook_errors(doc, rule, ops))
        return found + [error for op in ops for error in broken[op]], rule

    def webhook_errors(self, doc: ScenarioDocument, rule: Rule, ops: list[Operation]) -> list[ScenarioError]:
        """A rule's `webhooks:`: each names a webhook of the spec or a callback of every operation the rule
        matches, and its body fits that webhook's request schema (unless the rule is off_contract)."""
        found: list[ScenarioError] = []
        hooks = {hook.name: hook for hook in reversed(self.spec.webhooks)}
        for j, sent in enumerate(rule.webhooks or ()):
            where = f"{rule.label}.webhooks[{j}]"
            hook = hooks.get(sent.name)
            if hook is None:
                callbacks = [next((c for c in op.callbacks if c.name == sent.name), None) for op in ops]
                if ops and all(c is not None for c in callbacks):
                    hook = callbacks[0]
            if hook is None:
                names = [*hooks, *dict.fromkeys(c.name for op in ops for c in op.callbacks)]
                hint = did_you_mean(sent.name, names) or (f"declared: {', '.join(names)}" if names else
                                                         "the spec declares no webhooks and the rule's operations no "
                                                         "callbacks")
                found.append(doc.error(f"{where}.name", f"{sent.name!r} is not a webhook of the spec nor a callback "
                                                        f"of the operations this rule matches ({hint})"))
                continue
            placeholders = placeholder_paths(sent.body) if sent.body is not NO_BODY else []
            found.extend(doc.error(location_path(f"{where}.body", p.location), p.problem)
                         for p in placeholders if p.problem is not None)
            schema = json_body_schema(hook.operation)
            # A templated body is checked once rendered, when it is sent (webhooks/dispatch.py).
            if sent.body is NO_BODY or schema is None or rule.off_contract or placeholders:
                continue
            check = self.hook_checks.get(hook)
            if check is None:
                check = self.hook_checks.put(hook, SchemaCheck(schema, f"webhooks.{hook.name}", checked=True))
            found.extend(doc.error(v.where, f"{v.message} (webhook {hook.name} request body)")
                         for v in check.errors(sent.body, f"{where}.body"))
        return found
