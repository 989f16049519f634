"""Settings: one dataclass, built from arguments > PLANTSTUB_* environment > defaults."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, SupportsFloat, cast
from urllib.parse import urlsplit

from plantstub._fields import ByFields
from plantstub.errors import ConfigError

DEFAULT_MAX_BODY = 1024 * 1024
DEFAULT_JOURNAL_SIZE = 10_000
DEFAULT_JOURNAL_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_BYTES = 1024 * 1024 * 1024  # what clients send, held, all sessions together
DEFAULT_READ_TIMEOUT = 30.0
DEFAULT_SESSION_IDLE = 600.0
DEFAULT_MAX_SESSIONS = 100
DEFAULT_PROXY_TIMEOUT = 30.0
DEFAULT_SCENARIOS = Path("scenarios")  # the folder `plantstub serve` reads when none is named and it exists
HEALTH_TIMEOUT = 2.0  # `plantstub health --timeout`
SEEDS = 1_000_000  # a seed of dynamic answers chosen at start is below this: six digits to copy from a CI log


def fresh_seed() -> int:
    """A seed of dynamic answers for a run given none (printed, so the run can be repeated with --seed)."""
    return int.from_bytes(os.urandom(8), "big") % SEEDS


BUNDLED_SPECS = ("plant-store", "plant-store-full")  # `--spec NAME`: the documents shipped in plantstub/data
# What --spec takes, as every subcommand's help says it.
SPEC_HELP = f"OpenAPI 3.0, 3.1 or 3.2 or Swagger 2.0 document, or a bundled one by name ({', '.join(BUNDLED_SPECS)})"


def bundled_name(value: str | Path) -> str | None:
    """The bundled document `value` names: a bare name (no folder, no suffix) of one, where no such file exists."""
    path = Path(value)
    return path.name if path.name in BUNDLED_SPECS and not path.exists() else None


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class Settings(ByFields):
    """Everything a running stub needs to know; shared by CLI, Stub, create_app and the fixture."""

    spec: Path | None = None
    spec_root: Path | None = None  # the folder $refs may read files under (default: the spec's own folder)
    scenarios: Path | None = None
    scenario: str | None = None
    host: str = "127.0.0.1"
    port: int = 4010
    watch: bool = False
    journal: Path | None = None
    max_body: int = DEFAULT_MAX_BODY
    read_timeout: float = DEFAULT_READ_TIMEOUT
    journal_size: int = DEFAULT_JOURNAL_SIZE
    journal_bytes: int = DEFAULT_JOURNAL_BYTES
    journal_flush: str = "batch"
    admin_token: str | None = None
    cors: bool = False
    stateful: bool = False
    log_format: str = "none"
    webhook: tuple[tuple[str, str], ...] = ()  # --webhook: (webhook name or "*", URL) pairs
    session_idle: float = DEFAULT_SESSION_IDLE  # seconds a session may go unused before it ends
    max_sessions: int = DEFAULT_MAX_SESSIONS  # live sessions at once
    max_bytes: int = DEFAULT_MAX_BYTES  # memory all that clients send may take, all sessions together
    spec_cache: Path | bool = True  # folder of the cache of big specs loaded; True: the default one, False: off
    dynamic: bool = False  # default answers made anew for each call, random values that keep the schema
    seed: int | None = None  # of dynamic answers; None: a random one, chosen at start (and printed by the CLI)
    proxy: str | None = None  # --proxy: the real service what nothing else answers is forwarded to
    proxy_timeout: float = DEFAULT_PROXY_TIMEOUT  # seconds the real service has to answer a forwarded request
    proxy_ca: Path | None = None  # a CA trusted besides the system's when forwarding to https://
    tls_cert: Path | None = None  # --tls-cert and --tls-key: serve HTTPS with this certificate (chain) and key
    tls_key: Path | None = None
    tls: bool = False  # Stub(tls=True), --plantstub-tls: serve HTTPS with a throwaway CA's certificate (trustme)
    record: Path | None = None  # --record DIR: the proxied exchanges become scenario files there
    record_secrets: str = "redact"  # --record-secrets keep: write secrets as they came
    record_ignore_query: tuple[str, ...] = ()  # query names recorded rules do not match on (a timestamp, a nonce)
    # How each field was given (`--max-body`, `max_body`, `PLANTSTUB_MAX_BODY`, `--plantstub-seed`...), for messages
    # about its value found at start; not part of what the settings are.
    given_as: Mapping[str, str] = dataclasses.field(default_factory=dict, compare=False, hash=False, repr=False)

    def name_of(self, field: str) -> str:
        """`field` as its user gave it, else as the command line names it: for `NAME=value: what is wrong`."""
        return self.given_as.get(field) or flag_name(field)


# A default that is no plain value, in the words `--help` and docs/cli.md show it.
_DEFAULT_WORDS = {
    "spec": "the bundled Plant Store", "spec_root": "the spec's folder",
    "scenarios": f"{DEFAULT_SCENARIOS}/ when it exists",
    "spec_cache": "$XDG_CACHE_HOME/plantstub, else ~/.cache/plantstub", "scenario": "none", "journal": "none",
    "admin_token": "none", "webhook": "none", "watch": "off", "cors": "off", "stateful": "off", "dynamic": "off",
    "seed": "a random one, which --dynamic prints at start", "proxy": "none", "proxy_ca": "none",
    "tls_cert": "none", "tls_key": "none", "tls": "off", "record": "none", "record_ignore_query": "none",
}


def shown_default(field: str) -> str:
    """The default of setting `field` as `--help` and docs/cli.md show it: `100`, `30` (seconds), `none`, `off`."""
    if field in _DEFAULT_WORDS:
        return _DEFAULT_WORDS[field]
    value = getattr(Settings(), field)
    return f"{value:g}" if isinstance(value, float) else str(value)


def _path(name: str, value: object) -> Path | None:
    if value in (None, ""):
        return None
    return Path(cast("str | os.PathLike[str]", value))  # anything else: TypeError, as Path() says


def _spec_cache(name: str, value: object) -> Path | bool:
    """--spec-cache: `off` (no cache), or the folder of the cache."""
    if isinstance(value, (bool, Path)):
        return value
    text = str(value).strip()
    if text.lower() in ("off", "0", "false", "no"):
        return False
    return Path(text) if text else True


def spec_cache_setting(env: Mapping[str, str] | None = None) -> Path | bool:
    """The spec cache PLANTSTUB_SPEC_CACHE names (for loads given no setting), the default folder (True) when unset."""
    value = (os.environ if env is None else env).get(env_name("spec_cache"), "")
    return _spec_cache(env_name("spec_cache"), value) if value else True


def _text(name: str, value: object) -> str | None:
    return None if value in (None, "") else str(value)


def _bool(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ConfigError(f"{name}={value!r}: not a boolean (expected 1/0, true/false, yes/no, on/off)")


def _int_in(low: int, high: int, what: str) -> Callable[[str, object], int]:
    def convert(name: str, value: object) -> int:
        try:
            number = int(str(value).strip()) if not isinstance(value, int) else value
        except ValueError:
            number = None
        if number is None or isinstance(number, bool) or not low <= number <= high:
            raise ConfigError(f"{name}={value!r}: not {what} (expected an integer {low}-{high})")
        return number

    return convert


def _seconds(name: str, value: object) -> float:
    try:
        number = float(str(value).strip()) if isinstance(value, str) else float(cast(SupportsFloat, value))
    except (TypeError, ValueError):
        number = None
    if number is None or isinstance(value, bool) or not 0 < number <= 86_400:
        raise ConfigError(f"{name}={value!r}: not a number of seconds (expected a number above 0, at most 86400)")
    return number


def _host(name: str, value: object) -> str:
    text = str(value).strip()
    if not text:
        raise ConfigError(f"{name}={value!r}: empty host (expected an address such as 127.0.0.1)")
    return text


def _log_format(name: str, value: object) -> str:
    text = str(value).strip().lower()
    if text not in ("none", "text", "json"):
        raise ConfigError(f"{name}={value!r}: unknown log format (expected none, text or json)")
    return text


def _journal_flush(name: str, value: object) -> str:
    text = str(value).strip().lower()
    if text not in ("batch", "call"):
        raise ConfigError(f"{name}={value!r}: unknown flush mode (expected batch or call)")
    return text


def _record_secrets(name: str, value: object) -> str:
    text = str(value).strip().lower()
    if text not in ("redact", "keep"):
        raise ConfigError(f"{name}={value!r}: unknown mode (expected redact or keep)")
    return text


def _names(name: str, value: object) -> tuple[str, ...]:
    """A list of query parameter names: separated by commas or spaces (a list or tuple as it is)."""
    items = value.replace(",", " ").split() if isinstance(value, str) else [str(item) for item in cast(Iterable[object], value)]
    for item in items:
        if not item or any(ord(c) < 0x21 or ord(c) == 0x7F for c in item) or len(item) > 200:
            raise ConfigError(f"{name}: {item[:60]!r} is not a query parameter name (expected names separated by "
                              "commas, e.g. _,timestamp)")
    return tuple(dict.fromkeys(items))


def _token(name: str, value: object) -> str | None:
    text = str(value)
    if text == "":
        return None
    if text != text.strip() or any(not 0x21 <= ord(c) <= 0x7E for c in text):
        raise ConfigError(f"{name}: not a usable token (printable ASCII without spaces, as a bearer token is)")
    return text


def webhook_url(url: object) -> str:
    """`url` if plantstub may send webhooks to it (http or https, with a host, no control character); else
    ValueError saying why."""
    text = str(url) if isinstance(url, str) else ""
    control = next((i for i, c in enumerate(text) if ord(c) < 0x20 or ord(c) == 0x7F), None)
    if control is not None:  # CR LF in a URL would split the request line of what is sent
        raise ValueError(f"{shown_url(text)[:100]!r} holds a control character ({text[control]!r} at {control}); "
                         "a URL cannot")
    text = text.strip()
    parts = urlsplit(text) if text else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or len(text) > 2048:
        raise ValueError(f"{shown_url(str(url))[:100]!r} is not an http:// or https:// URL with a host")
    return text


def shown_url(url: str) -> str:
    """`url` with the password of its `user:password@` replaced by `***`: how every URL is shown, never how it
    is sent."""
    if "@" not in url:  # no user or password: the usual URL, shown as it is
        return url
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    userinfo, at, host = rest[:end].rpartition("@")
    if not at or ":" not in userinfo:
        return url
    return f"{scheme}://{userinfo.partition(':')[0]}:***@{host}{rest[end:]}"


def proxy_url(value: object) -> str:
    """`value` if the stub may forward to it (--proxy): an http:// or https:// URL with a host and no query or
    fragment, without its trailing slash (request paths are appended to it); else ValueError saying why."""
    url = webhook_url(value)
    if "?" in url or "#" in url:
        raise ValueError(f"{shown_url(url)[:100]!r} has a query or fragment; give the base URL the request paths are "
                         "appended to")
    return url.rstrip("/")


def _proxy(name: str, value: object) -> str | None:
    if value in (None, ""):
        return None
    try:
        return proxy_url(value)
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc} (expected the real service's base URL, e.g. https://staging.example.com)"
                          ) from None


def subscription(text: str) -> tuple[str, str]:
    """One `--webhook` value: URL (every webhook, "*") or NAME=URL; ValueError when it is neither."""
    text = text.strip()
    name, url = ("*", text) if text.startswith(("http://", "https://")) or "=" not in text else text.split("=", 1)
    if not name:
        raise ValueError(f"{shown_url(text)[:100]!r}: the webhook name before '=' is empty (expected URL or NAME=URL)")
    return name, webhook_url(url)


def _webhooks(name: str, value: object) -> tuple[tuple[str, str], ...]:
    """--webhook (repeatable) or PLANTSTUB_WEBHOOK (values separated by spaces): one URL per webhook name."""
    values = value.split() if isinstance(value, str) else list(cast(Iterable[object], value))
    found: dict[str, str] = {}
    for item in values:
        try:
            key, url = item if isinstance(item, tuple) else subscription(str(item))
            webhook_url(url)
        except ValueError as exc:
            raise ConfigError(f"{name}: {exc} (expected URL or NAME=URL)") from None
        if key in found:
            which = "every webhook" if key == "*" else key
            raise ConfigError(f"{name}: two URLs for {which} ({shown_url(found[key])}, {shown_url(url)}); give one")
        found[key] = url
    return tuple(found.items())


_CONVERTERS = {
    "spec": _path,
    "spec_root": _path,
    "scenarios": _path,
    "scenario": _text,
    "host": _host,
    "port": _int_in(0, 65535, "a port"),
    "watch": _bool,
    "journal": _path,
    "max_body": _int_in(1, 2**31 - 1, "a size in bytes"),
    "read_timeout": _seconds,
    "journal_size": _int_in(1, 10_000_000, "a journal size"),
    "journal_bytes": _int_in(1, 2**40, "a size in bytes"),
    "journal_flush": _journal_flush,
    "admin_token": _token,
    "cors": _bool,
    "stateful": _bool,
    "log_format": _log_format,
    "webhook": _webhooks,
    "session_idle": _seconds,
    "max_sessions": _int_in(1, 100_000, "a number of sessions"),
    "max_bytes": _int_in(1024 * 1024, 2**44, "a size in bytes (1 MiB at least)"),
    "spec_cache": _spec_cache,
    "dynamic": _bool,
    "seed": _int_in(0, 2**32 - 1, "a seed"),
    "proxy": _proxy,
    "proxy_timeout": _seconds,
    "proxy_ca": _path,
    "tls_cert": _path,
    "tls_key": _path,
    "tls": _bool,
    "record": _path,
    "record_secrets": _record_secrets,
    "record_ignore_query": _names,
}
FIELDS = tuple(_CONVERTERS)


def env_name(field: str) -> str:
    """The environment variable that sets `field`: PLANTSTUB_MAX_BODY for max_body."""
    return "PLANTSTUB_" + field.upper()


def flag_name(field: str) -> str:
    """The command line's name of `field`: --max-body for max_body."""
    return "--" + field.replace("_", "-")


