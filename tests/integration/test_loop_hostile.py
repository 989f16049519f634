"""Nothing long runs on the event loop (issue 23: D21-D24, D29), tried as an attacker would, through `plantstub serve`
and raw HTTP: big admin answers are built off the loop, deep values are written, `$regex` time is a budget per
request and per wait, waiters judge each new call once, and bad wait filters answer 400."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest

from plantstub import CallAssertionError, Stub
from tests.helpers import HANG, LoopCPU, Receiver, ServeProcess, live_cpu_seconds, raw_call

JSON = {"Content-Type": "application/json"}
AUTH_JSON = {"Authorization": "Bearer t", **JSON}


def _post(url: str, path: str, value: object, headers: dict[str, str] | None = None) -> tuple[int, object]:
    status, raw, _ = raw_call(url, "POST", path, json.dumps(value).encode(), {**AUTH_JSON, **(headers or {})})
    return status, json.loads(raw) if raw else None


def _get(url: str, path: str) -> tuple[int, object]:
    status, raw, _ = raw_call(url, "GET", path)
    return status, json.loads(raw)


def _delivered(url: str, n: int) -> list:
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        status, listed = _get(url, "/__plantstub/deliveries")
        assert status == 200, listed
        if len(listed) >= n:  # type: ignore[arg-type]
            return listed  # type: ignore[return-value]
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} deliveries after {HANG:g} s")


def _health_meanwhile(stub: ServeProcess, path: str, method: str = "GET",
                      body: bytes | None = None) -> tuple[LoopCPU, int, bytes]:
    """Ask `method path` in a thread while GET health is asked every 50 ms: (the stub's CPU time meanwhile, in all
    and on its event loop, the big one's status, its body)."""
    got: dict[str, object] = {}

    def big() -> None:
        status, body, _ = raw_call(stub.url, method, path, sent, JSON if sent else None)
        got.update(status=status, body=body)

    sent = body
    thread = threading.Thread(target=big)
    with LoopCPU(stub.proc.pid) as cpu:
        thread.start()
        while thread.is_alive():
            assert raw_call(stub.url, "GET", "/__plantstub/health")[0] == 200
            thread.join(0.05)
    return cpu, got["status"], got["body"]  # type: ignore[return-value]


def _not_stalled(cpu: LoopCPU) -> bool:
    """The big request's work was done off the event loop: the loop's thread used under three quarters of the stub's
    CPU time meanwhile (reading and writing the bodies, answering health: up to 45 % here, for a PUT of 30 MB of
    state), or too little to hold anyone up (a request with little to do). On the loop, each of these held it 0.3 to
    6.8 s, nearly all of the CPU. CPU times, unlike a health answer's wait, do not grow on a machine busy with other
    work."""
    return cpu.share < 0.75 or cpu.loop < 0.1


# -- D21 / D22: big and deep admin answers ------------------------------------------------------------------------
def test_get_deliveries_of_big_bodies_does_not_stall_other_requests(serve, tmp_path):
    # Four deliveries of ~1 MB of `{}`: building the answer on the loop took 2.5 s, health waiting as long.
    with Receiver() as receiver:
        stub = serve("--spec", "plant-store-full", "--port", "0", "--webhook", receiver.url, cwd=tmp_path)
        body = {"id": 1, "name": "Fern", "extra": [{}] * 250_000}
        for _ in range(4):
            assert _post(stub.url, "/plants", body)[0] == 200
        _delivered(stub.url, 4)
        cpu, status, answer = _health_meanwhile(stub, "/__plantstub/deliveries")
    assert status == 200 and [len(d["body"]["extra"]) for d in json.loads(answer)] == [250_000] * 4
    assert _not_stalled(cpu), f"GET deliveries: {cpu}"


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def _depth(value: object) -> int:
    depth = 0
    while isinstance(value, dict):
        value, depth = value["a"], depth + 1
    return depth


def test_a_delivery_nested_600_levels_deep_is_listed_not_a_500(serve, tmp_path):
    with Receiver() as receiver:
        stub = serve("--spec", "plant-store-full", "--port", "0", "--webhook", receiver.url, cwd=tmp_path)
        assert _post(stub.url, "/plants", {"id": 1, "name": "Deep", "extra": _nested(600)})[0] == 200
        [delivery] = _delivered(stub.url, 1)
        assert delivery["body"]["name"] == "Deep" and _depth(delivery["body"]["extra"]) == 600
        status, [call] = _get(stub.url, "/__plantstub/calls")  # type: ignore[misc]
        assert status == 200 and _depth(call["body"]["extra"]) == 600


def test_put_and_get_state_of_a_big_store_do_not_stall_other_requests(serve, tmp_path):
    stub = serve("--stateful", "--port", "0", "--max-body", str(64 * 2**20), cwd=tmp_path)
    # 30 MB of state: parsed, checked and written one record at a time off the loop
    state = {"/plants": [{"id": i, "name": "n" * 3300} for i in range(9_000)]}
    for method, body in (("PUT", json.dumps(state).encode()), ("GET", None)):  # PUT held the loop 1-1.5 s
        cpu, status, answer = _health_meanwhile(stub, "/__plantstub/state", method, body)
        assert status == 200 and json.loads(answer) == state
        assert _not_stalled(cpu), f"{method} state: {cpu}"


def test_get_rules_and_delete_of_no_rule_do_not_copy_every_rule_on_the_loop(serve, tmp_path):
    # Both deep-copied every rule on the loop (1,000 rules of 50 KB: GET rules and DELETE rules/nope stalled the
    # stub 6.8 and 5.5 s); the 404 named every id.
    stub = serve("--spec", "plant-store-full", "--port", "0", cwd=tmp_path)
    big = {"match": {"path": "/plants"}, "reply": {"status": 200, "body": [{"b": [i]} for i in range(30_000)]},
           "off_contract": True}
    for _ in range(5):
        assert _post(stub.url, "/__plantstub/rules", big)[0] == 201
    for i in range(7):
        assert _post(stub.url, "/__plantstub/rules", {"match": {"path": f"/p{i}"}, "reply": {"status": 200},
                                                      "off_contract": True})[0] == 201
    cpu, status, answer = _health_meanwhile(stub, "/__plantstub/rules")
    assert status == 200 and [len(r["rule"]["reply"]["body"]) for r in json.loads(answer)["rules"][:5]] == [30_000] * 5
    assert _not_stalled(cpu), f"GET rules: {cpu}"
    cpu, status, answer = _health_meanwhile(stub, "/__plantstub/rules/nope", "DELETE")
    assert (status, json.loads(answer)["message"]) == (
        404, "path: no rule 'nope' (rules: r1, r2, r3, r4, r5, r6, r7, r8, r9, r10 and 2 more)")
    assert _not_stalled(cpu), f"DELETE rules/nope: {cpu}"


# -- D23: the `$regex` budget -------------------------------------------------------------------------------------
BACKTRACKS = "^(a|aa)+$"  # on "aaa…a!" it backtracks until the per-match timeout (0.1 s) stops it


def test_five_costly_regex_rules_share_one_budget_per_request_and_the_call_says_so(serve, tmp_path):
    stub = serve("--port", "0", cwd=tmp_path)
    for i in range(5):
        rule = {"match": {"path": "/plants", "headers": {"X-Name": {"$regex": BACKTRACKS}}},
                "reply": {"status": 200, "body": {"name": f"rule {i}"}}}
        assert _post(stub.url, "/__plantstub/rules", rule)[0] == 201
    status, answer = _post(stub.url, "/plants", {"id": 1, "name": "Fern"}, {"X-Name": "a" * 60 + "!"})
    assert (status, answer) == (200, {"name": "Fern"})  # no rule matched: the default answer
    [call] = _get(stub.url, "/__plantstub/calls")[1]  # type: ignore[misc]
    # One budget for the request, spent by the first pattern; the other four were not tried (five patterns of 0.1 s
    # each, one after the other, would each say "too costly to match (over 0.1 s)" instead).
    assert call["stub_errors"] == [
        "$regex '^(a|aa)+$': not judged: the request's 0.1 s for matching patterns was spent; rules and filters "
        "that needed it did not match (simplify the pattern)"]


def test_a_scenarios_costly_regex_rule_draws_from_the_requests_budget_too(serve, tmp_path):
    # Rules are tried under the budget only when one of them holds a `$regex` (issue 26): a scenario's count too.
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "costly.yaml").write_text(
        "rules:\n"
        "  - match: {path: /plants, body: {name: Ivy}}\n"
        "    reply: {status: 200, body: {name: ivy}}\n"
        "  - match: {path: /plants, body: {tag: {$regex: '" + BACKTRACKS + "'}}}\n"
        "    reply: {status: 200, body: {name: matched}}\n")
    stub = serve("--port", "0", "--scenarios", "scenarios", "--scenario", "costly", cwd=tmp_path)
    status, answer = _post(stub.url, "/plants", {"id": 1, "name": "Fern", "tag": "a" * 60 + "!"})
    assert (status, answer) == (200, {"name": "Fern", "tag": "a" * 60 + "!"})  # no rule matched: the default answer
    [call] = _get(stub.url, "/__plantstub/calls")[1]  # type: ignore[misc]
    assert call["stub_errors"] == [
        "$regex '^(a|aa)+$': not judged: the request's 0.1 s for matching patterns was spent; rules and filters "
        "that needed it did not match (simplify the pattern)"]


