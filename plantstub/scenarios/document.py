"""One scenario file parsed: its data, the line of every location path, and errors that point at lines."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypedDict

from plantstub._json import MAX_SHOWN, cut
from plantstub._memo import IdentityMemo
from plantstub._yaml import DocumentLimit
from plantstub.contract.schema import location_path
from plantstub.errors import ScenarioError

MAX_VALUES = 100_000  # a scenario file's values, aliases expanded (_yaml bounds nesting and what aliases add)


Parts = tuple[str | int, ...]  # a location path's steps: keys and indexes


# A scenario file's data as data/scenario.schema.json allows it: what it is once that schema passed it.
class MatchData(TypedDict, total=False):
    method: str
    path: str
    headers: Mapping[str, object]  # a text, number or boolean, or a matcher (a list: a repeated name's values)
    query: Mapping[str, object]
    body: object


class ReplyData(TypedDict, total=False):
    status: int
    headers: dict[str, str]
    body: object
    delay_ms: int
    fault: str


class _Webhook(TypedDict):
    name: str


class WebhookData(_Webhook, total=False):
    body: object
    delay_ms: int


class RuleData(TypedDict, total=False):
    match: MatchData
    reply: ReplyData
    replies: list[ReplyData]
    times: int
    off_contract: bool
    webhooks: list[WebhookData]


class ScenarioData(TypedDict, total=False):
    name: str
    description: str
    validate_requests: bool
    state: dict[str, list[dict[str, object]]]
    rules: list[RuleData]


def where_of(parts: Iterable[str | int]) -> str:
    """(rules, 0, reply, status) -> `rules[0].reply.status`; () -> ``."""
    parts = list(parts)
    return location_path(str(parts[0]), parts[1:]) if parts else ""


class _TooLarge(Exception):
    pass


class ScenarioDocument:
    """One parsed scenario file: its data, and the line of each location path (`rules[0].reply`)."""

    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self.errors: list[ScenarioError] = []
        self.lines: dict[str, int] = {"": 1}
        self.data: object = None
        import yaml  # with the loader, on the first file read: a start with no scenario file imports neither

        from plantstub._yaml_loaders import LineMarkedLoader

        loader = LineMarkedLoader(text, MAX_VALUES)  # too many values: refused before the slow composing
        try:
            self.data = loader.get_single_data()
        except DocumentLimit as exc:
            self.errors.append(ScenarioError(file, exc.line, "", exc.reason))
            return
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            problem = exc.problem or exc.context or "cannot be read"
            if problem.startswith("but ") and exc.context:  # "expected a single document ..., but found another"
                problem = f"{exc.context}, {problem}"
            line = mark.line + 1 if mark else None
            self.errors.append(ScenarioError(file, line, "", f"not valid YAML: {cut(problem, 3 * MAX_SHOWN)}"))
            return
        except yaml.YAMLError as exc:
            self.errors.append(ScenarioError(file, None, "", f"not valid YAML: {cut(str(exc), 3 * MAX_SHOWN)}"))
            return
        finally:
            loader.dispose()
        self.count = 0
        try:
            self.walk(self.data, (), loader.line_marks)
        except _TooLarge:
            message = f"too large: more than {MAX_VALUES:,} values (aliases expanded)"
            self.errors = [ScenarioError(file, None, "", message)]

    @classmethod
    def of_data(cls, file: str, data: object, line: int | None) -> ScenarioDocument:
        """A document made of data already in hand (a rule from code or from the admin API): every location
        it holds is at `line` (None: no line, marked -1 so that "given" still reads true; the caller drops it)."""
        mark = line or -1
        doc = cls.__new__(cls)
        doc.file, doc.errors, doc.data, doc.count, doc.lines = file, [], data, 0, {"": mark}
        try:
            doc.walk(data, (), IdentityMemo())
        except _TooLarge:
            doc.errors = [ScenarioError(file, line, "", f"too large: more than {MAX_VALUES:,} values")]
            return doc
        stack: list[tuple[object, Parts]] = [(data, ())]
        while stack:  # every location present gets the line: a status given is told from the default one
            value, parts = stack.pop()
            if parts:
                doc.lines[where_of(parts)] = mark
            if isinstance(value, dict):
                stack.extend((item, (*parts, key)) for key, item in value.items())
            elif isinstance(value, list):
                stack.extend((item, (*parts, i)) for i, item in enumerate(value))
        return doc

    def error(self, where: str, message: str, line: int | None = None) -> ScenarioError:
        return ScenarioError(self.file, line or self.line(where), where, message)

    def walk(self, value: object, parts: Parts, marks: IdentityMemo[dict[str, int] | list[int]]) -> None:
        self.count += 1
        if self.count > MAX_VALUES:
            raise _TooLarge
        lines = marks.get(value)  # a mapping's {key: line}, a list's [line, ...] (LineMarkedLoader)
        if isinstance(value, dict):
            for key, item in value.items():
                sub = (*parts, key)
                if isinstance(lines, dict) and key in lines:
                    self.lines.setdefault(where_of(sub), lines[key])
                self.walk(item, sub, marks)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                sub = (*parts, i)
                if isinstance(lines, list) and i < len(lines):
                    self.lines.setdefault(where_of(sub), lines[i])
                self.walk(item, sub, marks)
        elif not (value is None or isinstance(value, (str, int, float, bool))):
            where = where_of(parts)
            self.errors.append(self.error(where, f"a {type(value).__name__} is not a JSON value"))

    def line(self, where: str) -> int:
        """The line of `where`, or of the nearest enclosing location that has one."""
        while where not in self.lines:
            cut = max(where.rfind("."), where.rfind("["))
            where = where[:cut] if cut > 0 else ""
        return self.lines[where]
