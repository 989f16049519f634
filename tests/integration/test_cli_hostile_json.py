"""Issue 37, item 13: `plantstub coverage URL` and `plantstub import-har FILE` given JSON they do not expect (other
shapes, other types, nesting deeper than Python's stack) say in one line which URL or file and what is wrong, and exit
1, never with a traceback; `coverage` gives each URL an overall deadline (a server that drips its answer)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plantstub.cli import coverage, main
from plantstub.config import Settings
from plantstub.proxy.har import HarError, read_har
from plantstub.proxy.recorded_file import build
from plantstub.server.runtime import load

DEEP = b"[" * 100_000 + b"]" * 100_000


class _Answers(BaseHTTPRequestHandler):
    body = b"{}"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def answering() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(("body", "said"), [
    (b"[]", 'not a plantstub coverage report: expected {"operations": [...], ...}'),
    (b'{"operations": "all"}', 'not a plantstub coverage report: expected {"operations": [...], ...}'),
    (b'{"operations": [1]}', "not a plantstub coverage report: operations[0].operation: expected the operation's label"),
    (b'{"operations": [{"operation": "GET /x", "responses": [{"status": 200, "calls": 1}], "undeclared": {}}]}',
     'not a plantstub coverage report: operations[0].responses[0]: expected {"status": "200", "calls": N}'),
    (b'{"operations": [{"operation": "GET /x", "responses": [], "undeclared": {"500": "many"}}]}',
     'not a plantstub coverage report: operations[0].undeclared: expected {"STATUS": N, ...}'),
    (DEEP, "answered 200 with a body that is not JSON"),
], ids=["list", "operations-text", "operation-number", "status-number", "undeclared-text", "deep"])
def test_coverage_says_what_is_wrong_with_an_answer(answering, capsys, body, said):
    _Answers.body = body
    url = f"http://127.0.0.1:{answering.server_address[1]}"
    assert main(["coverage", url]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"plantstub: coverage of {url}: ") and said in err and err.count("\n") == 1


def test_coverage_gives_a_server_that_drips_a_deadline(monkeypatch, capsys):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def drip() -> None:
        connection, _ = listener.accept()
        with connection:
            for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n" + b" " * 99_999:
                if stop.wait(0.05):
                    return
                connection.sendall(bytes([byte]))

    threading.Thread(target=drip, daemon=True).start()
    monkeypatch.setattr(coverage, "COVERAGE_DEADLINE", 1.0)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    started = time.monotonic()
    try:
        assert main(["coverage", url]) == 1
    finally:
        stop.set()
        listener.close()
    assert time.monotonic() - started < 30  # not the drip's 5,000 s
    assert capsys.readouterr().err == (f"plantstub: coverage of {url}: {url} did not answer GET "
                                       "/__plantstub/coverage?total=true within 1 s\n")


HOSTILE_HARS = [
    [], {"log": []}, {"log": {"entries": {}}}, {"log": {"entries": [None, 1, "x", []]}},
    {"log": {"entries": [{"request": {"url": 5}, "response": {}}]}},
    {"log": {"entries": [{"request": {"url": "http://[::1"}, "response": {}}]}},
    {"log": {"entries": [{"request": {"url": "https://a.example/plants", "method": 7,
                                      "postData": [1], "headers": {"a": 1}},
                          "response": {"status": "200", "content": {"text": 5}, "headers": "x"}}]}},
    {"log": {"entries": [{"request": {"url": "https://a.example/plants", "method": "POST",
                                      "postData": {"mimeType": 5, "text": {"a": 1}}},
                          "response": {"status": True, "content": [], "headers": [None, {"name": 1}]}}]}},
    {"log": {"entries": [{"request": {"url": "https://a.example/plants", "method": "POST",
                                      "postData": {"mimeType": 5, "text": "{\"id\": 1, \"name\": \"x\"}"}},
                          "response": {"status": 200}}]}},
    {"log": {"entries": [{"request": {"url": "https://a.example/plants", "method": "POST",
                                      "postData": {"mimeType": "application/json", "text": "{\"id\": 1, \"name\": \"x\"}",
                                                   "encoding": 5}},
                          "response": {"status": 200, "content": {"mimeType": "application/json", "text": "!!",
                                                                  "encoding": "base64"}}}]}},
]


@pytest.mark.parametrize("har", HOSTILE_HARS, ids=[f"har{i}" for i in range(len(HOSTILE_HARS))])
def test_import_har_says_what_is_wrong_with_a_file(tmp_path, capsys, har):
    (tmp_path / "x.har").write_text(json.dumps(har))
    assert main(["import-har", str(tmp_path / "x.har"), "--out", str(tmp_path / "x.yaml")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"plantstub: {tmp_path / 'x.har'}: ") and "Traceback" not in err


def test_import_har_of_json_nested_past_the_stack(tmp_path, capsys):
    (tmp_path / "x.har").write_bytes(b'{"log": {"entries": ' + DEEP + b"}}")
    assert main(["import-har", str(tmp_path / "x.har"), "--out", str(tmp_path / "x.yaml")]) == 1
    assert capsys.readouterr().err == f"plantstub: {tmp_path / 'x.har'}: not a HAR log: nested too deep to read\n"


JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)),
                    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner,
                                                                                         max_size=4)), max_leaves=25)
TEXT = st.one_of(JSON, st.sampled_from(['{"id": 1, "name": "x"}', '{"name": "x"}', "{}", "[]", "eyJuYW1lIjogIngifQ==",
                                         "application/json", "text/html"]))
FIELDS = st.fixed_dictionaries({}, optional={
    "method": st.one_of(JSON, st.sampled_from(["POST", "GET", "post"])),
    "url": st.one_of(JSON, st.sampled_from(["https://a.example/plants", "https://a.example/v1/plants?x=1", "http://[::1"])),
    "postData": st.one_of(JSON, st.fixed_dictionaries({}, optional={"mimeType": TEXT, "text": TEXT, "encoding": TEXT})),
    "headers": st.one_of(JSON, st.lists(st.fixed_dictionaries({"name": TEXT, "value": TEXT}), max_size=2)),
    "status": st.one_of(JSON, st.integers(100, 599)),
    "content": st.one_of(JSON, st.fixed_dictionaries({}, optional={"mimeType": TEXT, "text": TEXT, "encoding": TEXT})),
})
RUNTIME = load(Settings(spec=None))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(JSON, st.fixed_dictionaries({}, optional={"request": FIELDS, "response": FIELDS})), max_size=4))
def test_no_har_entry_makes_import_har_fail_other_than_saying_why(entries):
    try:
        read = read_har({"log": {"entries": entries}}, RUNTIME.router, RUNTIME.served)
    except HarError:
        return
    document = build(read.exchanges, RUNTIME.contract)
    assert len(document.rules) <= len(read.exchanges) and all(isinstance(line, str) for line in read.left_out)
