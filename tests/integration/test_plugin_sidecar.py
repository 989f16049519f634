"""The fixture against a `plantstub serve` sidecar under pytest-xdist (issue 24): a folder's settings in either order,
contention for the session cap; and per-test call numbering in process, in the journal file and health."""

from __future__ import annotations

import json
import urllib.request
from types import SimpleNamespace

import pytest

from plantstub.client.admin import AtCapacity
from plantstub.plugin.sidecar import open_session

CONFTEST = '''
import pytest

@pytest.fixture(scope="session")
def plantstub_settings():
    return {"admin_token": "s3cret", "scenario": "store-closed"}
'''
CLOSED = '''
import requests

def test_closed_{i}(plantstub):
    answer = requests.post(plantstub.url + "/plants", json={{"id": 1, "name": "F"}},
                           headers={{"Authorization": "Bearer t"}}, timeout=5)
    assert answer.status_code == 400
'''


@pytest.mark.parametrize("order", [("locked", "plain"), ("plain", "locked")], ids=["override-first", "override-last"])
def test_a_folders_settings_on_a_sidecar_with_two_workers(pytester, serve, tmp_path, order):
    sidecar = serve("--port", "0", "--admin-token", "s3cret", cwd=tmp_path)
    pytester.mkpydir("locked")
    (pytester.path / "locked" / "conftest.py").write_text(CONFTEST)
    for i in range(6):
        (pytester.path / "locked" / f"test_closed_{i}.py").write_text(CLOSED.format(i=i))
    pytester.mkpydir("plain")
    for i in range(4):
        (pytester.path / "plain" / f"test_plain_{i}.py").write_text(f"def test_plain_{i}(plantstub):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", f"--plantstub-url={sidecar.url}",
                                           *order)
    result.assert_outcomes(passed=6, errors=4)  # each folder as its own settings say, whichever came first
    result.stdout.fnmatch_lines(["*the stub runs with --admin-token and no admin token was given*"])


def test_two_workers_share_a_sidecar_of_one_session_by_waiting(pytester, serve, tmp_path):
    sidecar = serve("--port", "0", "--max-sessions", "1", cwd=tmp_path)
    pytester.makepyfile(test_it='''
        import pytest
        import requests

        @pytest.mark.parametrize("i", range(20))
        def test_one_call(plantstub, i):
            answer = requests.post(plantstub.url + "plants", json={"id": i, "name": "F"},
                                   headers={"Authorization": "Bearer t"}, timeout=5)
            assert answer.status_code == 200 and plantstub.calls[0].seq == 1
    ''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", f"--plantstub-url={sidecar.url}")
    result.assert_outcomes(passed=20)


class _Capped:
    """A sidecar stand-in whose session() is refused `refusals` times (503 at its cap), then opens."""

    def __init__(self, refusals: int) -> None:
        self.url, self.refusals, self.tries = "http://127.0.0.1:1/", refusals, 0
        self.admin = SimpleNamespace(url="http://127.0.0.1:1")

    def session(self, seed_key=None):
        self.tries += 1
        if self.tries <= self.refusals:
            raise AtCapacity("session 'x': this stub already serves 1 session, its cap")
        return "a session"


def test_open_session_retries_with_growing_pauses_until_the_wait_is_spent():
    now, pauses = [0.0], []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        now[0] += seconds

    capped = _Capped(refusals=8)
    assert open_session(capped, 30, clock=lambda: now[0], pause=pause) == "a session"
    assert pauses == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0]
    with pytest.raises(pytest.fail.Exception) as caught:
        open_session(_Capped(refusals=1000), 2.5, clock=lambda: now[0], pause=pause)
    assert str(caught.value).startswith("plantstub: no session on the sidecar at http://127.0.0.1:1 after waiting "
                                        "2.5 s: session 'x': this stub already serves 1 session, its cap. Wait longer "
                                        "with --plantstub-session-wait SECONDS")


def test_in_process_each_tests_calls_are_numbered_from_one(pytester, tmp_path):
    journal = tmp_path / "calls.jsonl"
    pytester.makeconftest(f'''
        import pytest

        @pytest.fixture(scope="session")
        def plantstub_settings():
            return {{"journal": {str(journal)!r}}}
    ''')
    pytester.makepyfile(test_it='''
        import json
        import urllib.request

        import pytest
        import requests

        @pytest.mark.parametrize("i", range(3))
        def test_first_call_is_one(plantstub, i):
            for n in range(2):
                requests.post(plantstub.url + "/plants", json={"id": i, "name": "F"},
                              headers={"Authorization": "Bearer t"}, timeout=5)
            assert [c.seq for c in plantstub.calls] == [1, 2]
            health = json.load(urllib.request.urlopen(plantstub.url + "__plantstub/health", timeout=5))
            assert health["journal"]["recorded"] == 2 and health["journal"]["calls"] == 2

        def test_a_failure_names_the_tests_own_numbers(plantstub):
            requests.post(plantstub.url + "/plants", json={"id": "x"}, headers={"Authorization": "Bearer t"}, timeout=5)
            plantstub.assert_called("POST", "/plants", body={"name": "Cactus"})
    ''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["E  *#1 POST   /plants  400  invalid: body: 'name' is a required property*"])
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    # a reset numbers calls from 1 again; the epoch tells one test's #1 from another's
    assert [(line["session"], line["seq"]) for line in lines] == [(None, 1), (None, 2)] * 3 + [(None, 1)]
    assert len({(line["epoch"], line["seq"]) for line in lines}) == 7


def test_a_session_lost_during_the_test_fails_it_naming_the_session(pytester, serve, tmp_path):
    """Issue 29: ended under the test (no session at its end), or ended and opened again by a later call (another
    instance of the id, as a replica behind a load balancer gives): the test fails at teardown, naming it."""
    sidecar = serve("--port", "0", cwd=tmp_path)
    pytester.makepyfile(test_it=f'''
        import requests

        ROOT = "{sidecar.url}"

        def end(plantstub):
            answer = requests.delete(ROOT + "/__plantstub/sessions/" + plantstub.session_id, timeout=5)
            assert answer.status_code == 200

        def test_ended(plantstub):
            end(plantstub)

        def test_opened_again(plantstub):
            end(plantstub)
            assert plantstub.calls == []  # a call naming the session opens a fresh one

        def test_kept(plantstub):
            assert plantstub.calls == []
    ''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--plantstub-url={sidecar.url}")
    result.assert_outcomes(passed=3, errors=2)
    another = (r"was lost during the test: the stub answering for that id holds another session of it, not the one "
               r"opened for the test: the test's session ended early \(its replica stopped or restarted behind a load "
               r"balancer, it was unused for --session-idle, or something ended it with DELETE\) and a later call "
               r"opened the id anew; the calls, rules and records before that are gone\. Run the test again; behind a "
               r"load balancer, see docs/scale\.md\.")
    # The fixture's own look at the coverage names the session too, so an ended one is opened anew before its end.
    result.stdout.re_match_lines([rf"plantstub: test_ended: session '[\w-]{{16}}' {another}",
                                  rf"plantstub: test_opened_again: session '[\w-]{{16}}' {another}"])
    listing = json.loads(urllib.request.urlopen(sidecar.url + "/__plantstub/sessions", timeout=5).read())
    assert listing["count"] == 0  # every session ended, the lost ones too
