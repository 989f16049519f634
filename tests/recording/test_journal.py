"""The journal keeps calls as bytes, bounded by count and by bytes; the file still gets every call."""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections import deque

import pytest

from plantstub._budget import Budget
from plantstub._json import NO_BODY
from plantstub.contract.outgoing import error_reply
from plantstub.recording.call import ENTRY_OVERHEAD, ERRORS_SENT, RECORD_OVERHEAD, Record
from plantstub.recording.journal import AHEAD, Journal

MB = 1024 * 1024


JSON_HEADER = ((b"Content-Type", b"application/json"),)


def record(seq: int, raw: bytes = b'{"id": 1, "name": "Fern"}', payload: bytes = b'{"name":"Fern"}',
           headers: tuple[tuple[bytes, bytes], ...] = JSON_HEADER, query: str = "") -> Record:
    return Record.of(seq, 0.0, "POST", "/plants", query, headers, raw, NO_BODY, True, (), None, None, 200,
                     {"Content-Type": "application/json"}, payload, True, None)


def test_bodies_are_kept_as_bytes_and_parsed_when_read():
    journal = Journal()
    journal.append(record(1))
    [call] = journal.snapshot()
    assert call.body == {"id": 1, "name": "Fern"}
    assert call.response == {"status": 200, "headers": {"Content-Type": "application/json"}, "body": {"name": "Fern"}}
    packed = len(b"Content-Type\0application/json")
    reply_headers = ENTRY_OVERHEAD + len("application/json")
    assert journal.kept_bytes == 25 + 15 + len("/plants") + packed + reply_headers + RECORD_OVERHEAD
    assert journal.memory.held == journal.taken == journal.kept_bytes + AHEAD  # taken ahead: no lock for the next


def test_headers_and_query_are_kept_as_received_and_read_as_aiohttp_reads_them():
    headers = ((b"Accept", b"*/*"), (b"X-Tag", b"a"), (b"x-tag", b"b"), (b"X-Raw", "é".encode("latin-1")))
    [call] = [record(1, headers=headers, query="tag=a&tag=b&q=%20x+y&empty").view()]
    assert call.headers.getall("X-TAG") == ["a", "b"] and call.headers["accept"] == "*/*"
    assert call.to_dict()["headers"] == {"Accept": "*/*", "X-Tag": "a", "x-tag": "b", "X-Raw": "\ufffd"}
    assert call.query == {"tag": ["a", "b"], "q": " x y", "empty": ""}
    assert record(2).raw_headers == b"Content-Type\0application/json"  # one bytes object, not a mapping
    assert record(3, headers=()).view().headers == {} and record(3).view().query == {}


@pytest.mark.parametrize(("headers", "errors", "query"), [
    ((), 0, ""),
    (tuple((b"X-Header-%d" % k, b"v" * 20) for k in range(6)), 0, ""),
    (tuple((b"X-%d" % k, b"v") for k in range(100)), 0, ""),  # many tiny headers: overhead per header counts
    (tuple((b"X-%d" % k, b"v" * 8000) for k in range(120)), 0, ""),  # ~1 MB of headers (issue 23, D16)
    ((), 3, "a=1&b=2&" * 25),
], ids=["none", "six", "hundred-tiny", "megabyte", "errors-query"])
def test_a_records_size_is_what_python_holds_for_it(headers, errors, query):
    """Calibrates RECORD_OVERHEAD and the others: a record counts at least what tracemalloc sees it hold when it shares
    nothing with the calls before it (each its own Shape: another rule answered), and not much more; calls alike
    (one Shape for all) hold less, and count the same."""
    def make(i: int, rule: str | None) -> Record:  # fresh objects, as the pipeline builds them
        problems = tuple(f"body.name: {i} is not of type 'string'" for _ in range(errors))
        return Record.of(1000 + i, 1.5 + i, "POST", f"/plants/{i}", query + str(i) if query else "", received[i],
                         b'{"id": %d}' % i, NO_BODY, not errors, problems, None, rule, 200,
                         {"Content-Type": "application/json"}, b'{"id":%d,"name":"Fern"}' % i, True, None)

    def held(rules: list[str | None]) -> tuple[int, int]:
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            kept = deque(make(i, rule) for i, rule in enumerate(rules))
            real = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        return real, sum(r.size for r in kept)

    n = 20 if headers and len(headers[0][1]) > 1000 else 1000
    # The headers as aiohttp hands them over, made beforehand: the record packs them, it does not keep them (and
    # CPython's free lists would keep a thousand of their tuples, whoever let go of them). The rules' names too: they
    # are the scenario's, not the call's.
    received = [tuple((name, value + b"%d" % i) for name, value in headers) for i in range(n)]
    real, counted = held([f"rules[{i}]" for i in range(n)])
    # tracemalloc sees every thread: another's few hundred bytes (xdist's) may land in `real` meanwhile
    assert 0.99 * real <= counted <= 1.4 * real
    alike, counted_alike = held([None] * n)
    assert counted_alike == counted  # counted as if each had its own Shape
    if not query and n >= 1000:  # (each query its own: no two calls alike; 20 calls: within the noise)
        assert alike < real - 100 * n  # the Shape shared: less held


