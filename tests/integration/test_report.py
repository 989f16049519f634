"""`pytest --plantstub-report FILE.html` (ini `plantstub_report`): an inner run writes it, plain, under xdist and
against a sidecar; its tests, calls, problems, order, totals and coverage are read back, and it links to nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import Upstream

SUITE = '''
import json
import urllib.error
import urllib.request

import pytest


def post(stub, body):
    request = urllib.request.Request(stub.url.rstrip("/") + "/plants", data=json.dumps(body).encode(), method="POST",
                                     headers={"Authorization": "Bearer t", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_good(plantstub):
    assert post(plantstub, {"id": 1, "name": "Fern"}) == 200


def test_broken_request(plantstub):
    assert post(plantstub, {"id": "x", "name": "Fern"}) == 400


@pytest.mark.plantstub(strict=False)
def test_broken_on_purpose(plantstub):
    assert post(plantstub, {"name": "Ivy"}) == 400


def test_fails(plantstub):
    post(plantstub, {"id": 2, "name": "Moss"})
    assert False, "deliberately wrong"


def test_no_stub():
    pass
'''


@pytest.fixture(scope="module")
def upstream():
    with Upstream() as running:
        yield running


TAG_LINK = r"<[a-zA-Z][^>]*\s(src|href)="  # an attribute of a tag, not text that reads `href=`
SUMMARY = re.compile(r"<details class='test'( open)? data-outcome='(\w+)' data-problems='(\d+)'><summary>"
                     r"<span[^>]*>\w+</span> · ([^ ]+) · ")


def sections(html: str) -> list[tuple[str, str, int, bool]]:
    """Each test's (name, outcome, contract problems, opened), in the file's order."""
    return [(m[4].split("::")[1], m[2], int(m[3]), bool(m[1])) for m in SUMMARY.finditer(html)]


def section(html: str, name: str) -> str:
    """The part of the file about test `name`: up to the next test's, or the end."""
    start = html.index(f"::{name} · ")
    end = html.find("<details class='test'", start)
    return html[start:end if end >= 0 else None]


@pytest.mark.parametrize("how", ["plain", "xdist", "sidecar"])
def test_report_of_a_run(pytester, serve, tmp_path, how):
    pytester.makepyfile(test_suite=SUITE)
    args = ["-p", "no:cacheprovider", "--plantstub-report", "out/report.html"]
    if how != "plain":
        args += ["-n", "2"]
    own = None  # the stub's own address: pytest's failure text may show it (the fixture's repr on a sidecar)
    if how == "sidecar":
        own = serve("--port", "0", cwd=tmp_path).url
        args.append(f"--plantstub-url={own}")
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=3, failed=2)
    path = pytester.path / "out" / "report.html"
    result.stdout.fnmatch_lines([f"plantstub: report written to {path}"])
    html = path.read_text(encoding="utf-8")

    found = sections(html)
    problems_first = {("test_broken_request", "failed", 1, True), ("test_broken_on_purpose", "passed", 1, False)}
    assert set(found[:2]) == problems_first  # contract problems first, then failures, then the rest
    assert found[2] == ("test_fails", "failed", 0, True)  # failing tests open
    assert set(found[3:]) == {("test_good", "passed", 0, False), ("test_no_stub", "passed", 0, False)}
    if how == "plain":  # the run's order within each group
        assert [name for name, *_ in found] == ["test_broken_request", "test_broken_on_purpose", "test_fails",
                                                "test_good", "test_no_stub"]

    broken = section(html, "test_broken_request")
    assert "<li class='problem' data-by='invalid'>body.id: &#x27;x&#x27; is not of type &#x27;integer&#x27;</li>" in broken
    assert "plantstub: test_broken_request sent 1 request that breaks the contract" in broken  # its failure
    assert "<td>POST</td><td>/plants</td><td>400</td><td><span class='invalid'>breaks the contract</span>" in broken
    on_purpose = section(html, "test_broken_on_purpose")
    assert "<li class='problem' data-by='invalid'>body: &#x27;id&#x27; is a required property</li>" in on_purpose
    good = section(html, "test_good")
    assert "<td>POST</td><td>/plants</td><td>200</td><td>ok</td><td>default</td>" in good
    assert "&quot;name&quot;: &quot;Fern&quot;" in good  # the request's body, pretty
    assert "AssertionError: deliberately wrong" in section(html, "test_fails")
    assert "· test_suite.py::test_no_stub · (no stub)" in html

    assert "<td>tests</td><td id='total-0'>5 (2 failed, 3 passed)</td>" in html
    assert "<td id='total-1'>2</td>" in html  # tests with contract problems
    assert "<td id='total-2'>4</td>" in html and "<td id='total-3'>2</td>" in html  # calls; breaking the contract
    assert "<td id='total-4'>0</td>" in html and "<td id='total-5'>0</td>" in html  # by the stub; the real service
    assert "title='POST /plants 200: reached 2 times'>2</td>" in html  # the coverage grid
    assert "title='POST /plants 400: reached 2 times'>2</td>" in html
    assert "2 of 2 declared responses reached (100.0%)" in html
    # Self-contained: nothing loaded, nothing linked, no URL but the stub's own address in a failure's text.
    text = html.replace(own, "") if own else html
    assert "http://" not in text and "https://" not in text
    assert not re.search(TAG_LINK + r"|url\(|@import|<script|<link", html)


