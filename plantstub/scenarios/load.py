"""Scenario files: YAML with line marks -> checked against the scenario schema and the spec -> Scenario.

Every problem becomes a ScenarioError reading `file:line: path: message`; all of them, in file order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple, cast

from plantstub._gc import collector_paused
from plantstub._json import NO_BODY, shown
from plantstub._words import did_you_mean
from plantstub.contract.messages import python_message
from plantstub.contract.model import Spec
from plantstub.contract.schema import SchemaCheck
from plantstub.errors import ScenarioError
from plantstub.matching import expected_text, matcher_problems
from plantstub.scenarios.contract import ScenarioContract
from plantstub.scenarios.document import MatchData, ReplyData, RuleData, ScenarioData, ScenarioDocument, where_of
from plantstub.scenarios.model import Criteria, Fault, Reply, Rule, RuleWebhook, Scenario

SUFFIXES = (".yaml", ".yml")
_DATA = Path(__file__).parents[1] / "data"  # what plantstub ships: the scenario schema and the built-ins


class ScenarioLoadError(ScenarioError):
    """A scenario file did not load; `errors` holds every problem, and `str()` shows one per line."""

    def __init__(self, errors: list[ScenarioError]) -> None:
        self.errors = list(errors)
        first = self.errors[0]
        super().__init__(first.file, first.line, first.path, first.message)

    def __str__(self) -> str:
        return "\n".join(map(str, self.errors))


class RuleOverBudget(ScenarioLoadError):
    """A rule from code that the session's memory budget cannot hold (the admin API answers 507)."""


def schema_text() -> str:
    """The JSON Schema of scenario files shipped with the package, as text (what `plantstub schema` prints)."""
    return (_DATA / "scenario.schema.json").read_text(encoding="utf-8")


@cache
def scenario_schema() -> dict:
    """The JSON Schema of scenario files."""
    return json.loads(schema_text())


@cache
def _validator() -> SchemaCheck:
    return SchemaCheck(scenario_schema(), "scenario.schema.json", checked=True, formats=False)


@cache
def _explainer() -> Any:
    """python jsonschema over the scenario schema, built for a file that breaks it: its errors carry the keyword
    and the subschema that the messages below are written from."""
    from jsonschema import Draft202012Validator
    from referencing import Registry  # empty: nothing is ever fetched

    return Draft202012Validator(scenario_schema(), registry=Registry())


# -- the scenario schema ------------------------------------------------------------------------
def _as_written(value: object) -> str:
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    return json.dumps(value) if value is None or isinstance(value, bool) else shown(value)


def _kind(value: object) -> str:
    """What a value is, without quoting it: a whole file that is not a mapping may be any file at all."""
    names = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _suggest(word: object, choices: Iterable[object]) -> str:
    hint = did_you_mean(word, choices) if isinstance(word, str) else ""
    return f" ({hint})" if hint else ""


class _Broken(NamedTuple):
    """What the scenario schema found: each error, and which parts the spec can still check (`rules`: the indexes of
    the rules that hold an error; `whole`: the file's frame itself is wrong; `state`: `state:` is)."""

    errors: list[ScenarioError]
    rules: frozenset[int] = frozenset()
    whole: bool = False
    state: bool = False


def _schema_errors(doc: ScenarioDocument) -> _Broken:
    if _validator().is_valid(doc.data):
        return _Broken([])
    found: list[ScenarioError] = []
    raw = sorted(_explainer().iter_errors(doc.data), key=lambda e: [str(p) for p in e.absolute_path])
    # A value of the wrong type earns one message, not one per keyword that also failed on it.
    mistyped = {tuple(e.absolute_path) for e in raw if e.validator == "type"}
    for error in raw:
        parts, kind, instance = tuple(error.absolute_path), error.validator, error.instance
        where, line = where_of(parts), None
        if kind != "type" and parts in mistyped:
            continue
        if kind == "additionalProperties":
            known = list(error.schema.get("properties", {}))
            for key in (k for k in instance if k not in known):
                hint = _suggest(key, known) or f" (allowed: {', '.join(known)})"
                found.append(doc.error(where, f"unknown key {shown(key)}{hint}", doc.line(where_of((*parts, key)))))
            continue
        if kind == "oneOf" and isinstance(instance, dict) and "reply" in instance and "replies" in instance:
            line = max(doc.line(f"{where}.reply"), doc.line(f"{where}.replies"))
            message = "has both `reply:` and `replies:`; keep one (`replies:` for answers that change per call)"
        elif kind == "oneOf" and isinstance(instance, dict):
            message = "has no `reply:`; add `reply:` (one answer) or `replies:` (successive answers, the last"
            message += " repeats)"
        elif kind == "type" and not parts:
            message = f"a scenario file holds a mapping (description:, rules:), not {_kind(instance)}"
        elif kind == "type":
            expected = error.validator_value
            expected = ", ".join(map(repr, expected)) if isinstance(expected, list) else repr(expected)
            message = f"{_as_written(instance)} is not of type {expected}"
        elif kind == "enum":
            message = python_message(error) + _suggest(instance, error.validator_value)
        else:
            message = python_message(error)
        found.append(doc.error(where, message, line))
    paths = [tuple(error.absolute_path) for error in raw]
    rules = frozenset(path[1] for path in paths if len(path) > 1 and path[0] == "rules" and isinstance(path[1], int))
    data = doc.data
    whole = not isinstance(data, dict) or not isinstance(data.get("rules", []), (list, type(None)))
    return _Broken(found, rules, whole, any(path[:1] == ("state",) for path in paths))


