"""The live page GET /__plantstub/ in a real browser (chromium, headless): calls appear as they arrive, a click
shows the contract problem, filters, the token prompt, a session's own page, coverage and the scenario switcher,
10,000 calls in the journal, and a proxied call whose real service broke the contract shown red with its problem."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from plantstub import Stub
from tests.browser import start_chromium, until
from tests.helpers import JSON_AUTH, Upstream, address, call, raw_call

pytestmark = pytest.mark.slow  # a browser and its driver are processes

NEW_PLANT = {"id": 1, "name": "Fern"}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = start_chromium()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def stub() -> Iterator[Stub]:
    with Stub() as running:
        yield running


def rows(driver: Any) -> list[list[str]]:
    """The table's rows as their cells' texts."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#calls tbody tr'))"
        ".map(tr => Array.from(tr.cells).map(td => td.textContent))")


def open_page(driver: Any, url: str) -> None:
    driver.get(url)
    until(lambda: driver.find_element("id", "status").text == "live", what="the page to go live")


def test_page_shows_calls_as_they_arrive(browser: Any, stub: Stub) -> None:
    base = stub.url.rstrip("/")
    open_page(browser, base + "/__plantstub/")
    assert rows(browser) == []
    assert call(base, "POST", "/plants", NEW_PLANT)[0] == 200  # plain HTTP, after the page loaded
    seen = until(lambda: rows(browser), what="the call's row")
    assert seen[0][0] == "1" and seen[0][2:] == ["POST", "/plants", "200", "ok", "default"]
    assert call(base, "POST", "/plants", {"id": "x", "name": "Fern"})[0] == 400
    seen = until(lambda: len(rows(browser)) == 2 and rows(browser), what="the second row")
    assert seen[0][0] == "2" and seen[0][4:] == ["400", "invalid (1)", "check"]  # newest first


def test_a_proxied_call_the_real_service_answered_off_contract_is_red_with_its_problem(browser: Any) -> None:
    with Upstream() as upstream, Stub(proxy=upstream.url) as stub:
        base = stub.url.rstrip("/")
        assert raw_call(base, "POST", "/plants", json.dumps({"id": 1, "name": "Broken"}).encode(), JSON_AUTH)[0] == 200
        assert raw_call(base, "POST", "/plants", json.dumps(NEW_PLANT).encode(), JSON_AUTH)[0] == 200
        open_page(browser, base + "/__plantstub/")
        seen = until(lambda: len(rows(browser)) == 2 and rows(browser), what="the two proxied calls")
        service = f"real service {upstream.url}/plants"
        assert seen[1][2:] == ["POST", "/plants", "200", "real service broke it (1)", service]
        assert seen[0][2:] == ["POST", "/plants", "200", "ok", service]  # the one it answered as promised
        verdict = browser.find_elements("css selector", "#calls tbody tr")[1].find_elements("css selector", "td")[5]
        assert verdict.get_attribute("class") == "v-upstream"
        assert verdict.value_of_css_property("color") in ("rgba(176, 0, 32, 1)", "rgb(176, 0, 32)")  # red
        browser.find_elements("css selector", "#calls tbody tr")[1].click()
        problems = until(lambda: browser.find_elements("css selector", "#problems li"), what="the problems")
        assert [p.text for p in problems] == ["response.body.name: 42 is not of type 'string'"]
        heading = browser.find_element("css selector", "#problems h2")
        assert (heading.text, heading.get_attribute("data-by")) == ("The real service's answer broke the contract",
                                                                    "upstream")
        detail = browser.find_element("id", "detail").text
        assert browser.find_element("id", "answered-by").text == "Answered by: " + service
        assert "No contract problem" not in detail and '"name": 42' in detail  # the answer as the service sent it
        browser.find_elements("css selector", "#calls tbody tr")[0].click()  # the good one: no problem
        until(lambda: "No contract problem" in browser.find_element("id", "detail").text, what="the good call")
        browser.execute_script("const s = document.getElementById('f-verdict'); s.value = 'upstream';"
                               "s.dispatchEvent(new Event('input'))")
        until(lambda: [r[0] for r in rows(browser)] == ["1"], what="the filter on the real service's breaks")


