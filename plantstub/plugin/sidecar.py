"""A test's session on a sidecar (--plantstub-url): what of `plantstub_settings` applies there, and opening the
session, waiting while the sidecar serves its --max-sessions."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from plantstub._fields import ByFields
from plantstub.config import FIELDS, Settings, build_settings, keyword_name
from plantstub.plugin.options import WAIT_NAMES

if TYPE_CHECKING:
    from plantstub.client.remote import RemoteStub

# What a sidecar honours for one test: its admin token, the scenario a test starts with, and `stateful` when the
# sidecar's is the same. The rest (spec, scenarios, limits...) are the sidecar's own, set where it starts.
HONOURED = ("admin_token", "scenario", "stateful")
FIRST_PAUSE, LONGEST_PAUSE = 0.05, 1.0  # seconds between tries at the session cap, doubling


@dataclass(frozen=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class SidecarTerms(ByFields):
    """What the test's `plantstub_settings` asks of a sidecar."""

    admin_token: str | None
    scenario: str | None
    stateful: bool | None  # None: not asked


def sidecar_terms(value: object, default: Settings | None, url: str) -> SidecarTerms:
    """The terms of `value` (what `plantstub_settings` gave: a dict of Settings fields, or Settings); fails the test,
    naming the keys, when it gives one a sidecar cannot honour. The plugin's own settings (`default`, from the
    options) give their admin token only: the options of the spec, scenarios and store are documented as the
    sidecar's."""
    from plantstub.errors import ConfigError

    problem = None
    given: set[str] = set()
    settings = None
    try:
        if isinstance(value, dict):
            settings, given = build_settings({"port": 0, **value}, explicit_name=keyword_name), set(value)
        elif isinstance(value, Settings):
            settings = value
            if value is not default:  # an override returning Settings: the fields it changed
                plain = Settings()
                given = {f for f in FIELDS if getattr(value, f) != getattr(plain, f)} - {"port"}
        else:
            problem = (f"plantstub: plantstub_settings gave {type(value).__name__} {value!r:.80}; it returns a dict of "
                       "Settings fields")
    except ConfigError as exc:
        problem = f"plantstub: plantstub_settings: {exc}"
    if problem is None and given - set(HONOURED):
        keys = ", ".join(repr(k) for k in sorted(given - set(HONOURED)))
        problem = (f"plantstub: plantstub_settings gives {keys}, which a sidecar (--plantstub-url {url}) cannot "
                   "honour for one test: its spec, scenarios and server settings are those it was started with. "
                   "Start the sidecar with them, or leave them out when the tests run on a sidecar (there only "
                   f"{', '.join(HONOURED)} apply; stateful when the sidecar's is the same).")
    if problem is not None or settings is None:
        pytest.fail(problem or "plantstub: plantstub_settings gave nothing", pytrace=False)
    return SidecarTerms(settings.admin_token, settings.scenario, settings.stateful if "stateful" in given else None)


def check_stateful(wanted: bool | None, stateful: bool, url: str) -> None:
    """Fail the test when its settings ask for `stateful` other than the sidecar's."""
    if wanted is not None and wanted != stateful:
        runs = "with --stateful" if stateful else "without --stateful"
        pytest.fail(f"plantstub: plantstub_settings gives stateful={wanted}, but the sidecar at {url} runs {runs}; "
                    "a sidecar's store is set where it starts (PLANTSTUB_STATEFUL)", pytrace=False)


def open_session(remote: RemoteStub, wait: float, seed_key: str | None = None,
                 clock: Callable[[], float] = time.monotonic, pause: Callable[[float], None] = time.sleep) -> RemoteStub:
    """A new session on `remote`, its dynamic answers drawn from the sidecar's seed and `seed_key`; while it serves
    its --max-sessions, tried again with growing pauses for up to `wait` seconds, then the test fails naming the cap
    and the option."""
    from plantstub.client.admin import AtCapacity
    from plantstub.errors import PlantstubError

    deadline = clock() + wait
    delay = FIRST_PAUSE
    while True:
        try:
            return remote.session(seed_key)
        except AtCapacity as exc:
            left = deadline - clock()
            if left <= 0:
                problem = (f"plantstub: no session on the sidecar at {remote.admin.url} after waiting {wait:g} s: {exc}. "
                           f"Wait longer with {WAIT_NAMES}, or give the sidecar a higher --max-sessions.")
                break
        except PlantstubError as exc:
            problem = f"plantstub: no session on the sidecar: {exc}"
            break
        pause(min(delay, left))
        delay = min(delay * 2, LONGEST_PAUSE)
    pytest.fail(problem, pytrace=False)  # outside the except block: one line, no chained traceback


def end_session(view: RemoteStub, test: str) -> None:
    """End `test`'s session on the sidecar; fail the test, naming the session, when it was lost before its end."""
    from plantstub.errors import PlantstubError

    try:
        lost = view.end_session()
    except PlantstubError as exc:
        lost = str(exc)
    if lost is not None:
        pytest.fail(f"plantstub: {test}: session {view.session_id!r} was lost during the test: {lost}. Run the "
                    "test again; behind a load balancer, see docs/scale.md.", pytrace=False)
