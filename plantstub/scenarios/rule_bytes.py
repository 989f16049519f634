"""What a rule from code holds in memory, in bytes: its data as declared, the model built from it and the reply
templates compiled on first use. An estimate in one walk over the data, calibrated with tracemalloc."""

from __future__ import annotations

from sys import getsizeof
from typing import Any

import orjson

from plantstub._json import NO_BODY
from plantstub.scenarios.model import Rule

# Calibrated on CPython 3.11 (tracemalloc of rules declared over the admin API, first request answered):
RULE = 1_200  # DeclaredRule, Rule, Criteria, their tuples and dicts, the id and uses entries, the index's slots
REPLY = 300  # one Reply, and its compiled (static) template entry once it has answered
WEBHOOK = 400  # one RuleWebhook and its template entry
HEADER = 64  # a reply header's compiled (static) template
FLOAT = getsizeof(1.5)
# A reply template's compiled parts (scenarios/templating.py): per entry of a mapping or list that holds a
# placeholder somewhere below, per placeholder string, per mapping or list holding one.
TEMPLATE_ENTRY = 64
TEMPLATE_LONE = 240
TEMPLATE_TEXT = 360
TEMPLATE_NODE = 200


def value_bytes(value: Any) -> int:
    """The bytes a JSON value holds (containers, keys, strings, numbers), each object counted where it is met:
    what a value parsed from a request body holds. A key is counted once (parsers and Python's literals share
    a key's text); small integers, booleans and null are shared by everything: nothing. (Any: each item's type() is
    read once and compared, and the branches use the item as that type.)"""
    total = 0
    keys: set[str] = set()
    stack = [value]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        item = pop()
        kind = type(item)
        if kind is str:
            total += getsizeof(item)
        elif kind is dict:
            total += getsizeof(item)
            for key, inner in item.items():
                if key not in keys:
                    keys.add(key)
                    total += getsizeof(key)
                push(inner)
        elif kind is list:
            total += getsizeof(item)
            extend(item)
        elif kind is int:
            if not -5 <= item <= 256:
                total += getsizeof(item)
        elif kind is float:
            total += FLOAT
    return total


def _template_bytes(value: object) -> int:
    """What compiling `value` as a reply template keeps (0 when it holds no placeholder: it is kept as it is)."""
    if isinstance(value, str):
        if "{{" not in value:
            return 0
        lone = value.startswith("{{") and value.endswith("}}") and value.count("{{") == 1
        return TEMPLATE_LONE if lone else TEMPLATE_TEXT + 2 * len(value)
    if isinstance(value, dict):
        inner = sum(_template_bytes(item) for item in value.values())
        return inner + TEMPLATE_NODE + TEMPLATE_ENTRY * len(value) if inner else 0
    if isinstance(value, list):
        inner = sum(_template_bytes(item) for item in value)
        return inner + TEMPLATE_NODE + TEMPLATE_ENTRY * len(value) if inner else 0
    return 0


def _templated(value: object) -> int:
    """A reply body's or header's template bytes; the walk only for one that holds a placeholder (checked in C)."""
    if value is NO_BODY or value is None:
        return 0
    try:
        text = orjson.dumps(value)
    except TypeError:
        return 0
    return _template_bytes(value) if b"{{" in text else 0


def rule_bytes(rule: Rule, data: object, source: str) -> int:
    """The bytes one rule from code holds: `data` (what was declared, shared with `rule`'s bodies), the model
    `rule` adds to it (headers copied, matchers' text), `source`, and the templates its replies compile to."""
    total = RULE + value_bytes(data) + getsizeof(source)
    match = rule.match
    # `match:`'s headers are copied with their names in lower case; a reply's headers are copied, then compiled
    total += getsizeof(match.headers) + getsizeof(match.query) + sum(map(getsizeof, match.headers))
    for reply in rule.replies:
        total += REPLY + 2 * getsizeof(reply.headers) + HEADER * len(reply.headers)
        total += _templated(reply.body) + _templated(reply.headers)
    for hook in rule.webhooks or ():
        total += WEBHOOK + _templated(hook.body)
    return total
