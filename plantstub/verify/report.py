"""What `plantstub verify` tells: one line per rule naming its file:line, the differences under it, a summary; the
same as JSON (`--json`) and as JUnit XML (`--junit FILE`, a test case per rule). Everything shown goes through
Secrets first."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass

from plantstub._json import NO_BODY
from plantstub._words import plural
from plantstub.verify.judge import Verdict
from plantstub.verify.request import NOT_SENT, NOT_VERIFIABLE, Request, sent_headers
from plantstub.verify.secrets import Secrets

AGREE, DIFFER, BROKE = "agree", "differ", "broke_contract"
OUTCOMES = (AGREE, DIFFER, BROKE, NOT_SENT, NOT_VERIFIABLE)
FAILING = (DIFFER, BROKE)
# The summary's words for each outcome: (one rule, several rules).
_WORDS = {AGREE: ("agrees", "agree"), DIFFER: ("differs", "differ"), BROKE: ("broke the contract",) * 2,
          NOT_SENT: ("not sent",) * 2, NOT_VERIFIABLE: ("not verifiable",) * 2}
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")  # what XML 1.0 cannot hold


@dataclass(frozen=True, slots=True)
class Outcome:
    """One rule's result: where it is, what was sent, what came back and how it was judged."""

    scenario: str
    file: str
    line: int
    rule: str  # `rules[0]`
    label: str  # `POST /plants`: the request sent, else the rule's method and path
    outcome: str  # one of OUTCOMES
    reason: str = ""  # why it was not sent, or is not verifiable
    request: Request | None = None
    verdict: Verdict | None = None

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def said(self) -> str:
        """What the line says after the rule's place and request."""
        if self.verdict is None:
            return f"{_WORDS[self.outcome][0]}: {self.reason}"
        v = self.verdict
        service = "no answer" if v.service_status is None else str(v.service_status)
        differs = f"differs ({', '.join(v.differs)})" if v.differs else ""
        judged = "agrees" if self.outcome == AGREE else differs
        if self.outcome == BROKE:
            judged = "broke the contract" + (f"; {differs}" if differs else "")
        return f"stub {v.stub_status}, service {service}: {judged}"

    def details(self) -> list[str]:
        """The lines under a rule that does not agree: each difference and contract problem."""
        if self.verdict is None or self.outcome == AGREE:
            return []
        lines = list(self.verdict.broke) + list(self.verdict.details)
        if self.request is not None and self.request.breaks:
            lines.append("sent on purpose breaking the contract (the rule is made to catch it): "
                         + "; ".join(self.request.breaks))
        return lines


def outcome_of(verdict: Verdict) -> str:
    if verdict.broke:
        return BROKE
    return DIFFER if verdict.differs else AGREE


def counted(outcomes: list[Outcome]) -> Counter[str]:
    return Counter(o.outcome for o in outcomes)


def summary(outcomes: list[Outcome], scenarios: int, against: str, seconds: float) -> str:
    counts = counted(outcomes)
    parts = ", ".join(f"{counts[o]} {_WORDS[o][0] if counts[o] == 1 else _WORDS[o][1]}" for o in OUTCOMES)
    rules = f"{plural(len(outcomes), 'rule')} of {plural(scenarios, 'scenario')}"
    return f"plantstub: {rules} against {against}: {parts} ({seconds:.2f} s)"


