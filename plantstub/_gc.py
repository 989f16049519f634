"""The cyclic garbage collector paused while a big load builds objects that all live on."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the collector (restored as it was): during a load every new object lives on, so each
    collection meanwhile walks them all again, a cost that grows faster than the load (10,000 scenario
    rules: a third of the load; a 20 MB spec: a fifth of its start-up)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
