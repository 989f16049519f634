"""Who answered a call: the `Answerer` decide() (or the few refusals before it) chose, kept in the call's record, and
its JSON form, `answered_by`, that every view reads (the admin API, the journal file, HAR, the live page, the report).

An Answerer is small and mostly shared: the plain answers (the default, the store, Prefer, a refusal, a crash, a client
that left, the proxy) are module constants, a scenario rule's is made once per reply and kept with the scenario, so a
call costs one reference. Its text is built only when a view asks (`answered_text`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NamedTuple, TypedDict

from plantstub.recording.verdict import Upstream

Kind = Literal["check", "prefer", "rule", "scenario", "store", "default", "proxy", "crash", "client_left"]
KINDS: tuple[Kind, ...] = ("check", "prefer", "rule", "scenario", "store", "default", "proxy", "crash", "client_left")


class Answerer(NamedTuple):
    """Who answered one call. `kind` is one of KINDS; the rule kinds say which rule and where it is written:

    - `scenario`: `scenario` (its name), `rule` (`rules[0]`, `rules[0].replies[1]`), `at` (`file:line` of the reply)
    - `rule` (a rule from code): `id` (`r1`), `rule` (`r1`, `r1.replies[1]`), `at` (the `file:line` that declared it)
    """

    kind: Kind
    rule: str | None = None
    scenario: str | None = None
    id: str | None = None
    at: str | None = None


CHECK = Answerer("check")  # a refusal of ours: the request check (contract, route, scenario header), size, time, HTTP
PREFER = Answerer("prefer")  # the Prefer header chose the answer (or its refusal, when it cannot be met)
STORE = Answerer("store")  # --stateful: the records answered
DEFAULT = Answerer("default")  # the operation's default answer
PROXY = Answerer("proxy")  # --proxy: the real service answered (its verdict is the call's `upstream`)
CRASH = Answerer("crash")  # a plantstub bug: answered 500
CLIENT_LEFT = Answerer("client_left")  # the client left before the answer went out: a 499 recorded, nothing sent


def scenario_rule(scenario: str, label: str, file: str, line: int) -> Answerer:
    """A scenario's rule reply (made once per reply: decide() keeps it with the scenario's index)."""
    return Answerer("scenario", label, scenario, None, f"{file}:{line}")


def code_rule(rule_id: str, label: str, source: str) -> Answerer:
    """A rule from code (`stub.when(...)`, admin `POST rules`), declared at `source` (`file:line`)."""
    return Answerer("rule", label, None, rule_id, source)


class AnsweredBy(TypedDict, total=False):
    """`answered_by` as the admin API, the journal file and HAR show it: `kind`, and what that kind tells."""

    kind: Kind
    scenario: str
    rule: str
    id: str
    at: str
    fault: str  # a rule's reply that misbehaved on the socket (`connection_reset`...)
    url: str  # proxy: the real service's verdict, as `upstream` shows it
    status: int | None
    valid: bool
    errors: list[str]


def answered_json(answerer: Answerer, fault: str | None, upstream: Upstream | None) -> AnsweredBy:
    """The JSON form of who answered a call; `fault` and `upstream` are the call's own (`response.fault`,
    `upstream`), shown with the rule that sent the fault and with the proxy."""
    kind = answerer.kind
    if kind == "scenario":
        found: AnsweredBy = {"kind": kind, "scenario": answerer.scenario or "", "rule": answerer.rule or "",
                             "at": answerer.at or ""}
    elif kind == "rule":
        found = {"kind": kind, "id": answerer.id or "", "rule": answerer.rule or "", "at": answerer.at or ""}
    elif kind == "proxy" and upstream is not None:
        return {"kind": kind, "url": upstream["url"], "status": upstream["status"], "valid": upstream["valid"],
                "errors": list(upstream["errors"])}
    else:
        return {"kind": kind}
    if fault is not None:
        found["fault"] = fault
    return found


# The JSON form of each plain answerer by its id(), made once: the journal file writes one for every call (never
# changed, only serialized there; a Call's view gets a dict of its own from answered_json())
PLAIN_JSON: dict[int, AnsweredBy] = {id(plain): {"kind": plain.kind}
                                     for plain in (CHECK, PREFER, STORE, DEFAULT, CRASH, CLIENT_LEFT)}

_WORDS = {"check": "check", "prefer": "prefer", "store": "store", "default": "default", "crash": "crash (a plantstub bug)",
          "client_left": "client left", "proxy": "real service"}


def answered_text(answered: Mapping[str, object] | None) -> str:
    """`answered_by` in a few words, as the live page and the report show it: `default`, `check`, `scenario
    store-closed rules[0] (scenarios/store-closed.yaml:4)`, `rule r1 (tests/test_x.py:12)`, `real service
    http://host/plants`. None (a call read from a stub older than the field): `unknown`."""
    if not answered:
        return "unknown"
    kind = answered.get("kind", "")
    if kind == "scenario":
        text = f"scenario {answered.get('scenario')} {answered.get('rule')} ({answered.get('at')})"
    elif kind == "rule":
        text = f"rule {answered.get('rule')} ({answered.get('at')})"
    elif kind == "proxy" and "url" in answered:
        said = "" if answered.get("status") is not None else " (no answer)"
        return f"real service {answered['url']}{said}"
    else:
        word = str(kind)
        return _WORDS.get(word, word)
    fault = answered.get("fault")
    return text if fault is None else f"{text}, fault {fault}"