def test_the_byte_bound_drops_the_oldest_and_counts_what_it_dropped():
    big = b"[" + b"{}," * (MB // 3) + b"{}]"  # 1 MB of `{}`: 20 times that once parsed
    each = record(1, raw=big).size
    journal = Journal(size=1000, max_bytes=3 * each)
    for seq in range(1, 11):
        journal.append(record(seq, raw=big))
    assert [r.seq for r in journal.records()] == [8, 9, 10]
    assert journal.kept_bytes == 3 * each
    assert journal.memory.held == journal.taken <= journal.kept_bytes + 2 * AHEAD
    assert (journal.recorded, journal.dropped, journal.dropped_bytes) == (10, 7, 7 * each)
    assert journal.memory.figures()["dropped"] == {"calls": {"count": 7, "bytes": 7 * each}}


def test_a_call_alone_over_the_bound_is_not_kept_but_counted_and_still_written(tmp_path):
    journal = Journal(max_bytes=2000, file=tmp_path / "calls.jsonl")
    journal.append(record(1))
    journal.append(record(2, raw=b"x" * 5000))
    assert [r.seq for r in journal.records()] == [1]  # the one that fits stays; the newest was never kept
    assert (journal.recorded, journal.dropped, journal.refused) == (2, 1, 1)
    assert journal.memory.figures()["dropped"] == {"calls": {"count": 1, "bytes": record(2, raw=b"x" * 5000).size}}
    journal.close()
    assert [json.loads(line)["seq"] for line in (tmp_path / "calls.jsonl").read_text().splitlines()] == [1, 2]


def test_calls_draw_from_the_session_budget_and_shed_for_other_kinds():
    stub = Budget(100_000)
    session = Budget(50_000, stub)
    journal = Journal(max_bytes=10**9, memory=session)
    each = record(1, raw=b"x" * 9000).size
    for seq in range(1, 8):
        journal.append(record(seq, raw=b"x" * 9000))
    assert len(journal.records()) == 50_000 // each  # the session's budget, not the journal's own bound
    assert session.held == stub.held == journal.taken
    assert session.take("records", 3 * each)  # another kind short of room: the oldest calls go
    assert journal.taken == session.parts["calls"] and journal.records()[-1].seq == 7
    assert stub.take("rules", stub.limit - stub.held)  # the stub is full of what cannot be dropped: a new call
    journal.append(record(8, raw=b"x" * 9000))  # makes the session's own oldest go
    assert [r.seq for r in journal.records()] == [7, 8]
    journal.append(record(9, raw=b"x" * 30_000))  # more than all of them would free: refused, they stay
    assert [r.seq for r in journal.records()] == [7, 8] and journal.refused == 1
    journal.clear()
    assert session.parts.get("calls", 0) == 0


def test_calls_dropped_for_the_count_make_room_for_the_next_without_asking_the_budget_again():
    journal = Journal(size=3)
    for seq in range(1, 101):
        journal.append(record(seq))
    assert [r.seq for r in journal.records()] == [98, 99, 100] and journal.dropped == 97
    assert journal.memory.held == journal.taken <= journal.kept_bytes + 2 * AHEAD
    assert journal.memory.figures()["dropped"] == {}  # not for lack of room


def test_a_clear_gives_the_bytes_back():
    journal = Journal()
    journal.append(record(1))
    journal.clear()
    assert journal.memory.held == 0 and journal.kept_bytes == 0


def test_the_file_gets_every_call_complete_whatever_memory_keeps(tmp_path):
    journal = Journal(size=1, file=tmp_path / "calls.jsonl")
    for seq in (1, 2, 3):
        journal.append(record(seq))
    journal.close()
    lines = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [(c["seq"], c["body"], c["response"]["body"]) for c in lines] == [
        (n, {"id": 1, "name": "Fern"}, {"name": "Fern"}) for n in (1, 2, 3)]
    assert [r.seq for r in journal.records()] == [3]


def test_a_lone_surrogate_still_reaches_the_file(tmp_path):
    journal = Journal(file=tmp_path / "calls.jsonl")
    journal.append(record(1, raw=b'{"name": "\\ud800"}'))
    journal.close()
    [line] = (tmp_path / "calls.jsonl").read_text(encoding="ascii").splitlines()
    assert json.loads(line)["body"] == {"name": "\ud800"}


def test_a_failed_write_counts_its_calls_lost_and_the_next_one_starts_on_a_new_line(tmp_path, monkeypatch):
    import errno
    import os

    from plantstub.recording import journal_file

    real_write = os.write
    script = ["part", "full", "full"]  # a partial write, then the disk is full, then space again

    def write(fd, data):
        step = script.pop(0) if script else "ok"
        if step == "part":
            return real_write(fd, bytes(data[:5]))
        if step == "full":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(journal_file.os, "write", write)
    sink = journal_file.JournalFile(tmp_path / "calls.jsonl")
    sink.write(b'{"seq": 1}\n')
    sink.write(b'{"seq": 2}\n')
    sink.flush()
    assert (sink.lost, sink.written) == (2, 0)
    assert sink.problems() == [f"journal file {tmp_path / 'calls.jsonl'}: cannot write (No space left on device); "
                               "2 call(s) not written"]
    sink.write(b'{"seq": 3}\n')
    sink.flush()
    assert sink.problems() == [] and (sink.lost, sink.written) == (2, 1)
    sink.close()
    text = (tmp_path / "calls.jsonl").read_text()
    assert text == '{"seq\n{"seq": 3}\n'  # the torn line was ended, the next call is whole


def test_calls_alike_share_their_headers_path_and_answer_and_read_back_as_sent():
    # A client sends the same headers to the same path and gets the same answer, call after call: the journal keeps one
    # copy of each (issue 41: its 10,000 calls in less memory), and every call still reads back as it was sent.
    def made(n: int, payload: bytes) -> Record:
        return Record.of(n, 0.0, "POST", "".join(["/pla", "nts"]), "", ((b"Host", b"x"), (b"X-N", b"1")),
                         b'{"id": %d}' % n, NO_BODY, True, (), None, None, 201, {}, payload, True, None)

    first = made(1, b'{"name": "Fern"}')
    second = made(2, bytes(bytearray(b'{"name": "Fern"}')))
    other = made(3, b'{"name": "Ivy"}')
    assert second.raw_headers is first.raw_headers and second.path is first.path and second.payload is first.payload
    assert other.payload == b'{"name": "Ivy"}' and other.raw_headers is first.raw_headers
    assert [r.view().body for r in (first, second, other)] == [{"id": 1}, {"id": 2}, {"id": 3}]
    assert dict(other.headers) == {"Host": "x", "X-N": "1"}
    assert second.size == first.size  # the budget still counts what each holds


def test_calls_alike_share_one_shape_and_each_reads_back_as_its_own():
    # What calls alike have in common (method, query, verdict, status, reply headers, who answered) is kept once;
    # calls to a few endpoints in turn share theirs too (issue 41).
    def made(n: int, path: str = "/plants", status: int = 201, reply: dict[str, str] | None = None,
             parsed: object = NO_BODY, errors: tuple[str, ...] = ()) -> Record:
        return Record.of(n, 0.0, "POST", path, "", ((b"Host", b"x"),), b'{"id": %d}' % n, parsed, not errors, errors,
                         None, None, status, {} if reply is None else reply, b'{"name": "Fern"}', True, None)

    first, other, again, back = made(1), made(2, "/plants/2", 200), made(3), made(4, "/plants/2", 200)
    assert again.shape is first.shape and back.shape is other.shape and other.shape is not first.shape
    assert (back.status, back.path, again.status) == (200, "/plants/2", 201)
    # Equal reply headers in another order are not alike: each call shows the order it was sent in
    ab, ba = made(5, reply={"X-A": "1", "X-B": "2"}), made(6, reply={"X-B": "2", "X-A": "1"})
    assert list(ab.view().response["headers"]) == ["X-A", "X-B"] and list(ba.view().response["headers"]) == ["X-B", "X-A"]
    assert made(7, reply={"X-B": "2", "X-A": "1"}).shape is ba.shape
    # A form read into a dict is the call's own, never shared
    form = made(8, parsed={"name": "Fern"})
    assert made(9, parsed={"name": "Fern"}).shape is not form.shape and form.view().body == {"name": "Fern"}


def test_a_refusal_keeps_its_errors_once_and_reads_back_the_body_it_sent():
    errors = ("body.id: 'x1' is not of type 'integer'", "body: 'name' is a required property")
    sent = error_reply(400, "; ".join(errors)).payload  # what the check refuses a request with
    refused = Record.of(1, 0.0, "POST", "/plants", "", (), b'{"id": "x1"}', NO_BODY, False, errors, None, None, 400,
                        {"Content-Type": "application/json"}, bytes(bytearray(sent)), True, None)
    assert refused.sent is ERRORS_SENT and refused.payload == sent  # made again from the errors, the same bytes
    assert refused.errors == errors and Record.of(
        2, 0.0, "GET", "/x", "", (), b"", NO_BODY, False, errors[:1], None, None, 404, {}, b"", True, None,
    ).errors == errors[:1]  # one error kept as its text alone, read back as the tuple
    assert refused.view().response["body"] == {"error": 400, "message": "; ".join(errors)}
    # A rule's reply that only looks alike (another message) keeps its own bytes
    own = b'{"error":400,"message":"closed"}'
    kept = Record.of(2, 0.0, "POST", "/plants", "", (), b"{}", NO_BODY, False, errors, None, "r1", 400, {}, own, True,
                     None)
    assert kept.sent == own and kept.payload == own
    assert refused.size == Record.of(3, 0.0, "POST", "/plants", "", (), b'{"id": "x1"}', NO_BODY, False, errors, None,
                                     None, 400, {"Content-Type": "application/json"}, b"x" * len(sent), True, None).size


def test_bytes_taken_ahead_for_calls_never_cost_anything_recorded():
    """A call's take makes room for what it needs alone: the bytes ahead (a chunk) only when they fit as things are,
    so a budget full of another kind's records loses what one call needs, not a chunk's worth."""
    memory = Budget(64 * 20_000)  # a chunk of 20,000 bytes (a 64th)
    dropped: list[int] = []

    def shed(short: int) -> int:  # another kind's oldest records, 1,000 bytes each, dropped as asked
        freed = 0
        while freed < short:
            memory.give("other", 1000)
            freed += 1000
            dropped.append(1000)
        return freed

    memory.sheds("other", shed)
    assert memory.take("other", memory.limit)
    journal = Journal(max_bytes=10**9, memory=memory)
    journal.append(record(1))
    assert len(journal.records()) == 1
    assert sum(dropped) < record(1).size + 1000  # what the call needs, never its chunk ahead too