def test_a_wait_over_many_calls_with_a_costly_regex_stops_at_its_budget(serve, tmp_path):
    stub = serve("--port", "0", cwd=tmp_path)
    for i in range(20):
        assert _post(stub.url, "/plants", {"id": i, "name": "a" * 60 + "!"})[0] == 200
    # One budget of 0.5 s for the wait, not 0.1 s for each of the twenty calls: the answer says which ran out.
    status, answer = _post(stub.url, "/__plantstub/calls/wait",
                           {"n": 1, "timeout": 5, "body": {"name": {"$regex": BACKTRACKS}}})
    assert status == 422 and answer == {  # type: ignore[comparison-overlap]
        "error": 422, "message": "body: $regex '^(a|aa)+$': not judged: the wait's 0.5 s for matching patterns was "
                                 "spent; rules and filters that needed it did not match (simplify the pattern)"}
    assert raw_call(stub.url, "GET", "/__plantstub/health")[0] == 200


# -- D24: waiters judge each new call once ------------------------------------------------------------------------
def _cpu_per_call(stub: ServeProcess, n: int) -> float:
    """The stub's CPU time per call over `n` valid POST /plants (a busy machine makes calls late, not costlier)."""
    body = json.dumps({"id": 1, "name": "Fern"}).encode()
    before = live_cpu_seconds(stub.proc.pid)
    for _ in range(n):
        raw_call(stub.url, "POST", "/plants", body, AUTH_JSON)
    return (live_cpu_seconds(stub.proc.pid) - before) / n


