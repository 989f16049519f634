"""Times as the journal, the deliveries and the admin API write them: ISO 8601 UTC with milliseconds."""

from __future__ import annotations

import math
from datetime import datetime, timezone


def iso_time(started: float) -> str:
    """Seconds since the epoch as ISO 8601 UTC with milliseconds: `2026-11-24T01:02:03.456Z`. The date and time of
    the second are made once a second (a --journal line each call); the microseconds rounded as datetime rounds
    them (half to even), then cut to milliseconds as isoformat() cuts them."""
    fraction, whole = math.modf(started)
    micro = round(fraction * 1e6)
    if micro >= 1_000_000 or micro < 0:  # rounded up into the next second, or a time before 1970
        return datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    second = int(whole)
    if _second[0][0] != second:
        _second[0] = (second, datetime.fromtimestamp(second, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S"))
    return _second[0][1] + _MILLIS[micro // 1000]


_second: list[tuple[float, str]] = [(math.nan, "")]  # the last second iso_time() wrote, and its date and time
_MILLIS = tuple(f".{n:03d}Z" for n in range(1000))  # each millisecond's tail, written once
