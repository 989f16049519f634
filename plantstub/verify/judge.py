"""A service's answer judged twice: against the contract (as --proxy judges one, and its declared headers), and
against the rule's own reply, its templates rendered with the request sent: the same status (`status`), the same
status class (`class`), the same status and the reply's shape found in the answer (`shape`), or equal bodies
(`body`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plantstub._json import MISSING, NO_BODY, cut, shown
from plantstub._words import plural
from plantstub.contract.operations import ServedOperation
from plantstub.matching import json_equal
from plantstub.proxy.verdict import header_problems, judge
from plantstub.scenarios.model import Rule
from plantstub.scenarios.replies import rule_reply
from plantstub.verify.client import Answer, NoAnswer
from plantstub.verify.request import Request

MAX_DETAILS = 10  # differences listed for one rule; the rest are counted


@dataclass(frozen=True, slots=True)
class Verdict:
    """The stub's reply and the service's answer side by side, what differs and what broke the contract."""

    stub_status: int
    stub_body: object  # the rendered reply's body, NO_BODY when it has none
    service_status: int | None  # None: no answer
    service_body: object  # parsed JSON, else text, None when empty
    differs: tuple[str, ...]  # what differs: status, status class, shape, body, no answer
    details: tuple[str, ...]  # each difference, in the location notation
    broke: tuple[str, ...]  # the answer's contract problems
    seconds: float


def verdict(rule: Rule, request: Request, answer: Answer | NoAnswer, served: ServedOperation, compare: str,
            extra: tuple[tuple[str, str], ...], cache: dict[int, Any]) -> Verdict:
    """`answer` to `request` against the contract and against `rule`'s reply, by `compare`."""
    reply = rule.replies[0]
    incoming = request.incoming(extra)
    stub, _ = rule_reply(reply, incoming, None if request.body is NO_BODY else request.body, cache)
    if isinstance(answer, NoAnswer):
        return Verdict(stub.status, stub.body, None, None, ("no answer",), (answer.reason,), (), answer.seconds)
    broke, body = judge(served, answer.status, answer.content_type, answer.payload)
    broke += header_problems(served, answer.status, answer.headers)
    differs: list[str] = []
    details: list[str] = []
    if compare == "class":
        if stub.status // 100 != answer.status // 100:
            differs.append("status class")
    elif stub.status != answer.status:
        differs.append("status")
    if compare in ("shape", "body") and not differs and stub.body is not NO_BODY:  # a body of another status: apart
        found = (shape_differences if compare == "shape" else body_differences)(stub.body, body, "body")
        if found:
            differs.append(compare)
            details.extend(found[:MAX_DETAILS])
            if len(found) > MAX_DETAILS:
                details.append(f"... and {len(found) - MAX_DETAILS} more")
    return Verdict(stub.status, stub.body, answer.status, body, tuple(differs), tuple(details), tuple(broke),
                   answer.seconds)


def kind(value: object) -> str:
    """A JSON value's type as a difference names it: integers and decimals are both numbers."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _items(value: list[object]) -> str:
    return plural(len(value), "item")


def _service(value: object) -> str:
    return "absent" if value is MISSING else f"{shown(value)} ({kind(value)})"


def shape_differences(expected: object, actual: object, where: str) -> list[str]:
    """Where the reply's shape is not found in the answer: each property the reply has, with the same JSON type (an
    answer may have more); the items of an array each of the shape of one of the reply's items."""
    if actual is MISSING:
        return [f"{where}: stub {kind(expected)}, service absent"]
    if kind(expected) != kind(actual):
        return [f"{where}: stub {kind(expected)}, service {_service(actual)}"]
    found: list[str] = []
    if isinstance(expected, dict) and isinstance(actual, dict):  # (the same kind, said above)
        for key, item in expected.items():
            found.extend(shape_differences(item, actual.get(key, MISSING), f"{where}.{key}"))
    elif isinstance(expected, list) and expected and isinstance(actual, list):
        for i, item in enumerate(actual):
            tried = [shape_differences(one, item, f"{where}[{i}]") for one in expected]
            if all(tried):  # of none of the reply's item shapes: the nearest one's differences
                nearest: list[str] = min(tried, key=len)
                found.extend(nearest)
    return found


def body_differences(expected: object, actual: object, where: str) -> list[str]:
    """Where the answer's body is not the reply's: values that differ, properties either one lacks."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        found: list[str] = []
        for key, item in expected.items():
            found.extend(body_differences(item, actual.get(key, MISSING), f"{where}.{key}"))
        found.extend(f"{where}.{cut(str(key))}: stub absent, service {shown(item)}" for key, item in actual.items()
                     if key not in expected)  # the service's own key: cut short
        return found
    if isinstance(expected, list) and isinstance(actual, list):
        found = [] if len(expected) == len(actual) else [f"{where}: stub {_items(expected)}, service {_items(actual)}"]
        return found + [d for i, (a, b) in enumerate(zip(expected, actual, strict=False))
                        for d in body_differences(a, b, f"{where}[{i}]")]
    if json_equal(expected, actual):
        return []
    if actual is MISSING:
        return [f"{where}: stub {shown(expected)}, service absent"]
    return [f"{where}: stub {shown(expected)}, service {shown(actual)}"]

