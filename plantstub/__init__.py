"""plantstub: a contract-checked stub of the Plant Store API for integration tests."""

from __future__ import annotations

__version__ = "0.1.0"

from .app import create_app  # noqa: E402
from .errors import CallAssertionError, ConfigError, PlantstubError, ScenarioError, SpecError  # noqa: E402
from .stub import Stub  # noqa: E402

__all__ = [
    "CallAssertionError",
    "ConfigError",
    "PlantstubError",
    "ScenarioError",
    "SpecError",
    "Stub",
    "__version__",
    "create_app",
]