def test_waiters_do_not_reread_the_journal_on_every_call(serve, tmp_path):
    # Before: each of 20 waiters re-read the 1,500 kept calls after every new one (O(waiters x journal) per call):
    # 523 calls/s alone, 144 with the waiters. Judging each new call once, a waiter adds a filter's look to it.
    stub = serve("--port", "0", cwd=tmp_path)
    _cpu_per_call(stub, 1_500)
    alone = _cpu_per_call(stub, 200)
    answers: list[tuple[int, object]] = []
    waiters = [threading.Thread(target=lambda: answers.append(_post(
        stub.url, "/__plantstub/calls/wait", {"n": 1, "timeout": 4, "path": "/never"}))) for _ in range(20)]
    waiters[0].start()
    one = _until(lambda: [_waiters_held(stub.url)], lambda held: held[0] > 0)[0]  # the bytes one waiter holds
    for thread in waiters[1:]:
        thread.start()
    _until(lambda: [_waiters_held(stub.url)], lambda held: held[0] >= 20 * one)  # every waiter registered
    waited = _cpu_per_call(stub, 200)
    assert raw_call(stub.url, "DELETE", "/__plantstub/calls")[0] == 200  # a clear() reaches the waiters too
    for thread in waiters:
        thread.join(HANG)
    assert [(status, answer["arrived"]) for status, answer in answers] == [(200, False)] * 20  # type: ignore[index]
    assert waited < 3 * alone, f"{alone * 1e6:.0f} us of CPU a call alone, {waited * 1e6:.0f} with 20 waiters"