def test_click_shows_the_request_answer_and_problem(browser: Any, stub: Stub) -> None:
    base = stub.url.rstrip("/")
    call(base, "POST", "/plants", {"id": "x", "name": "Fern"}, {"X-Trace": "abc"})
    open_page(browser, base + "/__plantstub/")
    until(lambda: rows(browser), what="the row")
    browser.find_element("css selector", "#calls tbody tr").click()
    problems = until(lambda: browser.find_elements("css selector", "#problems li"), what="the problems")
    assert [p.text for p in problems] == ["body.id: 'x' is not of type 'integer'"]
    detail = browser.find_element("id", "detail").text
    assert "X-Trace: abc" in detail  # the request's headers
    assert '"name": "Fern"' in detail  # its body, pretty
    assert "400" in detail and '"error": 400' in detail  # the answer and its body


def test_filters_by_path_status_and_verdict(browser: Any, stub: Stub) -> None:
    base = stub.url.rstrip("/")
    call(base, "POST", "/plants", NEW_PLANT)
    call(base, "GET", "/nowhere")
    call(base, "POST", "/plants", {"id": "x", "name": "Fern"})
    open_page(browser, base + "/__plantstub/")
    until(lambda: len(rows(browser)) == 3, what="three rows")

    def only(field: str, value: str) -> list[list[str]]:
        for name in ("f-path", "f-status"):
            browser.find_element("id", name).clear()
        browser.execute_script("document.getElementById('f-verdict').value = ''")
        if field == "f-verdict":
            browser.execute_script(f"const s = document.getElementById('f-verdict'); s.value = {value!r};"
                                   "s.dispatchEvent(new Event('input'))")
        else:
            browser.find_element("id", field).send_keys(value)
        time.sleep(0.4)  # the page waits for typing to stop (250 ms)
        return until(lambda: [r[0] for r in rows(browser)] if rows(browser) and len(rows(browser)) < 3 else None,
                     what=f"rows filtered by {field}={value}")

    assert only("f-status", "404") == ["2"]
    assert only("f-status", "2xx") == ["1"]
    assert only("f-path", "nowh") == ["2"]
    assert only("f-verdict", "ok") == ["1"]
    # a new call that the filter keeps out does not show
    call(base, "GET", "/elsewhere")
    call(base, "POST", "/plants", {"id": 7, "name": "Ivy"})
    until(lambda: [r[0] for r in rows(browser)] == ["5", "1"], what="the new ok call, and only it")


def test_token_is_asked_once_and_sent(browser: Any) -> None:
    with Stub(admin_token="s3cret") as stub:
        base = stub.url.rstrip("/")
        call(base, "POST", "/plants", NEW_PLANT)
        browser.get(base + "/__plantstub/")
        until(lambda: browser.find_element("id", "token-form").is_displayed(), what="the token prompt")
        assert rows(browser) == []
        for wrong in ("wrong", "not a token é"):  # refused by the stub; one no header can carry
            browser.find_element("id", "token").clear()
            browser.find_element("id", "token").send_keys(wrong)
            browser.find_element("id", "token-send").click()
            until(lambda: browser.find_element("id", "token-form").is_displayed(), what="the prompt again")
            assert browser.find_element("id", "token-note").text == "That token was refused."
        browser.find_element("id", "token").clear()
        browser.find_element("id", "token").send_keys("s3cret")
        browser.find_element("id", "token-send").click()
        until(lambda: rows(browser), what="the calls, with the token")
        browser.refresh()  # the tab keeps the token: asked once
        open_page(browser, base + "/__plantstub/")
        assert not browser.find_element("id", "token-form").is_displayed()
        until(lambda: rows(browser), what="the calls after a reload")
        browser.execute_script("sessionStorage.clear()")


def test_session_page_shows_only_its_calls(browser: Any, stub: Stub) -> None:
    base = stub.url.rstrip("/")
    assert call(base, "POST", "/__plantstub/sessions", {"id": "alpha"})[0] == 201
    call(base, "GET", "/in-default")
    call(base, "GET", "/__session/alpha/in-alpha")
    open_page(browser, base + "/__session/alpha/__plantstub/")
    seen = until(lambda: rows(browser), what="the session's row")
    assert [r[3] for r in seen] == ["/in-alpha"]
    assert browser.execute_script("return document.getElementById('session').value") == "alpha"
    call(base, "GET", "/in-default-again")
    call(base, "GET", "/__session/alpha/in-alpha-again")
    seen = until(lambda: len(rows(browser)) == 2 and rows(browser), what="the session's second row")
    assert [r[3] for r in seen] == ["/in-alpha-again", "/in-alpha"]


