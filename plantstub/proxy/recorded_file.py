"""A scenario file made of exchanges (`--record`, `plantstub import-har`): the rules, built off the event loop, and
the file's text. The data is written by PyYAML's emitter; the leading comment's lines, which carry text from traffic
(a path, a problem), are each escaped so that nothing can end a line of ours: whatever came, the file holds the
rules we built and nothing else."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import overload

from plantstub._json import decode_json, inside, is_json
from plantstub._words import plural
from plantstub._yaml import dump_yaml
from plantstub.errors import ScenarioError
from plantstub.redaction import REDACTED, Redactor, secret_name, secret_value
from plantstub.scenarios.contract import ScenarioContract
from plantstub.scenarios.document import MAX_VALUES, MatchData, ReplyData, RuleData
from plantstub.scenarios.load import load_rule

# What may stand in a comment as it is: printable characters YAML does not read as a line break (LF, CR, NEL,
# U+2028, U+2029) nor refuses (the C0 and C1 controls, DEL, surrogates, U+FEFF, U+FFFE, U+FFFF), nor that turn the
# text around (the bidirectional marks and overrides); the rest, and `\` itself, is written as an escape (`\x0a`).
_UNSAFE = (r"[^\t\x20-\x5b\x5d-\x7e\xa0-\u200d\u2010-\u2027\u202f-\u2065\u206a-\ud7ff\ue000-\ufefe"
           r"\uff00-\ufffd\U00010000-\U0010ffff]")  # compiled when a file is written (5 ms: not at every start)
_SURROGATE = re.compile(r"[\ud800-\udfff]")  # a lone half of a UTF-16 pair: JSON's `\ud800` escape allows it, YAML not
FILE_VALUES = MAX_VALUES - 100  # what a file's rules may hold, with room for the description and the keys around


def unwritable(value: object) -> str | None:
    """Why a YAML file cannot hold `value` (a lone surrogate, `\\ud800`, in a text or a key), or None when it can."""
    for item in inside(value, keys=True):
        found = _SURROGATE.search(item) if isinstance(item, str) else None
        if found is not None:
            return (f"it holds a lone surrogate ({found.group().encode('unicode_escape').decode()}), which JSON's "
                    "escapes allow and a YAML file cannot hold")
    return None


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\\":
        return "\\\\"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def comment(text: str) -> str:
    """`text` as one comment line: `# ` and the text, every character that could end or break the line escaped."""
    return "# " + re.sub(_UNSAFE, _escape, text)  # re's own cache keeps it compiled


@dataclass(frozen=True, slots=True)
class Exchange:
    """One request and the real service's answer, kept as the bytes that came (parsed only when a file is built).

    `body`: the request's JSON body (b"" when it had none, or not JSON); `answer`: the answer's body, as JSON when
    `content_type` says JSON, else as text."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    body: bytes
    status: int
    content_type: str | None
    answer: bytes

    @property
    def label(self) -> str:
        return f"{self.method} {self.path} -> {self.status}"

    def request_body(self) -> dict[str, object] | None:
        """The request's JSON body when it is an object (what a rule matches on), else None."""
        if not self.body:
            return None
        value = decode_json(self.body)  # it parsed when it came
        return value if isinstance(value, dict) else None

    def answer_body(self) -> object:
        """The answer's body as a reply carries it: parsed JSON, else text; None when empty."""
        if not self.answer:
            return None
        return decode_json(self.answer) if is_json(self.content_type) else self.answer.decode("utf-8", "replace")


@dataclass
class Document:
    """A scenario made of exchanges: its rules, what was left out and why, and the YAML text."""

    rules: list[RuleData] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    recorded: int = 0  # exchanges the rules answer

    def text(self, source: str) -> str:
        """The file: the leading comment (one escaped line each), then the data as PyYAML's emitter writes it."""
        head = [f"Recorded by plantstub from {source}: {plural(self.recorded, 'exchange')} "
                f"in {plural(len(self.rules), 'rule')}."]
        if self.left_out:
            head.append(f"Left out ({len(self.left_out)}):")
            head.extend(f"  {line}" for line in self.left_out)
        data = {"description": f"Recorded from {_SURROGATE.sub(chr(0xFFFD), source)}.", "rules": self.rules}
        return "".join(f"{comment(line)}\n" for line in head) + dump_yaml(data)


@overload
def matchable(value: dict[str, object], redact: bool) -> dict[str, object]: ...


@overload
def matchable(value: object, redact: bool) -> object: ...


