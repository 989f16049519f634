"""The Python API: Stub in a background thread, its calls, and assertion texts pinned exactly."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import aiohttp
import pytest

from plantstub import CallAssertionError, PlantstubError, Stub
from tests.helpers import JSON_AUTH, wait_until


def post(url: str, body, headers=JSON_AUTH, path="/plants") -> int:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.fixture
def stub(tmp_path):
    with Stub(scenarios=tmp_path) as running:
        yield running


def test_stub_runs_on_a_free_port_and_records(stub):
    assert stub.url.startswith("http://127.0.0.1:")
    assert post(stub.url, {"id": 1, "name": "Fern"}) == 200
    [call] = stub.calls
    assert (call.seq, call.method, call.path, call.body, call.valid, call.status) == (
        1, "POST", "/plants", {"id": 1, "name": "Fern"}, True, 200)
    assert call.response["body"] == {"name": "Fern"}
    assert call.time.endswith("Z")


def test_stub_instances_stand_alone(tmp_path):
    with Stub(scenarios=tmp_path) as one, Stub(scenarios=tmp_path) as two:
        assert one.url != two.url
        post(one.url, {"id": 1, "name": "A"})
        assert len(one.calls) == 1 and two.calls == []


def test_stub_stops_and_frees_its_port(tmp_path):
    with Stub(scenarios=tmp_path) as stub:
        url = stub.url
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/__plantstub/health", timeout=2)


def test_stub_reset_forgets_calls(stub):
    post(stub.url, {"id": 1, "name": "A"})
    stub.reset()
    assert stub.calls == []


def test_stub_ignores_plantstub_port_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("PLANTSTUB_PORT", "1")
    with Stub(scenarios=tmp_path) as stub:
        assert not stub.url.endswith(":1")


def test_stub_bad_spec_raises_in_the_callers_thread(tmp_path):
    spec = tmp_path / "x.yaml"
    spec.write_text("openapi: 4.0.0\n")
    with pytest.raises(PlantstubError, match=r"openapi: '4.0.0' is not supported"):
        Stub(spec=spec, scenarios=tmp_path).start()


async def test_stub_works_inside_a_running_event_loop(tmp_path):
    async with Stub(scenarios=tmp_path) as stub:
        async with (
            aiohttp.ClientSession() as session,
            session.post(stub.url + "/plants", json={"id": 3, "name": "Ivy"}, headers=JSON_AUTH) as response,
        ):
            assert response.status == 200
            assert await response.json() == {"name": "Ivy"}
        stub.assert_called("POST", "/plants", body={"name": "Ivy"}, times=1)


def test_assert_called_passes_and_returns_the_calls(stub):
    post(stub.url, {"id": 1, "name": "Cactus"})
    post(stub.url, {"id": 2, "name": "Cactus"})
    found = stub.assert_called("POST", "/plants", body={"name": "Cactus"}, times=2)
    assert [c.seq for c in found] == [1, 2]
    stub.assert_called(path="/plants", status=200)


def test_assert_called_failure_shows_expected_received_and_closest(stub):
    post(stub.url, {"id": 1, "name": "Fern"})
    post(stub.url, {"id": "x", "name": "Cactos"})
    post(stub.url, {}, path="/plant")
    with pytest.raises(CallAssertionError) as failure:
        stub.assert_called("POST", "/plants", body={"name": "Cactus"}, times=1)
    assert str(failure.value) == (
        "plantstub: expected 1 call POST /plants with body {'name': 'Cactus'}; got 0.\n"
        "3 calls recorded:\n"
        "  #1 POST   /plants  200\n"
        "  #2 POST   /plants  400  invalid: body.id: 'x' is not of type 'integer'\n"
        "  #3 POST   /plant  404  invalid: path: no path in the spec matches /plant\n"
        "Closest: #2 POST /plants\n"
        "  method     'POST'        ok\n"
        "  path       '/plants'     ok\n"
        "  body.name  'Cactos'      expected 'Cactus'   <<<<<\n"
        "Next: #1 POST /plants\n"
        "  method     'POST'        ok\n"
        "  path       '/plants'     ok\n"
        "  body.name  'Fern'        expected 'Cactus'   <<<<<\n"
        "Next: #3 POST /plant\n"
        "  method     'POST'        ok\n"
        "  path       '/plant'      expected '/plants'   <<<<<\n"
        "  body.name  <absent>      expected 'Cactus'   <<<<<"
    )


def test_assert_called_with_no_calls_says_so(stub):
    with pytest.raises(CallAssertionError) as failure:
        stub.assert_called("POST", "/plants")
    assert str(failure.value) == (
        "plantstub: expected at least 1 call POST /plants; got 0.\nNo calls recorded.")


def test_assert_called_too_many(stub):
    post(stub.url, {"id": 1, "name": "A"})
    post(stub.url, {"id": 2, "name": "A"})
    with pytest.raises(CallAssertionError) as failure:
        stub.assert_called("POST", "/plants", times=1)
    assert str(failure.value) == (
        "plantstub: expected 1 call POST /plants; got 2.\n"
        "2 calls recorded:\n"
        "  #1 POST   /plants  200\n"
        "  #2 POST   /plants  200\n"
        "Matching: #1, #2")


def test_assert_not_called(stub):
    stub.assert_not_called("DELETE", "/plants")
    post(stub.url, {"id": 1, "name": "A"})
    with pytest.raises(CallAssertionError, match=r"^plantstub: expected 0 calls POST /plants; got 1\."):
        stub.assert_not_called("POST", "/plants")


def test_assert_all_valid_lists_each_bad_request(stub):
    post(stub.url, {"id": 1, "name": "A"})
    stub.assert_all_valid()
    post(stub.url, {"id": "x"})
    post(stub.url, b"{", headers={"Content-Type": "application/json"})
    with pytest.raises(CallAssertionError) as failure:
        stub.assert_all_valid()
    assert str(failure.value).startswith(
        "plantstub: the code under test sent 2 requests that break the contract:\n"
        "  #2 POST /plants -> 400: body: 'name' is a required property; body.id: 'x' is not of type 'integer'\n"
        "  #3 POST /plants -> 401: headers.Authorization: missing; expected 'Bearer <credentials>' (bearerAuth); "
        "body: not valid JSON: ")
    assert str(failure.value).endswith(" at line 1 column 2")  # between: the reason in Python's json module's words


@pytest.mark.slow  # a stress loop: 0.5 to 3.5 s, by how the threads share the GIL
def test_calls_can_be_read_while_requests_arrive(stub):
    import threading

    seen: list[int] = []
    done = threading.Event()

    def reader():
        while not done.is_set():
            calls = stub.calls
            assert [c.seq for c in calls] == sorted(c.seq for c in calls)
            seen.append(len(calls))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(6) as pool:
            assert set(pool.map(lambda i: post(stub.url, {"id": i, "name": "P"}), range(120))) == {200}
    finally:
        done.set()
        thread.join()
    assert len(stub.calls) == 120
    assert seen == sorted(seen)  # each snapshot holds at least what the one before held


LATE = "rules:\n  - match: {body: {name: Late}}\n    reply: {status: 200, body: {name: Late}, delay_ms: 400}\n"


def test_a_late_answer_stays_in_the_epoch_it_arrived_in(tmp_path):
    (tmp_path / "late.yaml").write_text(LATE)
    journal = tmp_path / "calls.jsonl"
    with Stub(scenarios=tmp_path, scenario="late", journal=journal) as stub:
        request = urllib.request.Request(stub.url + "/plants", data=b'{"id": 1, "name": "Late"}', method="POST",
                                         headers=JSON_AUTH)
        with pytest.raises((TimeoutError, urllib.error.URLError)):
            urllib.request.urlopen(request, timeout=0.1)
        stub.reset()  # the next test starts here; the first request is still waiting for its delay
        assert post(stub.url, {"id": 2, "name": "Fern"}) == 200
        wait_until(lambda: len(journal.read_text().splitlines()) == 2)  # the late one is answered now
        assert [(c.seq, c.body["name"]) for c in stub.calls] == [(1, "Fern")]  # the new epoch numbers from 1
        assert stub.coverage()["operations"][0]["responses"] == [{"status": "200", "calls": 1}, {"status": "400", "calls": 0}]
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    assert sorted((line["epoch"], line["seq"], line["body"]["name"]) for line in lines) == [(0, 1, "Late"), (1, 1, "Fern")]


def test_calls_are_numbered_on_arrival_and_listed_in_that_order(tmp_path):
    (tmp_path / "late.yaml").write_text(LATE)
    with Stub(scenarios=tmp_path, scenario="late") as stub:
        slow = threading.Thread(target=post, args=(stub.url, {"id": 1, "name": "Late"}))
        slow.start()
        wait_until(lambda: stub._live().journal._seq == 1)  # the slow one has arrived
        assert post(stub.url, {"id": 2, "name": "Fern"}) == 200
        slow.join(5)
        assert [(c.seq, c.body["name"]) for c in stub.calls] == [(1, "Late"), (2, "Fern")]


def test_an_internal_error_is_the_stubs_not_the_consumers(stub, monkeypatch, caplog):
    def broken(*args):
        raise RuntimeError("boom")

    monkeypatch.setattr(next(iter(stub._live().runtime.served.values())), "default", broken)
    assert post(stub.url, {"id": 1, "name": "Fern"}) == 500
    [call] = stub.calls
    assert (call.valid, call.errors) == (True, ())
    assert call.stub_errors == ("plantstub internal error (a bug in plantstub, not in the client): RuntimeError: boom",)
    stub.assert_all_valid()  # the consumer sent a valid request
    assert "plantstub: internal error on POST /plants" in caplog.text and "RuntimeError: boom" in caplog.text


def test_an_admin_route_error_is_logged_with_its_traceback(stub, monkeypatch, caplog):
    def broken():
        raise RuntimeError("coverage exploded")

    monkeypatch.setattr(stub._live(), "coverage", broken)
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(stub.url + "/__plantstub/coverage", timeout=5)
    assert raised.value.code == 500
    assert json.load(raised.value)["message"] == "plantstub internal error (a bug in plantstub, not in the client): RuntimeError: coverage exploded"
    assert "plantstub: internal error on admin route GET /__plantstub/coverage" in caplog.text
    assert "Traceback" in caplog.text


def test_stopping_with_a_delayed_reply_in_flight_leaves_no_pending_task(tmp_path):
    (tmp_path / "late.yaml").write_text(LATE.replace("400", "5000"))
    code = f"""
