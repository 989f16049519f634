"""--proxy under the pytest fixture: the marker's `proxy=`, `--plantstub-proxy`, and strict mode failing a test whose
real service broke the contract (a consumer project run by pytester, against tests/upstream_app.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import Upstream

TESTS = '''
import json
import urllib.request

import pytest


def create(url, name):
    request = urllib.request.Request(url + "/plants", data=json.dumps({{"id": 1, "name": name}}).encode(),
                                     headers={{"Authorization": "Bearer t", "Content-Type": "application/json"}})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, json.loads(response.read())


{marker}
def test_fern(plantstub):
    assert create(plantstub.url, "Fern") == (200, {{"name": "Fern"}})
    assert plantstub.calls[0].proxied


{marker}
def test_broken(plantstub):
    assert create(plantstub.url, "Broken")[0] == 200


@pytest.mark.plantstub(strict=False)
{marker}
def test_broken_on_purpose(plantstub):
    assert create(plantstub.url, "Broken")[0] == 200
'''


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with Upstream() as running:
        yield running


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args)


@pytest.mark.parametrize("how", ["marker", "option"])
def test_strict_mode_fails_a_test_whose_real_service_broke_the_contract(pytester, upstream, how):
    marker = f'@pytest.mark.plantstub(proxy="{upstream.url}")' if how == "marker" else ""
    pytester.makepyfile(test_it=TESTS.format(marker=marker))
    result = run(pytester, *([f"--plantstub-proxy={upstream.url}"] if how == "option" else []))
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        f"plantstub: in test_broken, the real service ({upstream.url}) broke the contract on 1 proxied call: "
        "#1 POST /plants -> 200: response.body.name: 42 is not of type 'string'. The service, not the test, "
        "answered so; fix it or its spec, or mark the test @pytest.mark.plantstub(strict=False) if that was the "
        "point.",
    ])


def test_a_bad_proxy_in_the_marker_fails_the_test_with_a_message(pytester):
    pytester.makepyfile(test_it='''
        import pytest

        @pytest.mark.plantstub(proxy="ftp://nowhere")
        def test_it(plantstub):
            pass
    ''')
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*@pytest.mark.plantstub: proxy: 'ftp://nowhere' is not an http:// or https:// URL "
                                 "with a host. It takes scenario=NAME, strict=True|False and proxy=URL."])
