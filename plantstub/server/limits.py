"""What one session may hold: its share of the stub's bounds (`Limits`: a sidecar session's are 1/16 of them) and
the longest seed key it may be given."""

from __future__ import annotations

from dataclasses import dataclass

from plantstub._fields import ByFields
from plantstub.config import Settings
from plantstub.stateful import MAX_BYTES
from plantstub.webhooks.deliveries import DEFAULT_LOG_BYTES

SESSION_SHARE = 16  # a sidecar session keeps at most 1/16 of the stub's bytes (--max-bytes) and of each kind's
SEED_KEY_CHARS = 4096  # a seed key's longest (a test's node id, parameters and all)


def seed_key_problem(value: object, where: str) -> str | None:
    """Why `value` (at `where`, e.g. `body.seed_key`) is not a seed key, or None: a string of at most
    SEED_KEY_CHARS characters."""
    if not isinstance(value, str):
        return f"{where}: expected a string (a test's node id, say), not {type(value).__name__}"
    if len(value) > SEED_KEY_CHARS:
        return f"{where}: {len(value)} characters; at most {SEED_KEY_CHARS}"
    return None


@dataclass(frozen=True, slots=True, eq=False, repr=False)  # ByFields: eq, hash, repr
class Limits(ByFields):
    """The bytes one session may keep of each kind: of calls (the journal), of records (the store), of deliveries;
    all of them within its memory Budget (`memory`, bytes), itself within the stub's (--max-bytes)."""

    journal_bytes: int
    store_bytes: int
    delivery_bytes: int
    memory: int

    @classmethod
    def of(cls, settings: Settings, share: int = 1) -> Limits:
        """The stub's whole limits (`share` 1), or a sidecar session's: --max-sessions of them cannot each
        take the whole."""
        return cls(max(settings.journal_bytes // share, 1), MAX_BYTES // share, DEFAULT_LOG_BYTES // share,
                   max(settings.max_bytes // share, 1))
