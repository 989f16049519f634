"""A real browser for the live page's tests: Debian's chromium driven by its chromedriver through selenium, headless.

A missing browser fails the test that wants one (it never skips): `apt-get install -y chromium chromium-driver`,
as .ci/run does. chromedriver is a process: a test module using this one is marked slow by hand."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import HANG

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def start_chromium() -> Any:
    """A headless chromium, driven by selenium; fails the test when the browser or its driver is missing."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not Path(path).is_file()]
    if missing:
        pytest.fail(f"the live page's tests need a real browser: {', '.join(missing)} missing "
                    "(apt-get install -y chromium chromium-driver)", pytrace=False)
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,1000", "--no-first-run", "--disable-extensions"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def until(condition: Callable[[], Any], seconds: float = HANG, what: str = "the page") -> Any:
    """`condition()`'s first true value, looked at every 50 ms; fails after `seconds` (a hang), saying what it
    waited for."""
    deadline = time.monotonic() + seconds
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = condition()
        except Exception as exc:  # a row replaced while read (a stale element): look again
            last = exc
        else:
            if last:
                return last
        time.sleep(0.05)
    raise AssertionError(f"timed out after {seconds:g} s waiting for {what}; last seen: {last!r}")