# -- the model ---------------------------------------------------------------------------------
def _matcher_errors(doc: ScenarioDocument, rule: Rule, raw: RuleData) -> list[ScenarioError]:
    """The `$` matchers of a rule's `match:` (headers, query, body), checked: known, well-formed, regexes that compile."""
    match: MatchData = raw.get("match") or {}
    base = f"{rule.label}.match"
    found = []
    for part, values in (("headers", match.get("headers")), ("query", match.get("query"))):
        for name, value in (values or {}).items():
            found.extend(matcher_problems(value, f"{base}.{part}.{name}"))
    if "body" in match:
        found.extend(matcher_problems(match["body"], f"{base}.body"))
    return [doc.error(where, message) for where, message in found]


def _reply(raw: ReplyData, line: int) -> Reply:
    return Reply(
        status=raw.get("status", 200), headers=dict(raw.get("headers") or {}), body=raw.get("body", NO_BODY),
        delay_ms=raw.get("delay_ms", 0), fault=Fault(raw["fault"]) if "fault" in raw else None, line=line,
    )


def _build(doc: ScenarioDocument, name: str, broken: frozenset[int] = frozenset()) -> Scenario:
    """The scenario of a file the scenario schema passed, but for the rules in `broken`, which are left out."""
    data = cast(ScenarioData, doc.data)  # the scenario schema passed it (_schema_errors), but for `broken`
    rules = []
    for i, raw in enumerate(data.get("rules") or []):
        if i in broken:
            continue
        base = f"rules[{i}]"
        match: MatchData = raw.get("match") or {}
        criteria = Criteria(
            method=match["method"].upper() if "method" in match else None,
            path=match.get("path"),
            headers={k.lower(): expected_text(v) for k, v in (match.get("headers") or {}).items()},
            query={k: expected_text(v) for k, v in (match.get("query") or {}).items()},
            body=match.get("body", NO_BODY),
            line=doc.line(f"{base}.match"),
        )
        replies: tuple[Reply, ...]
        if "reply" in raw:
            replies = (_reply(raw["reply"], doc.line(f"{base}.reply")),)
        else:
            replies = tuple(_reply(r, doc.line(f"{base}.replies[{j}]")) for j, r in enumerate(raw["replies"]))
        webhooks = None
        if "webhooks" in raw:
            webhooks = tuple(
                RuleWebhook(w["name"], w.get("body", NO_BODY), w.get("delay_ms", 0), doc.line(f"{base}.webhooks[{j}]"))
                for j, w in enumerate(raw["webhooks"])
            )
        rules.append(Rule(i, criteria, replies, raw.get("times"), raw.get("off_contract", False), doc.line(base),
                          webhooks))
    return Scenario(
        name=name, description=data.get("description", ""), file=doc.file, rules=tuple(rules),
        validate_requests=data.get("validate_requests", True), state=data.get("state"),
    )


def _unreachable_replies(doc: ScenarioDocument, rule: Rule) -> list[ScenarioError]:
    """`times: 1` with two `replies:`: the second would never answer, which is surely not what was meant."""
    if rule.times is None or rule.times >= len(rule.replies):
        return []
    where = f"rules[{rule.index}].times"
    never = f"replies[{rule.times}]" if rule.times + 1 == len(rule.replies) else f"replies[{rule.times}:]"
    return [doc.error(where, f"is {rule.times} but {len(rule.replies)} replies are listed, so {never} would never "
                             "answer; raise `times` or remove those replies", doc.line(where))]


