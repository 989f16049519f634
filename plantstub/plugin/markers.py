"""`@pytest.mark.plantstub(...)`: its options, checked, and the test's markers combined."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from plantstub._fields import ByFields
from plantstub._words import did_you_mean
from plantstub.config import proxy_url


@dataclass(frozen=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class MarkerOptions(ByFields):
    """What `@pytest.mark.plantstub(...)` may say: `scenario` (also as the one positional argument), `strict`, and
    `proxy` (the real service's URL)."""

    scenario: str | None = None
    strict: bool = True
    proxy: str | None = None


OPTIONS_KEY = pytest.StashKey[MarkerOptions]()
MARKER_ARGUMENTS = ("scenario", "strict", "proxy")


def _marker_kwargs(marker: pytest.Mark) -> dict[str, Any]:
    """One marker's arguments as keywords; a mistake in it fails the test's setup with a message, not a traceback."""
    kwargs = dict(marker.kwargs)
    problems = []
    if len(marker.args) > 1 or (marker.args and "scenario" in kwargs):
        problems.append(f"takes one scenario name, got {[*marker.args, *kwargs.values()][:3]!r}")
    elif marker.args:
        kwargs["scenario"] = marker.args[0]
    for key in kwargs:
        if key not in MARKER_ARGUMENTS:
            hint = did_you_mean(key, MARKER_ARGUMENTS)
            problems.append(f"unknown argument {key!r}" + (f" ({hint})" if hint else ""))
    if "scenario" in kwargs and not isinstance(kwargs["scenario"], (str, type(None))):
        problems.append(f"scenario must be a name (a string), got {kwargs['scenario']!r}")
    if "strict" in kwargs and not isinstance(kwargs["strict"], bool):
        problems.append(f"strict must be True or False, got {kwargs['strict']!r}")
    if "proxy" in kwargs and kwargs["proxy"] is not None:
        try:
            kwargs["proxy"] = proxy_url(kwargs["proxy"])
        except ValueError as exc:
            problems.append(f"proxy: {exc}")
    if problems:
        pytest.fail(f"@pytest.mark.plantstub: {'; '.join(problems)}. It takes scenario=NAME, strict=True|False and "
                    "proxy=URL.",
                    pytrace=False)
    return kwargs


def marker_options(node: pytest.Item) -> MarkerOptions:
    """The test's options: its markers combined, the closest first (a test's own over its class's and module's).

    So `@pytest.mark.plantstub(strict=False)` on a test keeps the scenario its module's marker chose.
    """
    merged: dict[str, Any] = {}
    for level in reversed(node.listchain()):
        marks = [m for m in level.own_markers if m.name == "plantstub"]
        if isinstance(level, pytest.Class):
            marks.reverse()  # a class lists its bases' marks first, its own last
        for marker in marks:
            for key, value in _marker_kwargs(marker).items():
                merged.setdefault(key, value)
    return MarkerOptions(**merged)