import threading, time, urllib.request
from plantstub import Stub
with Stub(scenarios={str(tmp_path)!r}, scenario="late") as stub:
    request = urllib.request.Request(stub.url + "/plants", data=b'{{"id": 1, "name": "Late"}}', method="POST",
                                     headers={{"Authorization": "Bearer t", "Content-Type": "application/json"}})
    def send():
        try:
            urllib.request.urlopen(request, timeout=10)
        except OSError:
            pass
    threading.Thread(target=send, daemon=True).start()
    while not stub._live().journal._seq:
        time.sleep(0.01)
print("stopped")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert (result.returncode, result.stdout) == (0, "stopped\n"), result.stderr
    assert "Task was destroyed" not in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_an_ended_session_is_freed_with_its_calls(stub):
    """A session's pipeline (and so its journal) goes when the session ends, however it ends: a view's stop()
    here; the stub keeps nothing of it but its coverage."""
    import gc
    import weakref

    ended = []
    for _ in range(5):
        with stub.session() as view:
            assert post(view.url, {"id": 1, "name": "Fern"}) == 200  # through the sessions' router
            ended.append(weakref.ref(view._live()))
        del view
    gc.collect()
    assert [ref() for ref in ended] == [None] * 5


def test_session_of_a_stopped_stub_says_it_is_not_serving(tmp_path):
    stub = Stub(scenarios=tmp_path)
    with pytest.raises(PlantstubError, match="not serving"):
        stub.session()
    with stub:
        pass
    with pytest.raises(PlantstubError, match="not serving"):
        stub.session()