def test_a_wait_holds_no_call_the_journal_let_go(serve, tmp_path):
    # A wait kept every matching record: one wait for 10**6 calls held 300 calls of 1 MB (RSS +319 MB) while the
    # journal and health held 67 MB. It keeps their numbers now, and answers the matching calls still kept.
    stub = serve("--port", "0", "--journal-bytes", str(2 * 2**20), cwd=tmp_path)
    answers: list[tuple[int, object]] = []
    waiter = threading.Thread(target=lambda: answers.append(_post(
        stub.url, "/__plantstub/calls/wait", {"n": 60, "timeout": HANG, "path": "/plants"})))
    waiter.start()
    time.sleep(0.5)  # the waiter registered
    for i in range(60):
        assert _post(stub.url, "/plants", {"id": i, "name": "n" * 200_000})[0] == 200
    waiter.join(2 * HANG)
    status, kept = _get(stub.url, "/__plantstub/calls")
    [(status, answer)] = answers
    assert status == 200 and answer["arrived"] is True  # type: ignore[index]
    assert 0 < len(kept) < 15  # type: ignore[arg-type]  # 2 MiB of 200 KB calls
    assert [c["seq"] for c in answer["calls"]] == [c["seq"] for c in kept]  # type: ignore[index, union-attr]


def test_a_wait_counts_calls_from_before_and_after_it_began_and_a_clear_starts_afresh(serve, tmp_path):
    stub = serve("--port", "0", cwd=tmp_path)
    assert _post(stub.url, "/plants", {"id": 1, "name": "Fern"})[0] == 200
    got: dict[str, object] = {}

    def wait() -> None:
        got["answer"] = _post(stub.url, "/__plantstub/calls/wait", {"n": 2, "timeout": HANG, "body": {"name": "Fern"}})

    thread = threading.Thread(target=wait)
    thread.start()
    time.sleep(0.3)
    assert raw_call(stub.url, "DELETE", "/__plantstub/calls")[0] == 200  # the first Fern no longer counts
    for i in (2, 3):
        assert _post(stub.url, "/plants", {"id": i, "name": "Fern"})[0] == 200
    thread.join(2 * HANG)
    status, answer = got["answer"]  # type: ignore[misc]
    assert status == 200 and answer["arrived"] and [c["body"]["id"] for c in answer["calls"]] == [2, 3]


# -- D29: wait filters of the wrong type or depth -----------------------------------------------------------------
DEEP = "[" * 600 + "]" * 600
TOO_DEEP = "body.{}: nested more than 64 levels deep (filters may nest 64 at most)"


@pytest.fixture(scope="module")
def one_stub(tmp_path_factory) -> Iterator[ServeProcess]:
    """One `plantstub serve` for the table below, with a call whose body nests 600 levels deep."""
    stub = ServeProcess("--port", "0", cwd=tmp_path_factory.mktemp("stub"))
    try:
        assert _post(stub.url, "/plants", {"id": 1, "name": "Fern", "tag": json.loads(DEEP)})[0] == 400
        yield stub
    finally:
        stub.stop()