def test_report_path_from_the_ini_file(pytester):
    pytester.makeini("[pytest]\nplantstub_report = reports/run.html\n")
    pytester.makepyfile(test_suite=SUITE)
    pytester.mkdir("elsewhere")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "good", "--rootdir", str(pytester.path),
                                           str(pytester.path))
    result.assert_outcomes(passed=1, deselected=4)
    html = (pytester.path / "reports" / "run.html").read_text(encoding="utf-8")
    assert [name for name, *_ in sections(html)] == ["test_good"]


def test_a_url_a_call_carried_is_text_not_a_link(pytester):
    pytester.makepyfile(test_suite=SUITE.replace('"name": "Fern"', '"name": "<a href=\\"https://x.example/\\">x</a>"'))
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "good", "--plantstub-report", "r.html")
    html = Path(pytester.path / "r.html").read_text(encoding="utf-8")
    assert "&lt;a href=\\&quot;https://x.example/\\&quot;&gt;x&lt;/a&gt;" in html  # escaped, inside a <pre>
    assert not re.search(TAG_LINK, html)


def test_no_report_option_no_report_plugin(pytester):
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "good")
    result.assert_outcomes(passed=1, deselected=4)
    assert "report written" not in result.stdout.str()
    assert not list(pytester.path.rglob("*.html"))


def test_a_report_that_cannot_be_written_fails_the_run(pytester):
    pytester.makepyfile(test_suite=SUITE)
    (pytester.path / "taken").write_text("a file, not a folder")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "good", "--plantstub-report",
                                           "taken/report.html")
    assert result.ret == 1
    result.stdout.fnmatch_lines([f"plantstub: FAIL: the report could not be written to {pytester.path}/taken/report.html: *"])


PROXIED = '''
import json
import urllib.request


def post(stub, name):
    request = urllib.request.Request(stub.url.rstrip("/") + "/plants", method="POST",
                                     data=json.dumps({"id": 1, "name": name}).encode(),
                                     headers={"Authorization": "Bearer t", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.status


def test_service_breaks_it(plantstub):
    assert post(plantstub, "Broken") == 200


def test_service_keeps_it(plantstub):
    assert post(plantstub, "Fern") == 200
'''


@pytest.mark.parametrize("how", ["option", "marker"])
def test_a_proxied_call_the_real_service_broke_is_counted_and_listed(pytester, upstream, how):
    """The bug found as a new user: strict mode failed the test for the real service's answer, and the report said
    "ok", "answered by default" and 0 contract problems. Now it counts the call, lists its problem under the test."""
    suite = PROXIED
    args = ["-p", "no:cacheprovider", "--plantstub-report", "report.html"]
    if how == "option":
        args.append(f"--plantstub-proxy={upstream.url}")
    else:
        suite = suite.replace("def test_", f"@pytest.mark.plantstub(proxy={upstream.url!r})\ndef test_")
        suite = "import pytest\n" + suite
    pytester.makepyfile(test_suite=suite)
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=1, failed=1)  # strict mode: the real service broke the contract
    result.stdout.fnmatch_lines(["*the real service (*) broke the contract on 1 proxied call*"])
    html = (pytester.path / "report.html").read_text(encoding="utf-8")

    assert sections(html) == [("test_service_breaks_it", "failed", 1, True),  # contract problems first
                              ("test_service_keeps_it", "passed", 0, False)]
    broken = section(html, "test_service_breaks_it")
    service = f"real service {upstream.url}/plants"
    assert ("<td>POST</td><td>/plants</td><td>200</td><td><span class='upstream'>the real service broke it</span>"
            f"</td><td>{service}</td>") in broken
    assert ("<li class='problem' data-by='upstream'>the real service: response.body.name: 42 is not of type "
            "&#x27;string&#x27;</li>") in broken
    kept = section(html, "test_service_keeps_it")
    assert f"<td>POST</td><td>/plants</td><td>200</td><td>ok</td><td>{service}</td>" in kept
    assert "<td id='total-1'>1</td>" in html  # tests with contract problems
    assert "<td id='total-2'>2</td>" in html and "<td id='total-3'>0</td>" in html  # calls; the requests broke none
    assert "<td id='total-4'>0</td>" in html  # the stub broke none
    assert "<td>calls the real service answered off contract</td><td id='total-5'>1</td>" in html
