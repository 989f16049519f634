"""A big document served by `plantstub serve`: it starts in seconds, within bounded memory, answers the first
call of any operation at once, SIGTERM stops it while it is still loading, and a second start reads it from the
spec cache.

The document is made up in code (tests/synthetic.py, shaped like Microsoft Graph's): 1,000 entity schemas
extending and referring to each other and 3,000 operations, 2.7 MB. Before one validator was compiled per
spec, this document took 250 s to start and 11 GB of memory.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.helpers import AUTH, HANG, ServeProcess, cpu_seconds, no_hang
from tests.synthetic import big_document, write_big_document


def _peak_memory_mib(pid: int) -> float | None:
    """The process's peak resident memory (VmHWM), where /proc tells it."""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        return None
    line = next(line for line in status.read_text().splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def _call(url: str, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
    data = None if body is None else json.dumps(body).encode()
    headers = {**AUTH, **({"Content-Type": "application/json"} if data else {})}
    request = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=HANG) as response:
        return response.status, response.read()


def test_big_document_starts_and_answers_the_first_call_of_each_operation_at_once(tmp_path):
    spec = write_big_document(tmp_path / "graph-like.json", schemas=1000, paths=1000)
    with no_hang("the start"):  # 250 s before one validator was compiled per spec
        stub = ServeProcess("--spec", str(spec), "--port", "0", cwd=tmp_path)
    try:
        peak = _peak_memory_mib(stub.proc.pid)
        assert peak is None or peak < 1024, f"peak memory {peak:.0f} MiB at start"
        start = cpu_seconds(stub.proc.pid)  # load, bundle, compile: seconds of CPU (cold or from the spec cache)
        for k in (0, 333, 999):  # the first call of each: nothing is compiled on the way
            for method, path, body in (("GET", f"/group{k}/items", None), ("GET", f"/group{k}/items/item-{k}", None),
                                       ("PATCH", f"/group{k}/items/item-{k}", {})):
                before = cpu_seconds(stub.proc.pid)
                status, answer = _call(stub.url, method, path, body)
                took = cpu_seconds(stub.proc.pid) - before  # CPU: a busy machine makes it late, not larger
                assert (status, took < start / 10) == ((204, True) if method == "PATCH" else (200, True)), (
                    path, f"{took:.2f} s of CPU, the start {start:.2f} s")
                assert answer == b"" if method == "PATCH" else isinstance(json.loads(answer), dict)
        # A body breaking its schema is refused with the place named, as for any spec.
        request = urllib.request.Request(stub.url + "/group1/items/x", data=b'"not an entity"', method="PATCH",
                                         headers={**AUTH, "Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=60)
        assert refused.value.code == 400
        said = "body: 'not an entity' is not of type 'object'"
        # in the 4XX error shape the document declares (OData's {"error": {"code", "message"}}), our words in it
        assert refused.value.headers["X-Plantstub-Error"] == said
        assert json.loads(refused.value.read())["error"]["message"] == said
    finally:
        assert stub.stop() == 0


def test_sigterm_while_the_spec_loads_stops_the_stub_at_once(tmp_path):
    """As PID 1 in a container, a process with no SIGTERM handler ignores SIGTERM: start-up installs one."""
    # JSON text in a .yaml file, 5.4 MB: read by the YAML reader, then bundled and compiled, it takes seconds.
    spec = write_big_document(tmp_path / "graph-like.yaml", schemas=2000, paths=2000)
    proc = subprocess.Popen([sys.executable, "-m", "plantstub", "serve", "--spec", str(spec), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert proc.stderr is not None and proc.stdout is not None
        assert proc.stderr.readline() == f"plantstub: loading {spec} ({spec.stat().st_size / 2**20:.1f} MiB)\n"
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=HANG) == 143  # not ignored, as PID 1 would ignore it without a handler
        assert proc.stdout.read() == ""  # it never listened
        assert proc.stderr.read() == "plantstub: stopped by SIGTERM before listening; exit status 143\n"
    finally:
        _reap(proc)


def _block_yaml(path: Path, schemas: int, paths: int) -> Path:
    """tests/synthetic.py's document as block YAML with no anchors, as OpenAPI generators write it."""

    class NoAliases(yaml.CSafeDumper):
        def ignore_aliases(self, data: object) -> bool:
            return True

    path.write_text(yaml.dump(big_document(schemas, paths), Dumper=NoAliases, sort_keys=False, default_flow_style=False),
                    encoding="utf-8")
    return path


def _refusal(url: str, path: str, body: object) -> tuple[int, str]:
    """The status and X-Plantstub-Error of a PATCH the stub refuses."""
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="PATCH",
                                     headers={**AUTH, "Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=HANG)
    with refused.value:
        return refused.value.code, refused.value.headers["X-Plantstub-Error"]


def test_a_big_block_yaml_document_is_served_the_same_from_the_spec_cache(tmp_path):
    """Cold, then from the entry the first start wrote (its property map with it), then from a damaged entry, which
    is read as a miss and written again: the same answers and refusals each time."""
    spec = _block_yaml(tmp_path / "graph-like.yaml", 1000, 1000)  # 3.4 MB
    cache = tmp_path / "cache"
    answers = []
    written = b""
    for start in ("cold", "warm", "damaged"):
        stub = ServeProcess("--spec", str(spec), "--port", "0", "--spec-cache", str(cache), cwd=tmp_path)
        try:
            (entry,) = cache.glob("spec-*.json")
            if start == "cold":
                written = entry.read_bytes()
                os.utime(entry, (0, 0))  # a hit marks the entry used
            elif start == "warm":
                assert entry.stat().st_mtime > 0
                entry.write_bytes(written[: len(written) // 2])  # for the next start: a truncated entry
            else:
                assert entry.read_bytes() == written  # read as a miss, and written again whole
            for k in (0, 500, 999):
                for method, path, body in (("GET", f"/group{k}/items", None), ("GET", f"/group{k}/items/item-{k}", None),
                                           ("PATCH", f"/group{k}/items/item-{k}", {})):
                    status, answer = _call(stub.url, method, path, body)
                    answers.append((start, method, path, status, answer if method == "PATCH" else type(json.loads(answer))))
                answers.append((start, "PATCH", "refused", *_refusal(stub.url, f"/group{k}/items/x", "not an entity")))
        finally:
            assert stub.stop() == 0
    cold = [a[1:] for a in answers if a[0] == "cold"]
    assert cold == [a[1:] for a in answers if a[0] == "warm"] == [a[1:] for a in answers if a[0] == "damaged"]
    assert [status for _, _, status, _ in cold] == [200, 200, 204, 400] * 3
    assert cold[3][3] == "body: 'not an entity' is not of type 'object'"


def test_spec_cache_off_keeps_nothing(tmp_path):
    spec = write_big_document(tmp_path / "graph-like.json", schemas=200, paths=200)
    spec.write_text(spec.read_text() + " " * 2**20)  # past the size worth caching
    stub = ServeProcess("--spec", str(spec), "--port", "0", "--spec-cache", "off", cwd=tmp_path,
                        env={"XDG_CACHE_HOME": str(tmp_path / "xdg"), "PLANTSTUB_SPEC_CACHE": ""})
    try:
        status, _ = _call(stub.url, "GET", "/group1/items")
        assert status == 200
    finally:
        assert stub.stop() == 0
    assert not (tmp_path / "xdg").exists()


def _reap(proc: subprocess.Popen[str]) -> None:
    """End a `serve` this test started (if it still runs) and close its pipes."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for stream in (proc.stdout, proc.stderr):
        if stream:
            stream.close()