@pytest.mark.parametrize(("body", "message"), [
    ('{"n": "1"}', "body.n: '1' is not a count of calls (0 or more)"),
    ('{"timeout": [1]}', "body.timeout: [1] is not a number of seconds"),
    ('{"headers": [1]}', "body.headers: [1] is not an object of names and values"),
    ('{"query": 5}', "body.query: 5 is not an object of names and values"),
    ('{"status": "200"}', "body.status: '200' is not an HTTP status (an integer)"),
    ('{"timeout": 1' + "0" * 400 + "}", "body.timeout: 1" + "0" * 78 + "\u2026 is not 0 to 600 seconds"),  # no float
    ('{"n": -1' + "0" * 4000 + "}", "body.n: -1" + "0" * 77 + "\u2026 is not a count of calls (0 or more)"),
    ('{"body": {"name": {"$eq": ' + DEEP + "}}}", TOO_DEEP.format("body")),
    ('{"body": {"name": {"$contains": ' + DEEP + "}}}", TOO_DEEP.format("body")),
    ('{"headers": {"X": ' + DEEP + "}}", TOO_DEEP.format("headers")),
    ('{"query": {"q": ' + DEEP + "}}", TOO_DEEP.format("query")),
    ('{"body": ' + DEEP + "}", TOO_DEEP.format("body")),
], ids=["n-text", "timeout-list", "headers-list", "query-number", "status-text", "timeout-400-digits",
        "n-4000-digits", "body-eq-deep", "body-contains-deep",
        "headers-deep", "query-deep", "body-deep"])
def test_wait_filters_of_the_wrong_type_or_depth_answer_400_naming_the_field(one_stub, body, message):
    status, raw, _ = raw_call(one_stub.url, "POST", "/__plantstub/calls/wait", body.encode(), JSON)
    assert (status, json.loads(raw)["message"]) == (400, message)


def test_a_wait_whose_closest_call_nests_990_levels_deep_answers_its_failure_not_a_500(one_stub):
    deep = '{"id": 2, "name": "Deep", "tag": ' + '{"a":' * 990 + "1" + "}" * 990 + "}"
    assert raw_call(one_stub.url, "POST", "/plants", deep.encode(), AUTH_JSON)[0] == 400  # recorded all the same
    for filters in ('{"timeout": 0, "body": {"tag": 1}}', '{"timeout": 0, "body": {"tag": {"a": {"$regex": "x"}}}}'):
        status, raw, _ = raw_call(one_stub.url, "POST", "/__plantstub/calls/wait", filters.encode(), JSON)
        answer = json.loads(raw)
        assert (status, answer["arrived"]) == (200, False) and len(answer["message"]) < 2_000  # values cut short


def test_in_process_and_remote_waits_and_assertions_stop_at_their_regex_budget():
    with Stub() as stub:
        for i in range(20):
            assert _post(stub.url, "/plants", {"id": i, "name": "a" * 60 + "!"})[0] == 200
        costly = {"name": {"$regex": BACKTRACKS}}
        spent = ("$regex '^(a|aa)+$': not judged: the {}'s 0.5 s for matching patterns was spent; rules and filters "
                 "that needed it did not match (simplify the pattern)")
        # One budget for the whole wait or assertion (the text names it), not 0.1 s for each of the twenty calls
        for who, wait in (("in process", stub.wait_for_calls), ("remote", Stub.connect(stub.url).wait_for_calls)):
            with pytest.raises(CallAssertionError) as caught:
                wait(1, timeout=5, body=costly)
            assert str(caught.value) == "plantstub: wait_for_calls(): " + spent.format("wait"), who
        with pytest.raises(CallAssertionError) as caught:
            stub.assert_called("POST", "/plants", body=costly)
        assert str(caught.value) == "plantstub: " + spent.format("assertion")


def _strict(raw: bytes) -> object:
    def refuse(name: str) -> object:
        raise AssertionError(f"{name} written: not JSON")

    return json.loads(raw, parse_constant=refuse)


