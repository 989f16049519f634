"""Control: the stub's one mutable state (spec, journal, scenarios), shared by the admin API and Stub."""

from __future__ import annotations

from .config import Settings
from .journal import Journal
from .replies import Answers
from .routing import Router
from .spec import Operation, Spec, load_spec
from .validation import RequestCheck


class Control:
    """Everything a running stub knows; built once before the server starts, then mutated in place."""

    def __init__(self, settings: Settings, spec: Spec | None = None) -> None:
        self.settings = settings
        self.spec = spec if spec is not None else load_spec(settings.spec)
        self.router = Router(self.spec)
        # Compile every validator now: a broken schema stops start-up, and no request pays for it.
        self.checks: dict[int, RequestCheck] = {id(op): RequestCheck(op) for op in self.spec.operations}
        self.answers = Answers()
        self.journal = Journal(settings.journal_size, settings.journal)

    def check_for(self, op: Operation) -> RequestCheck:
        return self.checks[id(op)]

    def close(self) -> None:
        self.journal.close()
