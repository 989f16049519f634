"""The plugin's command-line options and ini settings, and what they make: the stub's Settings, the sidecar's URL,
how long to wait for a session on it."""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
from pathlib import Path

import pytest

# config is stdlib only: loading the plugin stays cheap.
from plantstub.config import Settings, build_settings, bundled_name, fresh_seed

URL_ENV = "PLANTSTUB_URL"
WAIT_ENV = "PLANTSTUB_SESSION_WAIT"
DEFAULT_SESSION_WAIT = 30.0  # seconds the fixture retries a sidecar at its --max-sessions cap
WAIT_NAMES = f"--plantstub-session-wait SECONDS (ini plantstub_session_wait, env {WAIT_ENV})"
DEFAULT_SETTINGS = pytest.StashKey[Settings]()  # what the plugin's own plantstub_settings gave (not an override)
SEED_KEY = pytest.StashKey[int]()  # the run's seed of dynamic answers when none is given (the controller's, in xdist)


def _percent(text: str) -> float:
    """--plantstub-coverage-fail-under: a percentage, 0 to 100."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage (expected a number from 0 to 100)")
    return value


def seconds(text: str) -> float:
    """--plantstub-session-wait: a number of seconds, 0 (no waiting) or more."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (expected a number, 0 or more)")
    return value


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("plantstub", "plantstub (contract-checked Plant Store stub)")
    group.addoption("--plantstub-spec", metavar="FILE",
                    help="OpenAPI document the stub serves, relative to the current folder (default: bundled Plant Store)")
    group.addoption("--plantstub-spec-root", metavar="DIR",
                    help="folder whose files the spec's $refs may read, relative to the current folder (default: the spec's folder)")
    group.addoption("--plantstub-scenarios", metavar="DIR",
                    help="folder of scenario files, relative to the current folder")
    group.addoption("--plantstub-stateful", action="store_const", const=True, default=None,
                    help="the stub remembers what is created, listed, read, updated and deleted (reset per test)")
    group.addoption("--plantstub-dynamic", action="store_const", const=True, default=None,
                    help="default answers made anew for each call, with random values that keep the schema")
    group.addoption("--plantstub-seed", metavar="N",
                    help="seed of dynamic answers (default: a random one, shown in the header)")
    group.addoption("--plantstub-proxy", metavar="URL",
                    help="forward what no rule, scenario or store answers to the real service at URL, checking its "
                         "answers against the contract [env PLANTSTUB_PROXY]")
    group.addoption("--plantstub-tls", action="store_const", const=True, default=None,
                    help="the stub serves HTTPS with a throwaway certificate; its CA is plantstub.ca_file (needs "
                         "trustme) [env PLANTSTUB_TLS]")
    group.addoption("--plantstub-coverage", action="store_true", default=False,
                    help="show contract coverage (calls per operation and response) in the summary")
    group.addoption("--plantstub-coverage-fail-under", metavar="PCT", type=_percent, default=None,
                    help="fail the run when contract coverage is below PCT percent")
    group.addoption("--plantstub-url", metavar="URL",
                    help=f"use the stub running at URL (a sidecar), one session per test, instead of starting one "
                         f"[env {URL_ENV}]")
    group.addoption("--plantstub-session-wait", metavar="SECONDS", type=seconds, default=None,
                    help=f"how long a test waits for a session when the sidecar serves its --max-sessions "
                         f"(default {DEFAULT_SESSION_WAIT:g}) [env {WAIT_ENV}]")
    group.addoption("--plantstub-report", metavar="FILE",
                    help="write one self-contained HTML report of the run: each test's calls and verdicts, the "
                         "coverage grid, the totals (relative to the current folder)")
    parser.addini("plantstub_report", "HTML report of the run to write, relative to the ini file", type="paths")
    parser.addini("plantstub_url", "base URL of a running stub (a sidecar) the fixture uses, one session per test")
    parser.addini("plantstub_session_wait", "seconds a test waits for a session on a sidecar at its session cap "
                  f"(default {DEFAULT_SESSION_WAIT:g})", default=None)
    parser.addini("plantstub_spec", "OpenAPI document the stub serves, relative to the ini file", type="paths")
    parser.addini("plantstub_spec_root", "folder whose files the spec's $refs may read, relative to the ini file",
                  type="paths")
    parser.addini("plantstub_scenarios", "folder of scenario files, relative to the ini file", type="paths")
    parser.addini("plantstub_stateful", "the stub remembers what it is told (true/false)", default=None)
    parser.addini("plantstub_dynamic", "default answers vary, with random values that keep the schema (true/false)",
                  default=None)
    parser.addini("plantstub_seed", "seed of dynamic answers (an integer)", default=None)