def _printable(text: str) -> str:
    """A line as a terminal or CI log shows it: control characters (a service's key may hold a line break or an
    escape sequence) written as `\\x1b`, so no line of ours is split or recoloured."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def lines(outcomes: list[Outcome], secrets: Secrets) -> list[str]:
    """One line per rule, the details of those that do not agree indented under it."""
    out: list[str] = []
    for o in outcomes:
        out.append(_printable(secrets.text(f"{o.where} {o.label}: {o.said}")))
        out.extend(_printable(secrets.text(f"    {detail}")) for detail in o.details())
    return out


def _body(value: object) -> object:
    return None if value is NO_BODY else value


def as_json(outcome: Outcome, secrets: Secrets, extra: tuple[tuple[str, str], ...]) -> dict[str, object]:
    """One rule as `--json` shows it."""
    data: dict[str, object] = {"file": outcome.file, "line": outcome.line, "scenario": outcome.scenario,
                            "rule": outcome.rule, "outcome": outcome.outcome, "text": f"{outcome.label}: {outcome.said}"}
    if outcome.reason:
        data["reason"] = outcome.reason
    request = outcome.request
    if request is not None:
        query: dict[str, object] = {}
        for name, value in request.query:  # a repeated name: its values as a list, as recorded calls show them
            query[name] = [*kept, value] if isinstance(kept := query.get(name), list) else \
                [query[name], value] if name in query else value
        data["request"] = {"method": request.method, "path": request.path, "query": query,
                           "headers": secrets.headers(sent_headers(request, extra)), "body": _body(request.body),
                           "breaks": list(request.breaks)}
    v = outcome.verdict
    if v is not None:
        data["stub"] = {"status": v.stub_status, "body": _body(v.stub_body)}
        data["service"] = {"status": v.service_status, "body": v.service_body, "seconds": round(v.seconds, 4)}
        data.update(differs=list(v.differs), details=list(v.details), broke=list(v.broke))
    return secrets.value(data)


def json_report(outcomes: list[Outcome], secrets: Secrets, extra: tuple[tuple[str, str], ...], head: dict[str, object],
                load_errors: list[str]) -> str:
    counts = counted(outcomes)
    document = {**head, "passed": not any(counts[o] for o in FAILING) and not load_errors,
                "summary": {"rules": len(outcomes), **{o: counts[o] for o in OUTCOMES}},
                "load_errors": [secrets.text(e) for e in load_errors],
                "rules": [as_json(o, secrets, extra) for o in outcomes]}
    return json.dumps(document, indent=2, ensure_ascii=False)


def _xml(text: str, secrets: Secrets) -> str:
    return _NOT_XML.sub("\ufffd", secrets.text(text))


def junit(outcomes: list[Outcome], secrets: Secrets, suite: str, seconds: float) -> bytes:
    """JUnit XML: a test suite per scenario, a test case per rule (failure: differs or broke the contract;
    skipped: not sent, not verifiable), so a CI server shows each rule by its file and line."""
    counts = counted(outcomes)
    root = ET.Element("testsuites", name=_xml(suite, secrets), tests=str(len(outcomes)),
                      failures=str(counts[DIFFER] + counts[BROKE]), errors="0",
                      skipped=str(counts[NOT_SENT] + counts[NOT_VERIFIABLE]), time=f"{seconds:.3f}")
    by_scenario: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_scenario.setdefault(o.scenario, []).append(o)
    for name, group in by_scenario.items():
        mine = counted(group)
        spent = sum(o.verdict.seconds for o in group if o.verdict is not None)
        element = ET.SubElement(root, "testsuite", name=_xml(name, secrets), tests=str(len(group)),
                                failures=str(mine[DIFFER] + mine[BROKE]), errors="0",
                                skipped=str(mine[NOT_SENT] + mine[NOT_VERIFIABLE]), time=f"{spent:.3f}")
        for o in group:
            case = ET.SubElement(element, "testcase", name=_xml(f"{o.where} {o.label}", secrets),
                                 classname=_xml(o.file, secrets), file=_xml(o.file, secrets), line=str(o.line),
                                 time=f"{o.verdict.seconds if o.verdict is not None else 0:.3f}")
            if o.outcome in FAILING:
                failure = ET.SubElement(case, "failure", message=_xml(o.said, secrets), type=o.outcome)
                failure.text = _xml("\n".join(o.details()), secrets)
            elif o.outcome in (NOT_SENT, NOT_VERIFIABLE):
                ET.SubElement(case, "skipped", message=_xml(o.said, secrets))
    ET.indent(root)
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"
