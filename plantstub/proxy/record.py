"""--record DIR: the real service's exchanges turned into one scenario file per save, by the rules `import-har`
follows too: a rule per request (method, path, the request body's fields), repeats as `replies:` in order, secrets
redacted, answers that broke the contract left out and listed in the file's leading comment."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from plantstub.errors import ScenarioError
from plantstub.scenarios.contract import ScenarioContract
from plantstub.scenarios.load import load_rule

REDACTED = "REDACTED"
SECRET_HEADERS = frozenset({"authorization", "cookie", "set-cookie", "proxy-authorization"})
_SECRET_NAME = re.compile(r"token|secret|password|key", re.I)
MAX_EXCHANGES = 10_000  # kept between saves; beyond, each is counted as left out
_PLACEHOLDER = "{{"


@dataclass(frozen=True, slots=True)
class Exchange:
    """One request and the real service's answer, as a rule needs them. `problems`: why the answer cannot be
    recorded (it broke the contract, the service failed); empty when it can."""

    method: str
    path: str
    body: Any  # the request's JSON body; None: none, or not JSON
    status: int | None
    content_type: str | None
    answer: Any  # the answer's body: parsed JSON, else text; None when empty
    problems: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.method} {self.path} -> {self.status if self.status is not None else 'no answer'}"


def secret(name: object) -> bool:
    """Whether a header or field of this name holds a secret (redacted unless --record-secrets keep)."""
    return isinstance(name, str) and (name.lower() in SECRET_HEADERS or _SECRET_NAME.search(name) is not None)


def redacted(value: Any) -> Any:
    """`value` with every field whose name says secret replaced by REDACTED, at any depth."""
    if isinstance(value, dict):
        return {k: REDACTED if secret(k) else redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redacted(v) for v in value]
    return value


def _matchable(value: Any, redact: bool) -> Any:
    """A request body as a rule matches it: secret fields left out when redacting (the rule then matches whatever
    secret a client sends), and keys starting with `$` left out (a match reads them as matchers)."""
    if isinstance(value, dict):
        return {k: _matchable(v, redact) for k, v in value.items()
                if not (isinstance(k, str) and k.startswith("$")) and not (redact and secret(k))}
    if isinstance(value, list):
        return [_matchable(v, redact) for v in value]
    return value


def _templated(value: Any) -> bool:
    """Whether a value holds `{{`, which a reply would read as a placeholder."""
    if isinstance(value, str):
        return _PLACEHOLDER in value
    if isinstance(value, dict):
        return any(_templated(k) or _templated(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_templated(v) for v in value)
    return False


def _reply(exchange: Exchange, redact: bool) -> dict[str, Any]:
    reply: dict[str, Any] = {"status": exchange.status}
    if exchange.content_type:
        reply["headers"] = {"Content-Type": exchange.content_type}
    if exchange.answer is not None:
        reply["body"] = redacted(exchange.answer) if redact else exchange.answer
    return reply


@dataclass
class Document:
    """A scenario made of exchanges: its rules, what was left out and why, and the YAML text."""

    rules: list[dict[str, Any]] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    recorded: int = 0  # exchanges the rules answer

    def text(self, source: str) -> str:
        head = [f"# Recorded by plantstub from {source}: {self.recorded} exchange{'s' if self.recorded != 1 else ''} "
                f"in {len(self.rules)} rule{'s' if len(self.rules) != 1 else ''}."]
        if self.left_out:
            head.append(f"# Left out ({len(self.left_out)}):")
            head.extend(f"#   {line}" for line in self.left_out)
        data = {"description": f"Recorded from {source}.", "rules": self.rules}
        body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False, width=120)
        return "\n".join(head) + "\n" + body


def build(exchanges: Iterable[Exchange], contract: ScenarioContract, redact: bool = True) -> Document:
    """The scenario of `exchanges`: one rule per distinct request (method, path, body fields), its answers in the
    order they came (`replies:` when more than one); each rule checked as a scenario file's, so the file passes
    `plantstub check`. Rules go the most specific first (more body fields), so a partial match cannot shadow one."""
    document = Document()
    groups: dict[tuple[str, str, str], tuple[dict[str, Any], list[Exchange]]] = {}
    for exchange in exchanges:
        if exchange.problems:
            document.left_out.extend(f"{exchange.label}: {problem}" for problem in exchange.problems)
            continue
        answer = redacted(exchange.answer) if redact else exchange.answer
        if _templated(answer):
            document.left_out.append(f"{exchange.label}: its body holds '{{{{', which a scenario reads as a "
                                     "placeholder")
            continue
        match: dict[str, Any] = {"method": exchange.method, "path": exchange.path}
        if isinstance(exchange.body, dict):
            body = _matchable(exchange.body, redact)
            if body:
                match["body"] = body
        key = (exchange.method, exchange.path, yaml.safe_dump(match.get("body"), sort_keys=True))
        groups.setdefault(key, (match, []))[1].append(exchange)
    ordered = sorted(groups.items(), key=lambda item: (item[0][0], item[0][1], -_fields(item[1][0].get("body")),
                                                       item[0][2]))
    for _, (match, group) in ordered:
        replies = [_reply(exchange, redact) for exchange in group]
        rule = {"match": match, **({"reply": replies[0]} if len(replies) == 1 else {"replies": replies})}
        try:
            load_rule(rule, contract, "recording")
        except ScenarioError as exc:  # a redacted value the schema refuses, a path the spec does not serve...
            said = str(exc).replace("\n", "; ")
            document.left_out.append(f"{group[0].label}: not recorded: {said}")
            continue
        document.rules.append(rule)
        document.recorded += len(group)
    return document


def _fields(body: Any) -> int:
    if isinstance(body, dict):
        return sum(1 + _fields(v) for v in body.values())
    if isinstance(body, list):
        return sum(_fields(v) for v in body)
    return 0


class Recorder:
    """The exchanges of a stub forwarding with --record, kept until the next save; each save writes the next
    `recorded-NNN.yaml` of the folder."""

    def __init__(self, folder: Path, source: str, redact: bool = True) -> None:
        self.folder = folder
        self.source = source
        self.redact = redact
        self.exchanges: list[Exchange] = []
        self.over = 0  # exchanges beyond MAX_EXCHANGES since the last save

    def add(self, exchange: Exchange) -> None:
        if len(self.exchanges) < MAX_EXCHANGES:
            self.exchanges.append(exchange)
        else:
            self.over += 1

    def save(self, contract: ScenarioContract) -> tuple[Path | None, Document]:
        """Write what was recorded since the last save (nothing when nothing was: None); the file and its rules.

        :raises OSError: the folder cannot be made or written.
        """
        exchanges, over = self.exchanges, self.over
        self.exchanges, self.over = [], 0
        document = build(exchanges, contract, self.redact)
        if over:
            document.left_out.append(f"{over} more exchange{'s' if over > 1 else ''}: over the {MAX_EXCHANGES} one "
                                     "save keeps; save more often (POST /__plantstub/record/save)")
        if not exchanges:
            return None, document
        self.folder.mkdir(parents=True, exist_ok=True)
        number = 1 + max((int(m.group(1)) for p in self.folder.glob("recorded-*.yaml")
                          if (m := re.fullmatch(r"recorded-(\d+)\.yaml", p.name))), default=0)
        path = self.folder / f"recorded-{number:03d}.yaml"
        path.write_text(document.text(self.source), encoding="utf-8")
        return path, document
