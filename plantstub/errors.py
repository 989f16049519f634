"""Exceptions plantstub raises; every message reads on its own, first line first."""

from __future__ import annotations


class PlantstubError(Exception):
    """Base of every error plantstub raises on purpose."""


class SpecError(PlantstubError):
    """The OpenAPI document cannot be loaded or is not OpenAPI 3.x."""


class ConfigError(PlantstubError):
    """A setting (flag, environment variable, argument) has a bad value."""


class SubscriptionError(ConfigError):
    """A webhook subscription cannot be made: a name the spec does not declare, or a URL that is not http(s)."""


class ScenarioError(PlantstubError):
    """A scenario file is broken; `str()` is exactly `file:line: path: message`."""

    def __init__(self, file: str, line: int | None, path: str, message: str) -> None:
        self.file = file
        self.line = line
        self.path = path
        self.message = message
        super().__init__(str(self))

    @property
    def at(self) -> str:
        """Where: `file:line`, then the location inside the file when there is one (`file:line: rules[0]`)."""
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.path}" if self.path else where

    def __str__(self) -> str:
        return f"{self.at}: {self.message}"


class UnknownScenario(LookupError):
    """A scenario name that is not loaded; the message lists the known ones."""


class CallAssertionError(AssertionError):
    """A call assertion on the journal failed; the text shows expected, got, closest."""