def test_coverage_grid_and_scenario_switcher(browser: Any, stub: Stub) -> None:
    base = stub.url.rstrip("/")
    call(base, "POST", "/plants", NEW_PLANT)
    open_page(browser, base + "/__plantstub/")
    hit = until(lambda: browser.find_elements("css selector", "#coverage td.hit"), what="the coverage grid")
    assert [td.get_attribute("title") for td in hit] == ["POST /plants 200: reached 1 times"]
    missed = browser.find_elements("css selector", "#coverage td.miss")
    assert "POST /plants 400: never reached" in [td.get_attribute("title") for td in missed]
    until(lambda: "store-closed" in browser.execute_script(
        "return Array.from(document.getElementById('scenario').options).map(o => o.value)"), what="the scenarios")
    browser.execute_script("const s = document.getElementById('scenario'); s.value = 'store-closed';"
                           "s.dispatchEvent(new Event('change'))")
    until(lambda: call(base, "GET", "/__plantstub/scenarios")[1]["active"] == "store-closed",  # type: ignore[index]
          what="the scenario switched")


def post_many(base: str, n: int) -> None:
    """`n` valid POST /plants on one kept-alive connection."""
    host, port = address(base)
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    body = json.dumps(NEW_PLANT)
    headers = {"Authorization": "Bearer t", "Content-Type": "application/json"}
    for _ in range(n):
        connection.request("POST", "/plants", body, headers)
        connection.getresponse().read()
    connection.close()


def test_ten_thousand_calls_show_a_window_that_follows_and_filters(browser: Any) -> None:
    # What keeps the page fast is that it holds a window of rows, not every call: the time it takes to load is a
    # benchmark's to measure, not this test's.
    with Stub() as stub:
        base = stub.url.rstrip("/")
        post_many(base, 10_000)
        open_page(browser, base + "/__plantstub/")
        until(lambda: rows(browser), what="the rows")
        shown = rows(browser)
        assert len(shown) <= 500 and shown[0][0] == "10000"
        assert browser.find_element("id", "counts").text == "10000 recorded, 10000 kept"
        # the stub answers while the page is open and following
        assert call(base, "POST", "/plants", NEW_PLANT)[0] == 200
        until(lambda: rows(browser)[0][0] == "10001", what="the 10,001st call")
        # the page answers: a script runs, a filter applies
        browser.find_element("id", "f-status").send_keys("404")
        until(lambda: rows(browser) == [], what="the filter")


def test_a_burst_shows_the_newest_calls_without_a_gap(browser: Any, stub: Stub) -> None:
    base = stub.url.rstrip("/")
    call(base, "POST", "/plants", NEW_PLANT)
    open_page(browser, base + "/__plantstub/")
    until(lambda: rows(browser), what="the first row")
    post_many(base, 700)  # more than one answer holds (200): the page shows the newest window whole
    until(lambda: rows(browser)[0][0] == "701", what="the burst's last call")
    seqs = [int(row[0]) for row in rows(browser)]
    assert seqs == list(range(701, 701 - len(seqs), -1)) and len(seqs) >= 200
    assert browser.find_element("id", "older").is_displayed()
    browser.find_element("id", "older").click()  # the next window back, still without a gap
    until(lambda: int(rows(browser)[-1][0]) < seqs[-1], what="older rows")
    more = [int(row[0]) for row in rows(browser)]
    assert more == list(range(more[0], more[0] - len(more), -1)) and len(more) <= 500
    while browser.find_element("id", "older").is_displayed():  # back to the first call, a window at a time
        oldest = int(rows(browser)[-1][0])
        browser.find_element("id", "older").click()
        until(lambda: int(rows(browser)[-1][0]) < oldest, what="an older window")  # noqa: B023
        assert len(rows(browser)) <= 500
    assert rows(browser)[-1][0] == "1" and browser.find_element("id", "status").text == "paused: showing older calls"
    seqs = [int(row[0]) for row in rows(browser)]
    assert seqs == list(range(seqs[0], 0, -1))
    call(base, "GET", "/while-paused")  # not shown until the newest calls are asked for again
    browser.find_element("id", "newest").click()
    until(lambda: rows(browser)[0][3] == "/while-paused", what="the newest calls, live again")
    assert browser.find_element("id", "status").text == "live"
