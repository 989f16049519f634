"""Random strings for dynamic answers (--dynamic): formats that look real, words, and strings built to match a
pattern, with the builder of contract/pattern.py choosing repeats, branches and characters at random."""

from __future__ import annotations

import base64
import random
import string
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Any

from plantstub.contract.pattern import _CATEGORY, _generation_dialect, _RegexBuilder, sre_parse

WORDS = ("fern", "cactus", "basil", "ivy", "moss", "orchid", "tulip", "maple", "sage", "lily", "aloe", "palm",
         "rose", "mint", "oak", "pine", "thyme", "lotus", "daisy", "cedar", "willow", "clover", "poppy", "yucca")
DOMAINS = ("example.com", "example.org", "example.net", "shop.example")
SPREAD = 4  # a pattern's open repeat (`+`, `*`, `{2,}`) goes up to this many past its minimum
_EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)
_SPAN = 30 * 365 * 86_400  # seconds: dates fall in 2000-2029
_LETTERS = string.ascii_letters + string.digits
_CLASS = {"DIGIT": string.digits, "WORD": _LETTERS + "_", "SPACE": " "}


def _moment(rng: random.Random) -> datetime:
    return _EPOCH + timedelta(seconds=rng.randrange(_SPAN))


def _word(rng: random.Random) -> str:
    return rng.choice(WORDS)


def _host(rng: random.Random) -> str:
    return f"{_word(rng)}{rng.randrange(100)}.{rng.choice(DOMAINS)}"


FORMATS: dict[str, Callable[[random.Random], str]] = {
    "email": lambda r: f"{_word(r)}.{_word(r)}{r.randrange(100)}@{r.choice(DOMAINS)}",
    "uuid": lambda r: str(uuid.UUID(int=r.getrandbits(128), version=4)),
    "date-time": lambda r: _moment(r).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "date": lambda r: _moment(r).strftime("%Y-%m-%d"),
    "time": lambda r: _moment(r).strftime("%H:%M:%SZ"),
    "uri": lambda r: f"https://{_host(r)}/{_word(r)}/{r.randrange(1000)}",
    "hostname": _host,
    "ipv4": lambda r: ".".join(str(r.randint(1, 254)) for _ in range(4)),
    "ipv6": lambda r: ":".join(f"{r.getrandbits(16):x}" for _ in range(8)),
    "byte": lambda r: base64.b64encode(r.randbytes(r.randint(3, 24))).decode("ascii"),
    "int32": lambda r: str(r.randint(-(2**31), 2**31 - 1)),
    "int64": lambda r: str(r.randint(-(2**40), 2**40)),
    "duration": lambda r: f"P{r.randint(1, 30)}DT{r.randint(0, 23)}H",
    "password": lambda r: "".join(r.choice(_LETTERS) for _ in range(12)),
    "json-pointer": lambda r: f"/{_word(r)}/{r.randrange(10)}",
}
for _alias, _same in (("idn-email", "email"), ("uri-reference", "uri"), ("iri", "uri"), ("iri-reference", "uri"),
                      ("url", "uri"), ("idn-hostname", "hostname")):
    FORMATS[_alias] = FORMATS[_same]


def words(rng: random.Random, low: int, high: int | None) -> str:
    """One to three words, padded with letters to `low` characters and cut to `high`."""
    draw = rng.random
    text = " ".join([WORDS[int(draw() * len(WORDS))] for _ in range(1 + int(draw() * 3))])
    if len(text) < low:
        text += "".join(rng.choice(string.ascii_lowercase) for _ in range(low - len(text)))
    return text if high is None else text[:high]


@lru_cache(maxsize=256)
def _parsed(pattern: str) -> tuple[Any, ...] | None:
    try:
        return tuple(sre_parse.parse(_generation_dialect(pattern)).data)
    except Exception:  # noqa: BLE001 - syntax Python's parser does not read: no string from the pattern
        return None


def random_match(pattern: str, rng: random.Random, min_length: int = 0) -> str | None:
    """A string built to match `pattern`, its choices random (an open repeat up to SPREAD, or `min_length`, past its
    least); None when Python cannot read the pattern (the caller checks the result: anchors, lookarounds and ECMA
    differences are not all honoured)."""
    items = _parsed(pattern)
    if items is None:
        return None
    builder = _RandomBuilder(rng, max(SPREAD, min(min_length, 64)))
    try:
        return builder.build(list(items)) + "".join(builder.tail)
    except (ValueError, OverflowError, RecursionError):
        return None


class _RandomBuilder(_RegexBuilder):
    def __init__(self, rng: random.Random, spread: int) -> None:
        super().__init__(0, True)
        self.rng = rng
        self.spread = spread

    def item(self, name: str, av: Any) -> str:
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = av
            top = low + self.spread if high == sre_parse.MAXREPEAT else min(high, low + self.spread)
            return "".join(self.build(list(sub)) for _ in range(self.rng.randint(low, max(low, top))))
        if name == "BRANCH":
            return self.build(list(self.rng.choice(av[1])))
        if name == "ANY":
            return self.rng.choice(_LETTERS)
        return super().item(name, av)

    def char(self, items: list[Any]) -> str:
        if not items or items[0][0].name == "NEGATE":
            return super().char(items)
        op, av = self.rng.choice(items)
        if op.name == "LITERAL":
            return chr(av)
        if op.name == "RANGE":
            code = self.rng.randint(av[0], av[1])
            return chr(av[0] if 0xD800 <= code <= 0xDFFF else code)  # JSON holds no lone surrogate
        if op.name == "CATEGORY":
            kind = av.name.replace("CATEGORY_", "").replace("UNI_", "")
            return self.rng.choice(_CLASS[kind]) if kind in _CLASS else _CATEGORY.get(kind, "a")
        return super().char(items)
