"""Big bodies do not grow the stub without bound: the journal keeps bytes, within --journal-bytes."""

from __future__ import annotations

import json
import sys
import urllib.request

import pytest

from tests.helpers import post_status, raw_call, resident_bytes

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the server's memory from /proc"),
]

MB = 1024 * 1024
BODY = b"[" + b"{}," * (MB // 3) + b"{}]"  # 1 MB of empty objects: about 20 MB once parsed


def rss_mb(pid: int) -> float:
    return resident_bytes(pid) / MB


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


def health(url: str, prefix: str = "") -> dict:
    with urllib.request.urlopen(f"{url}{prefix}/__plantstub/health", timeout=5) as response:
        return json.load(response)


def big_headers(n: int = 120, size: int = 8000) -> dict[str, str]:
    """~1 MB of headers in one request: aiohttp takes at most 8 KiB a header line, so many of them."""
    return {f"X-Fill-{k}": "v" * size for k in range(n)}


def test_calls_with_big_headers_are_counted_in_real_bytes_within_the_budget(serve, tmp_path):
    """Issue 23, D16: 1,500 calls with ~1 MB of headers took 1.4 GB while health said 0.8 MB."""
    limit = 48 * MB
    stub = serve("--port", "0", "--max-bytes", str(limit), "--journal-bytes", str(4 * limit), cwd=tmp_path)
    for _ in range(3):  # warm up: the first calls load code and fill caches
        raw_call(stub.url, "GET", "/plants", headers={"Authorization": "Bearer t"})
    before = rss_mb(stub.proc.pid)
    headers = {"Authorization": "Bearer t", **big_headers()}
    grown = []
    for n in range(1, 81):  # ~80 MB of headers, more than the budget's 48 MiB
        # Each call's own: headers alike call after call are kept once (the budget counts them for each call).
        headers["X-Fill-0"] = f"{n:08d}" + "v" * 7992
        assert raw_call(stub.url, "GET", "/plants", headers=headers)[0] == 405  # answered, and recorded
        if n in (20, 40):
            grown.append(health(stub.url)["journal"]["bytes"])
    figures = health(stub.url)
    journal, memory = figures["journal"], figures["memory"]["session"]
    calls = memory["parts"]["calls"]
    assert grown[0] > 18 * MB and grown[1] > 36 * MB  # ~0.96 MB a call: the headers count, call after call
    assert journal["bytes"] <= calls <= journal["bytes"] + 2 * 64 * 1024  # and at most 128 KiB taken ahead
    assert calls <= memory["held"] <= limit == memory["limit"]
    assert calls > limit - 2 * MB  # the budget is used, not a fraction of it
    assert memory["dropped"]["calls"]["count"] == journal["dropped"] > 30  # the oldest went, and health says so
    assert figures["memory"]["stub"]["parts"]["calls"] == calls
    grown_mb = rss_mb(stub.proc.pid) - before
    assert grown_mb < 1.5 * calls / MB, f"RSS grew {grown_mb:.0f} MB; health says {calls / MB:.0f} MB"
    assert grown_mb > 0.5 * calls / MB  # the figure is about what memory holds, not a bound far above it


def test_a_call_bigger_than_the_budget_is_not_kept_but_counted_and_written(serve, tmp_path):
    """The newest call no longer stays whatever its size: over the budget, only the file gets it."""
    journal_file = tmp_path / "calls.jsonl"
    stub = serve("--port", "0", "--max-bytes", str(MB), "--journal", str(journal_file), "--journal-flush", "call",
                 cwd=tmp_path)
    assert post_status(stub.url, b'{"id": 1, "name": "Fern"}') == 200
    huge = {"Authorization": "Bearer t", "Content-Type": "application/json", **big_headers()}
    status, answer, _ = raw_call(stub.url, "POST", "/plants", b"[" + b"1," * 50_000 + b"1]", huge)
    assert status == 400 and b"body" in answer  # answered (a list is not a plant), and recorded
    figures = health(stub.url)
    journal, dropped = figures["journal"], figures["memory"]["session"]["dropped"]["calls"]
    assert (journal["calls"], journal["recorded"], journal["dropped"], journal["refused"]) == (1, 2, 1, 1)
    assert dropped["count"] == 1 and dropped["bytes"] > MB
    assert figures["memory"]["session"]["held"] < 40_000  # the first call alone (and bytes taken ahead)
    assert [line["seq"] for line in map(json.loads, journal_file.read_text().splitlines())] == [1, 2]


def test_a_sessions_calls_draw_from_its_own_budget_within_the_stubs(serve, tmp_path):
    """Each sidecar session kept 10,000 calls of any size too: now a sixteenth of --max-bytes at most."""
    stub = serve("--port", "0", "--max-bytes", str(16 * MB), cwd=tmp_path)
    headers = {"Authorization": "Bearer t", "X-Plantstub-Session": "ci-1", **big_headers(25)}  # ~200 KB
    for _ in range(12):
        assert raw_call(stub.url, "GET", "/plants", headers=headers)[0] == 405
    memory = health(stub.url, "/__session/ci-1")["memory"]
    session, whole = memory["session"], memory["stub"]
    assert session["limit"] == MB and 4 * 200_000 < session["parts"]["calls"] <= MB
    assert session["dropped"]["calls"]["count"] >= 7
    assert whole["limit"] == 16 * MB and whole["parts"]["calls"] >= session["parts"]["calls"]
    assert health(stub.url)["memory"]["session"]["parts"].get("calls", 0) < 10_000  # the default session's own


def test_another_sessions_oldest_calls_go_before_a_session_is_refused(serve, tmp_path):
    """The default session's calls filled the stub's budget: a new session's create and calls were refused ("store:
    full ... all sessions together") while those old calls, which may go, stayed. They go first now, counted."""
    stub = serve("--port", "0", "--spec", "plant-store-full", "--stateful", "--max-bytes", str(8 * MB), cwd=tmp_path)
    body = json.dumps({"id": 1, "name": "n" * 100_000}).encode()
    for _ in range(120):  # 12 MB of calls: the default session holds all of the stub's 8 MiB but a call's room
        raw_call(stub.url, "POST", "/plants", body, {"Authorization": "Bearer t", "Content-Type": "application/json"})
    assert health(stub.url)["memory"]["stub"]["held"] > 8 * MB - 150_000
    big = json.dumps({"id": 2, "name": "n" * 120_000}).encode()  # its record and call (sent, echoed): 360 KB of 512 KiB
    status, answer, _ = raw_call(stub.url, "POST", "/__session/new/plants", big,
                                 {"Authorization": "Bearer t", "Content-Type": "application/json"})
    assert status == 200, answer
    memory = health(stub.url, "/__session/new")["memory"]
    assert memory["session"]["parts"]["records"] > 120_000 and memory["session"]["parts"]["calls"] > 240_000
    assert memory["session"]["dropped"] == {}
    assert memory["stub"]["held"] <= 8 * MB
    assert health(stub.url)["memory"]["session"]["dropped"]["calls"]["count"] > 120 - 80  # the default's, counted
