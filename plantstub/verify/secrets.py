"""What `plantstub verify` never shows: the values of --header (and the credential inside one), and the answers'
fields whose name says secret. The one place verify asks the project's redaction rule (plantstub/redaction.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import overload

from plantstub.redaction import REDACTED, redacted, secret_name

# Shorter values are not looked for in free text (a value "1" would hide every 1 of the output); as header values
# they are never shown, whatever their length.
MIN_HIDDEN = 4


def credential(name: str) -> bool:
    """Whether a header of this name carries a secret (Authorization, Cookie, a name with token, key...)."""
    return secret_name(name)


class Secrets:
    """The --header values of one run, and how to hide them (and secret fields) in what verify prints or writes."""

    def __init__(self, headers: Iterable[tuple[str, str]]) -> None:
        found: set[str] = set()
        self.names: set[str] = set()
        for name, value in headers:
            self.names.add(name.lower())
            found.add(value)
            credential = value.partition(" ")[2]
            if credential.strip():  # `Bearer abc`: the credential alone too (a service may echo it bare)
                found.add(credential.strip())
        self.values = sorted((v for v in found if len(v) >= MIN_HIDDEN), key=len, reverse=True)

    def text(self, text: str) -> str:
        """`text` with every --header value in it replaced by REDACTED."""
        for value in self.values:
            if value in text:
                text = text.replace(value, REDACTED)
        return text

    @overload
    def value(self, value: dict[str, object]) -> dict[str, object]: ...

    @overload
    def value(self, value: object) -> object: ...

    def value(self, value: object) -> object:
        """A JSON value (an answer's body, a report) with fields named as secrets REDACTED and every string (keys
        too) hidden by text()."""
        return self._hidden(redacted(value))

    def _hidden(self, value: object) -> object:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self._hidden(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._hidden(v) for v in value]
        return value

    def headers(self, pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
        """Request headers as shown: a --header's and a secret one's (Authorization, Cookie, *token*...) REDACTED."""
        return {name: REDACTED if name.lower() in self.names or credential(name) else self.text(value)
                for name, value in pairs}
