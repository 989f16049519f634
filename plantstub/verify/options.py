"""`plantstub verify`'s settings, one frozen value: flags > PLANTSTUB_* environment > defaults, each bad value
named with what was expected (never the value of a --header: it may be a credential)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from plantstub.config import (
    DEFAULT_SCENARIOS,
    _bool,
    _seconds,
    build_settings,
    env_name,
    flag_name,
    proxy_url,
    shown_default,
)
from plantstub.errors import ConfigError

COMPARE = ("status", "class", "shape", "body")
DEFAULT_REQUEST_TIMEOUT = 10.0
# The settings the stub's Settings also has (and their environment variables), read through config.py.
SHARED = ("spec", "spec_root", "spec_cache", "scenarios", "scenario")
# Defaults of verify's own flags, as `--help` and docs/cli.md show them.
OWN_DEFAULTS = {
    "against": "none; required", "header": "none", "compare": "shape", "allow_writes": "off",
    "request_timeout": f"{DEFAULT_REQUEST_TIMEOUT:g}", "ca": "none", "junit": "none", "json": "off", "record": "none",
}
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def verify_default(field: str) -> str:
    """The default of verify's flag `field` as `--help` and docs/cli.md show it."""
    return OWN_DEFAULTS[field] if field in OWN_DEFAULTS else shown_default(field)


@dataclass(frozen=True, slots=True)
class VerifySettings:
    """Everything one `plantstub verify` run needs."""

    against: str  # the real service's base URL: the only place anything is sent
    headers: tuple[tuple[str, str], ...] = ()  # --header: sent with every request, never shown
    compare: str = "shape"
    allow_writes: bool = False
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT  # seconds one request has, its answer read whole
    ca: Path | None = None  # a PEM file of CAs trusted besides the system's (an https service's own CA)
    spec: Path | None = None
    spec_root: Path | None = None
    spec_cache: Path | bool = True
    scenario: str | None = None
    paths: tuple[Path, ...] = ()  # scenario files and folders
    named: bool = True  # whether PATHs were given (else `paths` is the scenarios folder, which may not exist)
    junit: Path | None = None
    json: bool = False
    record: Path | None = None


def header(text: str, name: str = "--header") -> tuple[str, str]:
    """`NAME: VALUE` as a header; ConfigError naming the header, never quoting its value."""
    field, colon, value = text.partition(":")
    field, value = field.strip(), value.strip()
    if not colon or not field:
        raise ConfigError(f"{name}: expected 'NAME: VALUE' (a header name, a colon, its value); the value given is "
                          "not shown, as it may be a credential")
    if not set(field) <= _TOKEN:
        raise ConfigError(f"{name}: {field[:60]!r} is not a header name (letters, digits and !#$%&'*+-.^_`|~)")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise ConfigError(f"{name} {field}: its value holds a control character, which a header cannot carry")
    return field, value


def _headers(name: str, value: object) -> tuple[tuple[str, str], ...]:
    """--header (repeatable), or PLANTSTUB_HEADER: one header per line."""
    items = value.splitlines() if isinstance(value, str) else list(cast("Iterable[str]", value))  # argparse's list
    return tuple(header(item, name) for item in items if item.strip())


def _compare(name: str, value: object) -> str:
    text = str(value).strip().lower()
    if text not in COMPARE:
        raise ConfigError(f"{name}={value!r}: unknown comparison (expected {', '.join(COMPARE)})")
    return text


def _against(name: str, value: object) -> str:
    try:
        return proxy_url(value)
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc} (expected the real service's base URL, e.g. https://staging.example.com)"
                          ) from None


def _ca(name: str, value: object) -> Path:
    """A PEM file of CA certificates, read now: a file that is none stops the run before anything is sent."""
    from plantstub.proxy.forward import trusting

    path = Path(cast("str | os.PathLike[str]", value))  # a path given
    trusting(path, name)
    return path


# config.py's converters where a setting is read as the stub's are: one wording of what was expected.
_CONVERTERS = {"against": _against, "header": _headers, "compare": _compare, "allow_writes": _bool,
               "request_timeout": _seconds, "ca": _ca}
ENV = tuple(env_name(field) for field in _CONVERTERS)  # the variables verify reads besides the stub's own


def verify_settings(explicit: Mapping[str, object], env: Mapping[str, str] | None = None) -> VerifySettings:
    """The settings of one run from the command line's values (None: not given) and the environment."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}  # field -> its value, of the type its converter gives (its field's)
    for field, convert in _CONVERTERS.items():
        if explicit.get(field) not in (None, [], ()):
            values[field] = convert(flag_name(field), explicit[field])
        elif env.get(env_name(field)) not in (None, ""):
            values[field] = convert(env_name(field), env[env_name(field)])
    if "against" not in values:
        raise ConfigError(f"verify needs the real service's base URL: --against URL (or {env_name('against')})")
    shared = build_settings({field: explicit.get(field) for field in ("spec", "spec_root", "scenario")},
                            env={env_name(f): env[env_name(f)] for f in SHARED if env_name(f) in env})
    paths = tuple(Path(p) for p in cast("Iterable[str]", explicit.get("paths") or ()))  # argparse's list
    named = bool(paths)
    if not named:
        paths = (shared.scenarios or DEFAULT_SCENARIOS,)
    headers = values.pop("header", ())
    return VerifySettings(**values, headers=headers, spec=shared.spec, spec_root=shared.spec_root,
                          spec_cache=shared.spec_cache, scenario=shared.scenario, paths=paths, named=named,
                          junit=_path(explicit.get("junit")), json=bool(explicit.get("json")),
                          record=_path(explicit.get("record")))


def _path(value: object) -> Path | None:
    return None if value in (None, "") else Path(cast("str | os.PathLike[str]", value))  # a path given
