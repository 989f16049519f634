"""The journal keeps calls as bytes, bounded by count and by bytes; the file still gets every call."""

from __future__ import annotations

import json

from plantstub._json import NO_BODY
from plantstub.recording.call import RECORD_OVERHEAD, Record
from plantstub.recording.journal import Journal

MB = 1024 * 1024


def record(seq: int, raw: bytes = b'{"id": 1, "name": "Fern"}', payload: bytes = b'{"name":"Fern"}') -> Record:
    return Record(seq, 0.0, "POST", "/plants", {}, {"Content-Type": "application/json"}, raw, NO_BODY, True, (),
                  None, None, 200, {"Content-Type": "application/json"}, payload, True, None)


def test_bodies_are_kept_as_bytes_and_parsed_when_read():
    journal = Journal()
    journal.append(record(1))
    [call] = journal.snapshot()
    assert call.body == {"id": 1, "name": "Fern"}
    assert call.response == {"status": 200, "headers": {"Content-Type": "application/json"}, "body": {"name": "Fern"}}
    assert journal.kept_bytes == len(b'{"id": 1, "name": "Fern"}') + len(b'{"name":"Fern"}') + RECORD_OVERHEAD


def test_the_byte_bound_drops_the_oldest_and_counts_what_it_dropped():
    big = b"[" + b"{}," * (MB // 3) + b"{}]"  # 1 MB of `{}`: 20 times that once parsed
    each = record(1, raw=big).size
    journal = Journal(size=1000, max_bytes=3 * each)
    for seq in range(1, 11):
        journal.append(record(seq, raw=big))
    assert [r.seq for r in journal.records()] == [8, 9, 10]
    assert journal.kept_bytes == 3 * each
    assert (journal.recorded, journal.dropped, journal.dropped_bytes) == (10, 7, 7 * each)


def test_the_newest_call_stays_even_when_it_alone_is_over_the_bound():
    journal = Journal(max_bytes=10)
    journal.append(record(1))
    journal.append(record(2))
    assert [r.seq for r in journal.records()] == [2]


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
