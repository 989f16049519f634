"""Big bodies do not grow the stub without bound: the journal keeps bytes, within --journal-bytes."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import post_status

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the server's memory from /proc"),
]

MB = 1024 * 1024
BODY = b"[" + b"{}," * (MB // 3) + b"{}]"  # 1 MB of empty objects: about 20 MB once parsed


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS line")


def test_forty_big_bodies_stay_within_the_byte_bound(serve, tmp_path):
    stub = serve("--port", "0", "--max-body", str(2 * MB), "--journal-bytes", str(16 * MB), cwd=tmp_path)
    for _ in range(40):
        assert post_status(stub.url, BODY) == 400  # a list is not a NewPlant: refused, and recorded
    # Parsed bodies kept for 40 calls took about 950 MB here; bytes within the bound take a few dozen.
    assert rss_mb(stub.proc.pid) < 200
    with urllib.request.urlopen(stub.url + "/__plantstub/health", timeout=5) as response:
        journal = json.load(response)["journal"]
    assert journal["recorded"] == 40 and journal["bytes"] <= 16 * MB
    assert journal["calls"] + journal["dropped"] == 40 and journal["dropped"] >= 24
    with urllib.request.urlopen(stub.url + "/__plantstub/calls", timeout=30) as response:
        assert response.headers["Transfer-Encoding"] == "chunked"  # streamed, built off the event loop
        assert response.headers["X-Plantstub-Dropped"] == str(journal["dropped"])
        calls = json.load(response)
    assert len(calls) == journal["calls"]
    assert calls[-1]["seq"] == 40 and calls[-1]["body"] == [{}] * (MB // 3 + 1)
