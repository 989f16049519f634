"""Which deliveries an answer sets off: the default trigger, a rule's `webhooks:`, the operation's callbacks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from plantstub._budget import Budget
from plantstub._json import NO_BODY
from plantstub._memo import IdentityMemo
from plantstub.config import webhook_url
from plantstub.contract.model import Operation, Spec, Webhook
from plantstub.contract.samples import generate
from plantstub.contract.schema import SchemaCheck
from plantstub.contract.webhooks import RequestValues, default_triggers, json_body_schema, resolve_url, webhook_names
from plantstub.webhooks.deliveries import DEFAULT_LOG_BYTES, DeliveryLog
from plantstub.webhooks.outbox import GRACE, Outbox
from plantstub.webhooks.sender import Sender, job, payload_of
from plantstub.webhooks.subscriptions import Subscriptions

# A rule's `webhooks:` as (name, body or NO_BODY, delay_ms, whether the body is to be checked: a rendered template)
RuleWebhooks = Sequence[tuple[str, Any, int, bool]]


def _sample(hook: Webhook) -> Any:
    schema = json_body_schema(hook.operation)
    return None if schema is None else generate(schema).value


class Webhooks:
    """A stub's webhooks at run time: subscriptions, the sender and the delivery log."""

    def __init__(self, spec: Spec, subscribed: tuple[tuple[str, str], ...] = (), max_bytes: int = DEFAULT_LOG_BYTES,
                 memory: Budget | None = None, outbox: Outbox | None = None, given_as: str = "--webhook") -> None:
        self.hooks = {hook.name: hook for hook in reversed(spec.webhooks)}  # a name's first method wins
        self.subscriptions = Subscriptions(webhook_names(spec), subscribed, given_as)
        self.log = DeliveryLog(max_bytes=max_bytes, memory=memory)
        self.outbox = outbox if outbox is not None else Outbox()  # the stub's, shared by its sessions
        self.sender = Sender(self.log, self.outbox, memory)
        self.triggers = default_triggers(spec)
        self._calling_back = frozenset(op for op in spec.operations if op.callbacks)
        self.watched = self._calling_back  # set by _watch(), from the subscriptions
        # operation -> what its default trigger sends, as (webhook name, the URLs subscribed to it, the webhook's
        # operation), webhooks nobody is subscribed to left out; set by _watch() whenever the subscriptions change
        self._sends: dict[Operation, tuple[tuple[str, tuple[str, ...], Operation], ...]] = {}
        self.subscriptions.on_change = self._watch
        self._watch(self.subscriptions.urls)
        self.samples: IdentityMemo[Any] = IdentityMemo()  # webhook -> a body that fits it, made on first use
        self.checks: IdentityMemo[SchemaCheck] = IdentityMemo()  # webhook -> the check of its request body

    def _watch(self, subscribed: dict[str, str]) -> None:
        """What each default trigger sends to whom (`_sends`), found once, and the operations whose 2xx answers may send
        something without a rule saying so: those with callbacks, and the default trigger's that have a subscriber.
        Nothing else pays (with no subscriber, a create costs nothing more on a spec that declares webhooks)."""
        targets = self.subscriptions.targets
        sends = {op: tuple((hook.name, urls, hook.operation) for hook in hooks if (urls := targets(hook.name)))
                 for op, hooks in self.triggers.items()} if subscribed else {}
        self._sends = {op: plan for op, plan in sends.items() if plan}
        self.watched = self._calling_back | frozenset(self._sends)

    def sample(self, hook: Webhook) -> Any:
        return self.samples.make(hook, lambda: _sample(hook))

    def answered(self, op: Operation, status: int, record: Any, request: RequestValues | None,
                 rule: RuleWebhooks | None) -> None:
        """A 2xx answer to `op` was decided: queue what it sends. `record` is the created record; `rule` is the
        answering rule's `webhooks:` (None: the rule says nothing, or no rule answered); `request` is what callbacks
        and a rule's webhooks read (None when there are neither)."""
        if not 200 <= status < 300:
            return
        if rule is None:
            for name, urls, hook_op in self._sends.get(op, ()):  # self.send(hook, record, 0), without its frames
                self.sender.submit_to(urls, name, payload_of(record), hook_op)
            if not op.callbacks:
                return
        else:
            callbacks = {hook.name: hook for hook in op.callbacks}
            for name, body, delay_ms, unchecked in rule:
                found = self.hooks.get(name) or callbacks.get(name)
                if found is None:  # checked at load: a rule matching another operation than this one
                    continue
                hook = found
                if body is NO_BODY:
                    body = record if hook in self.triggers.get(op, ()) else self.sample(hook)
                broken = self.body_violations(hook, body) if unchecked else []
                if broken:  # the scenario's fault: recorded, not sent
                    self.sender.submit(job(self.log, hook.name, "", payload_of(body), hook.operation,
                                           f"not sent: the rule's body breaks the webhook's schema: {broken}"))
                elif hook.expression:
                    self.call_back(hook, request, body, delay_ms)
                else:
                    self.send(hook, body, delay_ms)
        ruled = {entry[0] for entry in rule or ()}
        for hook in op.callbacks:
            if hook.name not in ruled:
                self.call_back(hook, request, self.sample(hook), 0)

    def body_violations(self, hook: Webhook, body: Any) -> str:
        """Why a rendered body does not fit the webhook's request schema ("" when it does)."""
        schema = json_body_schema(hook.operation)
        if schema is None:
            return ""
        check = self.checks.make(hook, lambda: SchemaCheck(schema, f"webhooks.{hook.name}", checked=True))
        return "; ".join(map(str, check.errors(body, "body")))

    def send(self, hook: Webhook, body: Any, delay_ms: int) -> None:
        targets = self.subscriptions.targets(hook.name)
        if targets:  # the body written once, now: the parsed body is not kept while it waits
            self.sender.submit_to(targets, hook.name, payload_of(body), hook.operation, delay_ms)

    def call_back(self, hook: Webhook, request: RequestValues | None, body: Any, delay_ms: int) -> None:
        assert request is not None  # given whenever the operation has callbacks or a rule sends webhooks
        url, problem = resolve_url(hook.expression, request)
        if problem is None:
            try:
                webhook_url(url)
            except ValueError as exc:
                problem = str(exc)
        error = None if problem is None else f"not sent: {problem}"
        # A request named this URL: it may not reach the stub itself (checked where it is sent).
        self.sender.submit(job(self.log, hook.name, url, payload_of(body), hook.operation, error, explicit=False),
                           delay_ms)

    def clear(self) -> int:
        """Forget deliveries, the losses counted and what waits to be sent; how many were kept."""
        count = self.log.clear()
        self.sender.forget_before(self.log.epoch)
        return count

    def reset(self) -> None:
        """Forget deliveries; the start-up subscriptions come back."""
        self.clear()
        self.subscriptions.reset()

    # -- subscriptions and figures, for the session's control surface ----------------------------
    def subscribe(self, url: Any, name: Any) -> None:
        self.subscriptions.subscribe(url, name, "url", "name")  # stub.subscribe(url, name)'s own arguments

    def subscribed(self) -> dict[str, str]:
        """Name (or `*`) -> URL, as shown (a password reads `***`)."""
        return self.subscriptions.shown()

    def replace(self, mapping: dict[Any, Any]) -> None:
        self.subscriptions.replace(mapping)

    def unsubscribe(self) -> None:
        """The start-up subscriptions again (--webhook), and no other."""
        self.subscriptions.reset()

    def problems(self) -> list[str]:
        return self.log.problems(self.sender.cap)

    def figures(self) -> dict[str, int]:
        log = self.log
        return {"subscriptions": len(self.subscriptions.urls), "delivered": log.recorded,
                "pending": self.pending, "lost": log.lost, "dropped": log.dropped,
                "unsent_at_session_end": self.outbox.unsent_at_end, "epoch": log.epoch}

    @property
    def pending(self) -> int:
        """This epoch's deliveries still being sent (one of the test before, sent late, is not among them)."""
        return self.sender.pending_in(self.log.epoch)

    async def close(self, grace: float = GRACE) -> int:
        """Send what is pending within `grace` seconds, then stop; how many deliveries were not sent."""
        if not self.sender.started:
            self.sender.closed = True
            return 0
        return await self.outbox.drain([self.sender], grace)