# -- the spec ----------------------------------------------------------------------------------
def _order(error: ScenarioError) -> tuple:
    return (error.line or 0, error.path, error.message)


def _load(path: Path, file: str, contract: ScenarioContract) -> tuple[Scenario | None, list[ScenarioError], int | None]:
    """Load one file: the scenario (None when broken), every error in file order, and the line of `name:`."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return None, [ScenarioError(file, None, "", f"not UTF-8 text ({exc.reason} at byte {exc.start})")], None
    except OSError as exc:
        return None, [ScenarioError(file, None, "", f"cannot read ({exc.strerror or exc})")], None
    doc = ScenarioDocument(file, text)
    if not doc.errors and doc.data is None:
        doc.errors.append(ScenarioError(file, 1, "", "the file is empty (expected `description:` and `rules:`)"))
    # The rules the scenario schema passed are checked against the spec even when others did not: every problem of
    # the file is told in one run, not the spec's only after the schema's are mended.
    broken = _Broken(doc.errors) if doc.errors else _schema_errors(doc)
    errors = broken.errors
    if not doc.errors and not broken.whole:
        data = cast(ScenarioData, doc.data)  # a mapping, its `rules:` a list (else the schema's error is `whole`)
        scenario = _build(doc, str(data.get("name", Path(file).stem)), broken.rules)
        raws = [raw for i, raw in enumerate(data.get("rules") or []) if i not in broken.rules]
        checked = []
        for rule, raw in zip(scenario.rules, raws, strict=True):
            errors.extend(_unreachable_replies(doc, rule))
            errors.extend(_matcher_errors(doc, rule, raw))
            found, answering = contract.check_rule(doc, rule, raw)
            errors.extend(found)
            checked.append(answering)
        scenario = replace(scenario, rules=tuple(checked))
        if "state" in data and not broken.state:
            errors.extend(contract.state_errors(doc, data["state"]))
        if not errors:
            return scenario, [], doc.lines.get("name")
    return None, sorted(errors, key=_order), None


def load_scenario_file(path: Path, spec: Spec, _contract: ScenarioContract | None = None) -> Scenario:
    """Load and check one scenario file against `spec`; raises ScenarioLoadError with every problem."""
    scenario, errors, _ = _load(Path(path), str(path), _contract or ScenarioContract(spec))
    if scenario is None:
        raise ScenarioLoadError(errors)
    return scenario


def scenario_files(folder: Path) -> list[Path]:
    """The scenario files of `folder`: *.yaml and *.yml, sorted, not recursive, no hidden files."""
    return sorted(
        p for p in Path(folder).iterdir()
        if p.suffix in SUFFIXES and not p.name.startswith(".") and (p.is_file() or p.is_symlink())
    )


def load_scenarios(
    folder: Path, spec: Spec, _contract: ScenarioContract | None = None
) -> tuple[dict[str, Scenario], list[ScenarioError]]:
    """Load every scenario file of `folder`; broken files are left out and their errors returned."""
    folder = Path(folder)
    try:
        files = scenario_files(folder)
        root = folder.resolve(strict=True)
    except OSError as exc:
        return {}, [ScenarioError(str(folder), None, "", f"cannot read the folder ({exc.strerror or exc})")]
    contract = _contract or ScenarioContract(spec)
    with collector_paused():
        return _load_files(folder, root, files, contract)


def _load_files(
    folder: Path, root: Path, files: list[Path], contract: ScenarioContract
) -> tuple[dict[str, Scenario], list[ScenarioError]]:
    scenarios: dict[str, Scenario] = {}
    errors: list[ScenarioError] = []
    for path in files:
        file, target = str(path), path.resolve()
        # Never read outside the folder: a link out of it could expose any file through load errors.
        if not target.is_relative_to(root):
            errors.append(ScenarioError(file, None, "", f"links to {target}, outside {folder}; not read"))
            continue
        if target.exists() and not target.is_file():  # a link to a named pipe would block the read for ever
            errors.append(ScenarioError(file, None, "", "links to something that is not a regular file; not read"))
            continue
        scenario, found, name_line = _load(target, file, contract)
        errors.extend(found)
        if scenario is None:
            continue
        if scenario.name in scenarios:
            first = scenarios[scenario.name].file
            message = f"scenario {scenario.name!r} is already defined by {first}; give one of them another `name:`"
            errors.append(ScenarioError(file, name_line, "name" if name_line else "", message))
            continue
        scenarios[scenario.name] = scenario
    return scenarios, errors


def builtin_folder() -> Path:
    """The built-in scenarios shipped inside the package (store-closed, flaky, slow, dropped-connection)."""
    return _DATA / "scenarios"


def load_builtin_scenarios(spec: Spec, _contract: ScenarioContract | None = None) -> tuple[dict[str, Scenario], dict[str, str]]:
    """The built-in scenarios that fit `spec`, and for each one that does not, why (its first error).

    They are written for the Plant Store: with another spec most of them do not fit, and are left out
    without failing the start; naming one then says why it is not there.
    """
    scenarios, errors = load_scenarios(builtin_folder(), spec, _contract)
    unfit: dict[str, str] = {}
    for error in errors:
        unfit.setdefault(Path(error.file).stem, f"{error.path}: {error.message}" if error.path else error.message)
    return scenarios, unfit


def check_paths(paths: list[str | Path], spec: Spec) -> tuple[list[ScenarioError], int, list[str]]:
    """What `plantstub check` reports: every error of the files and folders given, how many scenarios loaded, and
    a note for each rule narrowed to the operations its replies fit."""
    errors: list[ScenarioError] = []
    loaded: list[Scenario] = []
    contract = ScenarioContract(spec)
    for given in map(Path, paths):
        if given.is_dir():
            if not scenario_files(given):
                errors.append(ScenarioError(str(given), None, "", "no scenario files here (*.yaml, *.yml)"))
                continue
            scenarios, found = load_scenarios(given, spec, contract)
            loaded.extend(scenarios.values())
        elif given.exists():
            scenario, found, _ = _load(given, str(given), contract)
            loaded.extend([scenario] if scenario is not None else [])
        else:
            found = [ScenarioError(str(given), None, "", "no such file or folder")]
        errors.extend(found)
    return errors, len(loaded), [note for scenario in loaded for note in narrowed_notes(scenario, contract)]


def narrowed_notes(scenario: Scenario, contract: ScenarioContract) -> list[str]:
    """`file:line: rules[1]: answers POST /plants only ...` for each rule without `method:` that answers only some
    of the operations its match allows (its replies do not fit the others)."""
    notes = []
    for rule in scenario.rules:
        if rule.answers is not None:
            left = [op.label for op in contract.operations(rule.match)[0] if op.label not in rule.answers]
            notes.append(f"{scenario.file}:{rule.line}: {rule.label}: answers only {', '.join(sorted(rule.answers))}; "
                         f"its replies do not fit {', '.join(left)}, whose requests go on to the next rules (add "
                         "`method:` to say which operation it is for)")
    return notes


# -- one rule, from code or the admin API ----------------------------------------------------------
MAX_RULE_DEPTH = 64  # nesting of one declared rule: deeper is surely a mistake, and would strain the recursive checks


def _too_deep(data: object) -> bool:
    stack: list[tuple[object, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_RULE_DEPTH:
            return True
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return False


def _relative(error: ScenarioError, line: int | None) -> ScenarioError:
    """`rules[0].reply.status` -> `reply.status`: a declared rule's locations start at the rule itself."""
    path = error.path
    path = "" if path == "rules[0]" else path.removeprefix("rules[0].")
    return ScenarioError(error.file, line, path, error.message)


def load_rule(data: object, contract: ScenarioContract, file: str, line: int | None = None) -> Rule:
    """One rule in the scenario format (`{"match": ..., "reply": ...}`), checked exactly as a scenario file's rules
    are; raises ScenarioLoadError with every problem, each at `file:line` and the location inside the rule."""
    if _too_deep(data):
        raise ScenarioLoadError([ScenarioError(file, line, "", f"nested more than {MAX_RULE_DEPTH} levels deep")])
    doc = ScenarioDocument.of_data(file, {"rules": [data]}, line)
    errors = doc.errors or _schema_errors(doc).errors
    if not errors:
        raw = cast(RuleData, data)  # the scenario schema passed it, as the file's one rule
        rule = _build(doc, "").rules[0]
        found, answering = contract.check_rule(doc, rule, raw)
        errors = [*_unreachable_replies(doc, rule), *_matcher_errors(doc, rule, raw), *found]
        if not errors:
            return answering
    raise ScenarioLoadError([_relative(e, line) for e in sorted(errors, key=_order)])