def matchable(value: object, redact: bool) -> object:
    """A request body as a rule matches it: secret fields left out when redacting (the rule then matches whatever
    secret a client sends), and keys starting with `$` left out (a match reads them as matchers)."""
    if isinstance(value, dict):
        return {k: matchable(v, redact) for k, v in value.items()
                if not (isinstance(k, str) and k.startswith("$"))
                and not (redact and ((isinstance(k, str) and secret_name(k)) or secret_value(v)))}
    if isinstance(value, list):
        return [matchable(v, redact) for v in value]
    return REDACTED if redact and secret_value(value) else value


def query_match(query: Iterable[tuple[str, str]], redact: bool, ignored: Sequence[str]) -> dict[str, str | list[str]]:
    """A request's query as a rule matches it: each name's value (the list of them when repeated), without the names
    `ignored` (--record-ignore-query) and, when redacting, those holding secrets (any value then matches)."""
    found: dict[str, list[str]] = {}
    for name, value in query:
        if name not in ignored and not (redact and secret_name(name)):
            found.setdefault(name, []).append(value)
    return {name: values[0] if len(values) == 1 else values for name, values in found.items()}


def values_in(value: object) -> int:
    """How many values a scenario file counts for `value` (itself, and every item and member inside)."""
    return sum(1 for _ in inside(value))


def _reply(exchange: Exchange, redact: bool) -> ReplyData:
    reply: ReplyData = {"status": exchange.status}
    if exchange.content_type and exchange.answer:
        reply["headers"] = {"Content-Type": exchange.content_type}
    answer = exchange.answer_body()
    if answer is not None and redact:  # and what was taken out of the request is not written in the answer either
        redactor = Redactor()
        redactor.value(exchange.request_body())
        redactor.pairs(exchange.query)
        answer = redactor.hide_in(redactor.value(answer))
    if answer is not None:
        reply["body"] = answer
    return reply


def _key(value: object) -> str:
    """The same text for equal values (keys in any order): what tells a rule's requests apart."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _fields(value: object) -> int:
    if isinstance(value, dict):
        return sum(1 + _fields(v) for v in value.values())
    if isinstance(value, list):
        return sum(_fields(v) for v in value)
    return 0


def build(exchanges: Iterable[Exchange], contract: ScenarioContract, redact: bool = True,
          ignored: Sequence[str] = ()) -> Document:
    """The scenario of `exchanges` (each one that can become a rule: recording checked them as they came): one rule
    per distinct request (method, path, query, the request body's fields), its answers in the order they came
    (`replies:` when more than one); each rule checked as a scenario file's, so the file passes `plantstub check`.
    Rules go the most specific first (more query and body fields), so a partial match cannot shadow one. Slow for
    big answers: run it off the event loop."""
    document = Document()
    groups: dict[tuple[str, str, str, str], tuple[MatchData, list[Exchange]]] = {}
    for exchange in exchanges:
        match: MatchData = {"method": exchange.method, "path": exchange.path}
        query = query_match(exchange.query, redact, ignored)
        if query:
            match["query"] = query
        body = exchange.request_body()
        if body is not None:
            body = matchable(body, redact)
            if body:
                match["body"] = body
        key = (exchange.method, exchange.path, _key(query), _key(match.get("body")))
        groups.setdefault(key, (match, []))[1].append(exchange)
    ordered = sorted(groups.items(), key=lambda item: (
        item[0][0], item[0][1], -len(item[1][0].get("query", {})) - _fields(item[1][0].get("body")), item[0][2:]))
    room = FILE_VALUES
    for _, (match, group) in ordered:
        replies = [_reply(exchange, redact) for exchange in group]
        rule: RuleData = {"match": match}
        if len(replies) == 1:
            rule["reply"] = replies[0]
        else:
            rule["replies"] = replies
        size = values_in(rule) + 1
        why = unwritable(rule)
        if why is not None:
            document.left_out.append(f"{group[0].label}: not recorded: {why}")
            continue
        if size > room:
            document.left_out.append(f"{group[0].label}: not recorded: the file would hold more than {MAX_VALUES:,} "
                                     "values, more than a scenario file may; save more often (POST "
                                     "/__plantstub/record/save)")
            continue
        try:
            load_rule(rule, contract, "recording")
        except ScenarioError as exc:  # a redacted value the schema refuses, a path the spec does not serve...
            said = str(exc).replace("\n", "; ")
            document.left_out.append(f"{group[0].label}: not recorded: {_scrubbed(said, group, redact)}")
            continue
        room -= size
        document.rules.append(rule)
        document.recorded += len(group)
    return document


def _scrubbed(text: str, group: list[Exchange], redact: bool) -> str:
    """A message about these exchanges without the values redaction took out of them."""
    if not redact:
        return text
    redactor = Redactor()
    for exchange in group:
        redactor.value(exchange.request_body())
        redactor.value(exchange.answer_body())
        redactor.pairs(exchange.query)
    return redactor.scrub(text)
