"""The one reading of a callgrind count for the benchmarks: the `summary:` line of the part a dump wrote.

Not `totals:`. After a zero (`callgrind_control -z`) or an earlier dump, a part's `totals:` line also counts cost of
calls still running then (the event loop's frames never return), and by how much depends on the state: 600 valid
calls on the default spec read 238.1k a call by `totals:` and 224.7k by `summary:` with the journal fresh, 296.9k and
228.4k with it full. The difference of two whole runs (600 and 1800 calls, nothing zeroed: 225.4k with the journal
fresh) agrees with `summary:`.
"""

from __future__ import annotations

from pathlib import Path


def counted(dump: Path) -> int:
    """The instructions of one callgrind part (a file callgrind wrote): its `summary:` line."""
    for line in dump.read_text(errors="replace").splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    raise ValueError(f"{dump}: no summary: line (not a callgrind file?)")


def first_dump(out: Path) -> int:
    """The instructions of the part the first `callgrind_control -d` wrote for `--callgrind-out-file=OUT`
    (`OUT.1`; `OUT` itself is what ran after it, to the end)."""
    return counted(out.with_name(out.name + ".1"))
