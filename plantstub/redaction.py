"""The one redaction rule: which names and values hold secrets, and text written from traffic without them.

Everything plantstub writes from traffic for people to keep or share goes through here: the files `--record` and
`plantstub import-har` write, the HAR export (`GET /__plantstub/calls?format=har`) and the pytest HTML report. The
journal and the admin API's call list are not redacted: they are the test's own view of what it sent.

A **name** (a header, a query parameter, a JSON field at any depth) holds a secret when

- one of its word parts is a secret word: a name is split at `_`, `-`, `.`, spaces, digits and camelCase humps
  (`X-API-Key` is `x api key`, `sessionId` is `session id`, `card_number` is `card number`), and a part, or the part
  without a final `s`, is one of WORDS; or two parts in a row are one of PHRASES (`card number`); or
- the name, lower-cased, contains one of JOINED (`accesstoken`, `clientsecret`, `sessionid`: words written together).

So `pin`, `pinCode` and `PIN_CODE` are secret, `shipping` and `pinned` are not; `auth` and `x-auth-token` are,
`author` is not; `key` and `api_key` are, `monkey` and `keyboard` are not.

A **value** holds a secret when it is a credential as an Authorization header carries it: `Bearer ` or `Basic `
(any case) and one token (`Bearer abc.def`), whatever its name.

A secret is replaced by `REDACTED` (a whole object or list under a secret name too). Paths are kept as they were sent:
a token inside a path segment (`/reset/abc123`) is not found. Messages written to files carry no query string
(`scrub`), and none of the values redacted from the exchange they speak of.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from itertools import pairwise
from typing import TypeVar

from plantstub._json import inside

V = TypeVar("V")
REDACTED = "REDACTED"
WORDS = frozenset({
    "auth", "authorization", "cookie", "credential", "cvc", "cvv", "jwt", "key", "otp", "passcode", "passphrase",
    "passwd", "password", "pin", "pwd", "secret", "session", "sid", "signature", "token",
})
PHRASES = frozenset({("card", "number"), ("card", "num"), ("card", "no"), ("security", "code")})
JOINED = ("token", "secret", "password", "passwd", "passphrase", "credential", "sessionid", "cardnumber", "apikey",
          "accesskey", "privatekey", "signingkey", "authkey", "masterkey", "clientkey", "encryptionkey")
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_CREDENTIAL = re.compile(r"(?i)(?:bearer|basic) +[A-Za-z0-9\-._~+/]+=*")
# A URL's query in a message: `?` and what follows, up to a space or a quote.
_QUERY = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s?#'\"]*)\?[^\s#'\"]*", re.I)
_WORD = r"A-Za-z0-9_"


@lru_cache(maxsize=4096)
def secret_name(name: str) -> bool:
    """Whether a header, query parameter or field of this name holds a secret (the module's rule)."""
    low = name.lower()
    if any(word in low for word in JOINED):
        return True
    parts = [part.lower() for part in _PARTS.findall(name)]
    if any(part in WORDS or (part.endswith("s") and part[:-1] in WORDS) for part in parts):
        return True
    return any(pair in PHRASES for pair in pairwise(parts))


def secret_value(value: object) -> bool:
    """Whether a value is a credential whatever its name: `Bearer TOKEN`, `Basic TOKEN`."""
    return isinstance(value, str) and _CREDENTIAL.fullmatch(value.strip()) is not None


def _leaves(value: object) -> Iterable[str]:
    """The texts of a value's strings and numbers, at any depth (what a message could quote of it)."""
    for item in inside(value):
        if isinstance(item, str) and item:
            yield item
        elif isinstance(item, (int, float)) and not isinstance(item, bool):
            yield json.dumps(item)


class Redactor:
    """Redacts the parts of one exchange (or one call), remembering each value it took out, so that `scrub` can take
    them out of any message about that exchange too."""

    def __init__(self) -> None:
        self.found: set[str] = set()
        self._compiled: tuple[int, re.Pattern[str]] | None = None  # of `found`, as many as it held then

    def _took(self, value: object) -> str:
        self.found.update(_leaves(value))
        return REDACTED

    def value(self, value: object) -> object:
        """`value` (parsed JSON) with every secret replaced by REDACTED, at any depth (a copy where it changed)."""
        if isinstance(value, dict):
            return {k: self._took(v) if isinstance(k, str) and secret_name(k) else self.value(v)
                    for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return self._took(value) if secret_value(value) else value

    def pairs(self, pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Headers or query parameters, (name, value) in order: a secret's value REDACTED."""
        return [(name, self._took(value) if secret_name(name) or secret_value(value) else value)
                for name, value in pairs]

    def mapping(self, mapping: Mapping[str, V]) -> dict[str, V | str]:
        """Headers or query parameters as a mapping (a value may be a list of the values of a repeated name)."""
        return {name: self._took(value) if secret_name(name) or any(map(secret_value, _listed(value)))
                else value for name, value in mapping.items()}

    def scrub(self, text: str) -> str:
        """A message about this exchange as a file may carry it: no URL's query string, no value redacted."""
        return self.hide(_QUERY.sub(r"\1", text))

    def hide(self, text: str) -> str:
        """`text` with every value redacted so far (as a message may quote it) replaced by REDACTED."""
        pattern = self._pattern()
        return text if pattern is None else pattern.sub(REDACTED, text)

    def hide_in(self, value: object) -> object:
        """`value` (parsed JSON) with every value redacted so far replaced by REDACTED in its texts (a message in an
        answer quoting the URL's `?api_key=`, a field echoing a token under another name)."""
        pattern = self._pattern()
        if pattern is None:
            return value
        if isinstance(value, dict):
            return {k: self.hide_in(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.hide_in(v) for v in value]
        return pattern.sub(REDACTED, value) if isinstance(value, str) else value

    def _pattern(self) -> re.Pattern[str] | None:
        if not self.found:
            return None
        if self._compiled is None or self._compiled[0] != len(self.found):
            forms = sorted({form for found in self.found for form in _forms(found)}, key=len, reverse=True)
            alternatives = "|".join(map(re.escape, forms))
            self._compiled = (len(self.found), re.compile(f"(?<![{_WORD}])(?:{alternatives})(?![{_WORD}])"))
        return self._compiled[1]


def _listed(value: object) -> list[object]:
    return value if isinstance(value, list) else [value]


def _forms(text: str) -> set[str]:
    """How a message may quote `text`: as it is, as repr() writes it, as JSON writes it (without the quotes)."""
    return {text, repr(text)[1:-1], json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]}


def redacted(value: object) -> object:
    """`value` (parsed JSON) with every secret replaced by REDACTED."""
    return Redactor().value(value)


def scrub(text: str) -> str:
    """A message without any URL's query string."""
    return _QUERY.sub(r"\1", text)
