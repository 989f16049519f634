"""plantstub: a contract-checked stub of the Plant Store API for integration tests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import CallAssertionError, ConfigError, PlantstubError, ScenarioError, SpecError

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .app import create_app
    from .stub import Stub

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


def __getattr__(name: str) -> Any:
    # Imported on first use: pytest loads the plugin (plantstub.pytest_plugin) in every project that has
    # plantstub installed, and a suite that never uses the stub must not pay for aiohttp and the rest.
    if name == "Stub":
        from .stub import Stub

        return Stub
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(f"module 'plantstub' has no attribute {name!r}")