def run_seed(config: pytest.Config) -> int:
    """The run's seed of dynamic answers when none is given: an xdist worker's is its controller's; chosen on first
    use (a run that never asks pays nothing)."""
    seed = config.stash.get(SEED_KEY, None)
    if seed is None:
        given = getattr(config, "workerinput", {}).get("plantstub_seed")
        seed = config.stash[SEED_KEY] = int(given) if given is not None else fresh_seed()
    return seed


def given_seed(config: pytest.Config) -> int:
    """The seed the run's stubs draw dynamic answers from, as the header shows it: --plantstub-seed (env
    PLANTSTUB_SEED, ini plantstub_seed) when given, else the run's own (run_seed)."""
    from plantstub.errors import PlantstubError

    made = config.stash.get(DEFAULT_SETTINGS, None)
    try:
        seed = (made if made is not None else settings_of(config)).seed
    except PlantstubError:  # a bad setting: said where the fixture is used
        seed = None
    return seed if seed is not None else run_seed(config)


def sidecar_url(config: pytest.Config) -> str | None:
    """--plantstub-url, else PLANTSTUB_URL, else ini plantstub_url; None: no sidecar."""
    url = config.getoption("plantstub_url") or os.environ.get(URL_ENV) or config.getini("plantstub_url")
    return str(url) if url else None


def session_wait(config: pytest.Config) -> float:
    """--plantstub-session-wait, else PLANTSTUB_SESSION_WAIT, else ini plantstub_session_wait, else 30 seconds.

    :raises pytest.UsageError: for a value that is not a number of seconds, naming where it came from.
    """
    given = config.getoption("plantstub_session_wait")
    if given is not None:
        return float(given)
    for name, value in ((WAIT_ENV, os.environ.get(WAIT_ENV)), ("plantstub_session_wait",
                                                                config.getini("plantstub_session_wait"))):
        if value not in (None, ""):
            try:
                return seconds(str(value).strip())
            except argparse.ArgumentTypeError as exc:
                raise pytest.UsageError(f"plantstub: {name}={value!r}: {exc}") from None
    return DEFAULT_SESSION_WAIT


def _first(value: str | list[str] | None) -> str | None:  # an ini value: text, or lines
    if isinstance(value, list):
        return str(value[0]) if value else None
    return value


def _spec(value: str | Path | None) -> str | Path | None:
    """A spec path made absolute, or the name of a bundled document (`plant-store-full`) when no such file exists."""
    return (bundled_name(value) or value) if value is not None else None


def _resolve(config: pytest.Config, value: str | None) -> Path | None:
    """A path given on the command line: relative to the folder pytest was started in, as a shell user expects."""
    if value is None:
        return None
    path = Path(value)
    return path if path.is_absolute() else config.invocation_params.dir / path


def _option_name(field: str) -> str:
    """The plugin's command-line option that sets `field`: --plantstub-seed for seed."""
    return "--plantstub-" + field.replace("_", "-")


def _ini_name(field: str) -> str:
    """The plugin's ini setting that sets `field`: plantstub_seed for seed."""
    return "plantstub_" + field


def settings_of(config: pytest.Config) -> Settings:
    """Settings of the stub: command line > PLANTSTUB_* environment > ini > defaults."""
    explicit = {
        "spec": _spec(_resolve(config, config.getoption("plantstub_spec"))),
        "spec_root": _resolve(config, config.getoption("plantstub_spec_root")),
        "scenarios": _resolve(config, config.getoption("plantstub_scenarios")),
        "stateful": config.getoption("plantstub_stateful"),
        "dynamic": config.getoption("plantstub_dynamic"),
        "seed": config.getoption("plantstub_seed"),
        "proxy": config.getoption("plantstub_proxy"),
        "tls": config.getoption("plantstub_tls"),
        "port": 0,
    }
    fallback = {
        "spec": _spec(_first(config.getini("plantstub_spec"))),
        "spec_root": _first(config.getini("plantstub_spec_root")),
        "scenarios": _first(config.getini("plantstub_scenarios")),
        "stateful": config.getini("plantstub_stateful"),
        "dynamic": config.getini("plantstub_dynamic"),
        "seed": config.getini("plantstub_seed") or run_seed(config),
    }
    if fallback["scenarios"] is None and explicit["scenarios"] is None and (config.rootpath / "scenarios").is_dir():
        fallback["scenarios"] = str(config.rootpath / "scenarios")
    settings = build_settings(explicit, fallback=fallback, explicit_name=_option_name, fallback_name=_ini_name)
    config.stash[DEFAULT_SETTINGS] = settings
    return settings


def with_proxy(settings: Settings | dict[str, object], url: str) -> Settings | dict[str, object]:
    """The test's settings forwarding to `url` (the marker's `proxy=`): a stub of its own in the pool."""
    if isinstance(settings, dict):
        return {**settings, "proxy": url}
    return dataclasses.replace(settings, proxy=url)