def test_admin_answers_never_write_infinity_or_nan():
    # A rule from Python code may hold float("inf"); beside an integer beyond 64 bits, GET rules wrote `Infinity`.
    with Stub() as stub:
        stub.when(path="/plants").reply(200, {"name": "x", "n": float("inf"), "m": float("nan"), "big": 10**20})
        status, raw, _ = raw_call(stub.url, "GET", "/__plantstub/rules")
        [rule] = _strict(raw)["rules"]  # type: ignore[index]
        assert status == 200 and rule["rule"]["reply"]["body"] == {"name": "x", "n": None, "m": None, "big": 10**20}
        for body in (b'{"match": {"path": "/plants"}, "reply": {"status": 200, "body": {"n": NaN}}}',
                     b'{"match": {"path": "/plants"}, "reply": {"status": 200, "body": {"n": -Infinity}}}'):
            status, raw, _ = raw_call(stub.url, "POST", "/__plantstub/rules", body, JSON)
            assert status == 400 and _strict(raw)["message"].startswith("body: not valid JSON: ")  # type: ignore[index]


def test_declaring_a_big_rule_does_not_stall_other_requests(serve, tmp_path):
    # A rule of ~270 KB (90,000 objects to match): checked on the loop, health waited the whole of it (0.3-0.7 s).
    stub = serve("--port", "0", cwd=tmp_path)
    rule = {"match": {"path": "/plants", "body": [{} for _ in range(90_000)]}, "reply": {"status": 200}}
    cpu, status, answer = _health_meanwhile(stub, "/__plantstub/rules", "POST", json.dumps(rule).encode())
    assert status == 201 and json.loads(answer)["id"] == "r1"
    assert _not_stalled(cpu), f"POST rules: {cpu}"


def test_waits_take_their_filters_from_the_memory_budget_and_one_too_many_gets_507(serve, tmp_path):
    # 40 waits with 588 KB body filters grew RSS 630 MB while health said nothing was held.
    stub = serve("--port", "0", "--max-bytes", str(4 * 2**20), cwd=tmp_path)
    wait = {"n": 1, "timeout": 30, "path": "/plants", "body": {"tags": [{"k": "v"} for _ in range(8_000)]}}
    answers: list[tuple[int, object]] = []
    threads = []
    for _ in range(8):  # one at a time, each seen waiting or refused before the next: no race on a busy machine
        answered, held = len(answers), _waiters_held(stub.url)
        thread = threading.Thread(target=lambda: answers.append(_post(stub.url, "/__plantstub/calls/wait", wait)))
        thread.start()
        threads.append(thread)
        _until(lambda: [len(answers), _waiters_held(stub.url)], lambda got, answered=answered, held=held: got[0] > answered or got[1] > held)
    refused = list(answers)
    assert all(status == 507 for status, _ in refused), refused
    memory = _get(stub.url, "/__plantstub/health")[1]["memory"]["session"]  # type: ignore[index]
    assert refused, f"8 waits of ~1.5 MB each fit in 4 MiB: {answers}"
    message = refused[0][1]["message"]  # type: ignore[index]
    assert message.startswith("body: this wait needs ") and "memory budget (--max-bytes) holds" in message
    assert 2**20 < memory["parts"]["waiters"] <= 4 * 2**20 and memory["dropped"]["waiters"]["count"] >= 1
    assert _post(stub.url, "/plants", {"name": "Fern", "tags": [{"k": "v"} for _ in range(8_000)]})[0] == 400  # recorded
    for thread in threads:
        thread.join(10)
    assert sorted(status for status, _ in answers) == [200] * (8 - len(refused)) + [507] * len(refused)
    assert "waiters" not in _get(stub.url, "/__plantstub/health")[1]["memory"]["session"]["parts"]  # type: ignore[index]


def _waiters_held(url: str) -> int:
    """The bytes the session's waits hold now (health's memory budget)."""
    return _get(url, "/__plantstub/health")[1]["memory"]["session"]["parts"].get("waiters", 0)  # type: ignore[index]


def _until(get, done, timeout: float = HANG):
    deadline = time.monotonic() + timeout
    while not done(got := get()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return list(got)
