"""Shared test helpers: request builders and a running `plantstub serve` subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from multidict import CIMultiDict

from plantstub.incoming import IncomingRequest

pytest_plugins = ["pytester"]

if os.environ.get("PLANTSTUB_EXPECT_INSTALLED") == "1":  # set by tests/lanes.py: test the installed wheel only
    import plantstub

    _repo = Path(__file__).resolve().parents[1]
    if Path(plantstub.__file__).resolve().is_relative_to(_repo):
        raise RuntimeError(f"PLANTSTUB_EXPECT_INSTALLED=1 but plantstub was imported from the source tree: {plantstub.__file__}")
    if (Path.cwd() / "plantstub").is_dir():
        raise RuntimeError(f"PLANTSTUB_EXPECT_INSTALLED=1 but `python -m plantstub` run from {Path.cwd()} would import its plantstub/")

DATA = Path(__file__).parent / "data"
AUTH = {"Authorization": "Bearer t"}


def make_request(method: str = "POST", path: str = "/plants", *, headers=None, query=None, raw: bytes = b"") -> IncomingRequest:
    """An IncomingRequest as app.py builds it (case-insensitive headers, query values as lists)."""
    return IncomingRequest(method, path, query or {}, CIMultiDict(headers or {}), raw)


class ServeProcess:
    """`plantstub serve` in a subprocess on a free port; `url` parsed from its listening line."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "plantstub", "serve", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, **(env or {})}, cwd=cwd,
        )
        self.started = time.monotonic()
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("plantstub listening on "):
            self.stop()
            raise AssertionError(f"no listening line; got {line!r}; stderr: {self.stderr}")
        self.listening_line = line.rstrip("\n")
        self.url = self.listening_line.removeprefix("plantstub listening on ")
        self.stderr = ""

    def stop(self, sig: int | None = None, timeout: float = 5.0) -> int:
        if self.proc.stdout is None or self.proc.stdout.closed:
            return self.proc.returncode
        if self.proc.poll() is None:
            if sig is None:
                self.proc.terminate()
            else:
                self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stderr = self.proc.stderr.read() if self.proc.stderr else ""
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()
        return self.proc.returncode


@pytest.fixture
def serve() -> Iterator:
    """Start `plantstub serve ARGS...` processes; all are stopped after the test."""
    started: list[ServeProcess] = []

    def start(*args: str, **kwargs) -> ServeProcess:
        process = ServeProcess(*args, **kwargs)
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()
