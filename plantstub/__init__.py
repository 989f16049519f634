"""plantstub: a contract-checked stub of the Plant Store API for integration tests."""

from __future__ import annotations

from typing import TYPE_CHECKING

from plantstub._version import __version__
from plantstub.errors import (
    CallAssertionError,
    ConfigError,
    PlantstubError,
    ScenarioError,
    SpecError,
    SubscriptionError,
    UnknownScenario,
)

if TYPE_CHECKING:
    from plantstub.server.app import create_app
    from plantstub.stub import Stub

__all__ = [
    "CallAssertionError",
    "ConfigError",
    "PlantstubError",
    "ScenarioError",
    "SpecError",
    "Stub",
    "SubscriptionError",
    "UnknownScenario",
    "__version__",
    "create_app",
]


def __getattr__(name: str) -> object:
    # Imported on first use: pytest loads the plugin (plantstub.pytest_plugin) in every project that has
    # plantstub installed, and a suite that never uses the stub must not pay for aiohttp and the rest.
    from plantstub._gc import collector_paused  # what the import builds lives on: no collection walks it meanwhile

    if name == "Stub":
        with collector_paused():
            from plantstub.stub import Stub
        return Stub
    if name == "create_app":
        with collector_paused():
            from plantstub.server.app import create_app
        return create_app
    raise AttributeError(f"module 'plantstub' has no attribute {name!r}")
