"""The `lanes` mark by rule: what CI's lanes run besides the fast set.

The lanes (noxfile.py: the floors, the newest releases, and aiohttp's pure-Python parser at both) run the suite
against the installed wheel with `-m "not slow or lanes"`: every test that is not slow, and the slow ones whose
outcome what a lane changes (Python, each dependency's release, aiohttp's parser) can move. A pytest plugin
(tests/conftest.py loads it). At collection, before `-m` deselects, it marks `lanes` every test that (a fast one
is in the lanes anyway)

- runs a Hypothesis search: what it compares (jsonschema-rs against jsonschema, PyYAML's events against its loader,
  the router against a list) are the lane's releases; the `ci` profile bounds it (tests/conftest.py);
- lives in tests/server/ or tests/contract/: the request path, which the lane's aiohttp and parser serve, and the
  contract's checks, which the lane's jsonschema-rs, jsonschema and PyYAML make;
- is marked `@pytest.mark.lanes` by hand (a test elsewhere whose outcome a lane moves).

The other slow tests start `plantstub serve`, a browser or an inner pytest run: the same code the fast set's
in-process stubs run, or the plugin, which the consumer lanes run as projects do. The README's run runs them all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
FOLDERS = ("server", "contract")  # under tests/: the request path and the contract's checks


def lanes_reason(item: pytest.Item) -> str | None:
    """Why the rule puts `item` in the lanes, or None."""
    if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
        return "runs a Hypothesis search"
    where = Path(str(item.path)).resolve()
    for folder in FOLDERS:
        if where.is_relative_to(TESTS / folder):
            return f"in tests/{folder}/"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `lanes` every test the rule finds (see the module docstring)."""
    for item in items:
        reason = lanes_reason(item)
        if reason:
            item.add_marker(pytest.mark.lanes(reason=reason))