def keyword_name(field: str) -> str:
    """Python's name of `field` (a keyword of Stub() and create_app(), a key of plantstub_settings): max_body."""
    return field


def build_settings(
    explicit: Mapping[str, object] | None = None,
    env: Mapping[str, str] | None = None,
    fallback: Mapping[str, object] | None = None,
    *,
    explicit_name: Callable[[str], str] = flag_name,
    fallback_name: Callable[[str], str] = keyword_name,
) -> Settings:
    """Merge explicit values > PLANTSTUB_* environment > fallback (e.g. pytest ini) > defaults.

    `None` in `explicit` or `fallback` means "not given". Each bad value raises ConfigError
    naming the setting as its user spelled it (`explicit_name`, `fallback_name`: a field's name
    there), the value and what was expected.
    """
    env = os.environ if env is None else env
    explicit = explicit or {}
    fallback = fallback or {}
    unknown = set(explicit) - set(FIELDS)
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))} (known: {', '.join(FIELDS)})")
    values: dict[str, Any] = {}  # field -> its value, of the type its converter gives (its field's)
    given_as: dict[str, str] = {}  # field -> the name it was given by
    for field, convert in _CONVERTERS.items():
        if explicit.get(field) is not None:
            name, value = explicit_name(field), explicit[field]
        elif env.get(env_name(field)) not in (None, ""):
            name, value = env_name(field), env[env_name(field)]
        elif fallback.get(field) is not None:
            name, value = fallback_name(field), fallback[field]
        else:
            continue
        values[field], given_as[field] = convert(name, value), name
    if ("tls_cert" in values) != ("tls_key" in values):
        given, missing = ("--tls-cert", "--tls-key") if "tls_cert" in values else ("--tls-key", "--tls-cert")
        raise ConfigError(f"{given} without {missing}: HTTPS needs both the certificate and its private key")
    if "record" in values and "proxy" not in values:
        raise ConfigError("--record without --proxy: only what the real service answers is recorded; give --proxy URL")
    if values.get("tls") and "tls_cert" in values:
        raise ConfigError("tls=True makes a throwaway certificate; it cannot be combined with --tls-cert/--tls-key")
    return dataclasses.replace(Settings(), **values, given_as=given_as)
