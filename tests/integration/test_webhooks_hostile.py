"""Webhooks and callbacks under attack, through `plantstub serve` and raw HTTP: bodies held in bytes within the
session's budget (pending and logged), no callback to the stub itself, nothing pending lost silently, sockets bounded
across sessions, losses reported until a reset, URLs shown without their password and refused with control
characters."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.helpers import AUTH, HANG, JSON_AUTH, SPECS, Receiver, Silent, address, call, raw_call, resident_bytes, write

MIB = 2**20
CALLBACKS = SPECS / "subscriptions-callbacks.openapi.yaml"


def rich_plant(i: int, items: int = 20_000) -> bytes:
    """A valid NewPlant of ~60 KB whose parsed form is ~20x bigger: 20,000 empty objects."""
    return json.dumps({"id": i, "name": "Fern", "extra": [{}] * items}, separators=(",", ":")).encode()


def post_plants(url: str, bodies: list[bytes], path: str = "/plants") -> list[int]:
    """POST each body on one kept-alive connection; the statuses."""
    import http.client
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    statuses = []
    try:
        for body in bodies:
            connection.request("POST", path, body=body, headers=JSON_AUTH)
            answer = connection.getresponse()
            answer.read()
            statuses.append(answer.status)
    finally:
        connection.close()
    return statuses


def health(url: str, session: str = "") -> tuple[int, Any]:
    status, body, _ = raw_call(url, "GET", f"{session}/__plantstub/health")
    return status, json.loads(body)


def until(check: Callable[[], bool], timeout: float = HANG) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.05)


def test_pending_deliveries_hold_their_bodies_as_bytes_within_the_session_budget(serve, tmp_path) -> None:
    # D17: a receiver that never answers and bodies rich in `{}` (parsed: ~20x their JSON) piled up without bound.
    with Silent() as hanging:
        stub = serve("--spec", "plant-store-full", "--port", "0", "--max-bytes", str(MIB), "--webhook", hanging.url,
                     cwd=tmp_path)
        before = resident_bytes(stub.proc.pid)
        assert post_plants(stub.url, [rich_plant(i) for i in range(30)]) == [200] * 30
        grown = resident_bytes(stub.proc.pid) - before
        status, figures = health(stub.url)
        hooks, memory = figures["webhooks"], figures["memory"]["session"]
        assert hooks["lost"] > 0 and hooks["pending"] > 0 and hooks["pending"] + hooks["lost"] == 30
        assert len(rich_plant(0)) * hooks["pending"] <= memory["parts"]["pending"] <= MIB
        assert memory["dropped"]["pending"]["count"] == hooks["lost"]
        assert status == 503 and {"at": "webhooks", "message": (
            f"{hooks['lost']} deliveries were not sent: the session's memory budget (--max-bytes) had no room for "
            "them while they waited to be sent")} in figures["problems"]
        assert grown < 24 * MIB  # was ~40 MB: each waiting body held parsed


def test_delivery_log_keeps_bodies_as_bytes_and_drops_the_oldest_within_the_budget(serve, tmp_path) -> None:
    # D19: the log counted the JSON bytes of its bodies but held them parsed, outside any memory budget.
    with Receiver() as receiver:
        stub = serve("--spec", "plant-store-full", "--port", "0", "--max-bytes", str(MIB), "--webhook", receiver.url,
                     cwd=tmp_path)
        assert post_plants(stub.url, [rich_plant(i) for i in range(30)]) == [200] * 30
        until(lambda: health(stub.url)[1]["webhooks"]["delivered"] == 30)
        status, figures = health(stub.url)
        hooks, memory = figures["webhooks"], figures["memory"]["session"]
        assert status == 200 and hooks["pending"] == 0 and hooks["dropped"] > 0
        kept = 30 - hooks["dropped"]
        assert len(rich_plant(0)) * kept <= memory["parts"]["deliveries"] <= MIB
        assert memory["dropped"]["deliveries"]["count"] == hooks["dropped"]
        listed = call(stub.url, "GET", "/__plantstub/deliveries")[1]
        assert isinstance(listed, list) and len(listed) == kept
        ids = {d["body"]["id"] for d in listed}  # the last recorded (they end in any order), parsed when read
        assert len(ids) == kept and listed[-1]["body"] == json.loads(rich_plant(listed[-1]["body"]["id"]))


def test_callback_never_reaches_the_stubs_own_admin_api(serve, tmp_path) -> None:
    # D18: a callback URL from a request body named the stub's admin API and reset this session and another.
    stub = serve("--spec", str(CALLBACKS), "--port", "0", cwd=tmp_path)
    port = str(address(stub.url)[1])
    assert call(stub.url, "POST", "/__plantstub/sessions", {"id": "other"})[0] == 201
    assert raw_call(stub.url, "GET", "/__session/other/subscriptions/1", headers=AUTH)[0] in (200, 404)
    targets = [f"http://127.0.0.1:{port}/__plantstub/reset?", f"http://localhost:{port}/__plantstub/reset?",
               f"http://0.0.0.0:{port}/__session/other/__plantstub/reset?", f"http://[::1]:{port}/__plantstub/reset?",
               f"http://127.0.0.2:{port}/__plantstub/reset?", f"http://[::ffff:127.0.0.1]:{port}/__plantstub/reset?"]
    for target in targets:
        assert call(stub.url, "POST", "/subscriptions?topic=t", {"callbackUrl": target})[0] == 201
    until(lambda: len(call(stub.url, "GET", "/__plantstub/deliveries")[1]) == len(targets))  # type: ignore[arg-type]
    listed = call(stub.url, "GET", "/__plantstub/deliveries")[1]
    assert isinstance(listed, list)
    for delivery in listed:
        assert (delivery["attempts"], delivery["status"], delivery["valid"]) == (0, None, False), delivery
        assert delivery["error"].startswith("not sent: ") and delivery["error"].endswith(
            " where this stub listens; a callback URL taken from a request never targets the stub itself (subscribe "
            "the URL to send webhooks there)")
    assert [d["error"].split(" where")[0] for d in listed if "localhost" in d["url"]] == [
        f"not sent: localhost:{port} resolves to 127.0.0.1,"]
    assert len(call(stub.url, "GET", "/__plantstub/calls")[1]) == len(targets)  # type: ignore[arg-type]
    assert len(call(stub.url, "GET", "/__session/other/__plantstub/calls")[1]) == 1  # type: ignore[arg-type]


def test_delivery_subscribed_to_the_admin_api_is_refused_there(serve, tmp_path) -> None:
    # Defence in depth: whatever its URL, a request carrying the deliveries' own header never drives the admin API.
    stub = serve("--spec", "plant-store-full", "--port", "0", cwd=tmp_path)
    assert call(stub.url, "PUT", "/__plantstub/webhooks", {"*": stub.url + "/__plantstub/reset"})[0] == 200
    assert call(stub.url, "POST", "/plants", {"id": 1, "name": "Fern"})[0] == 200
    until(lambda: len(call(stub.url, "GET", "/__plantstub/deliveries")[1]) == 1)  # type: ignore[arg-type]
    [delivery] = call(stub.url, "GET", "/__plantstub/deliveries")[1]  # type: ignore[misc]
    assert delivery["status"] == 403
    assert len(call(stub.url, "GET", "/__plantstub/calls")[1]) == 1  # type: ignore[arg-type]  # no reset


LATER = """\
rules:
  - match: {method: POST, path: /plants}
    reply: {status: 200, body: {name: Fern}}
    webhooks:
      - {name: /plant/webhook, delay_ms: 60000}
"""


def test_sigterm_sends_pending_deliveries_within_the_grace(serve, tmp_path) -> None:
    # D25: deliveries still pending (a receiver taking its time, a rule's delay) were lost at SIGTERM, exit 0.
    write(tmp_path, "later.yaml", LATER)
    with Receiver(delay=0.5) as slow:
        stub = serve("--spec", "plant-store-full", "--port", "0", "--scenarios", str(tmp_path), "--scenario", "later",
                     "--webhook", slow.url, cwd=tmp_path)
        assert post_plants(stub.url, [b'{"id": %d, "name": "Fern"}' % i for i in range(3)]) == [200] * 3
        assert stub.stop(signal.SIGTERM) == 0, stub.stderr
        assert sorted(r["body"]["id"] for r in slow.received) == [0, 1, 2]
        assert "webhook" not in stub.stderr


def test_sigterm_counts_what_the_grace_could_not_send_and_exits_1(serve, tmp_path) -> None:
    with Silent() as hanging:
        stub = serve("--spec", "plant-store-full", "--port", "0", "--webhook", hanging.url, cwd=tmp_path)
        assert post_plants(stub.url, [b'{"id": %d, "name": "Fern"}' % i for i in range(2)]) == [200] * 2
        started = time.monotonic()
        assert stub.stop(signal.SIGTERM) == 1
        assert time.monotonic() - started > 2.5  # the grace is waited out (no more: the deliveries are still pending)
        assert stub.stderr.strip().splitlines()[-1] == (
            "plantstub: 2 webhook deliveries were not sent (still pending when the 3 s grace at stop or at their "
            "session's end ran out); exit status 1")


def test_session_end_sends_pending_deliveries_and_counts_the_rest(serve, tmp_path) -> None:
    # D25: a session's pending deliveries were lost silently when it ended.
    write(tmp_path, "later.yaml", LATER)
    with Receiver() as receiver, Silent() as hanging:
        stub = serve("--spec", "plant-store-full", "--port", "0", "--scenarios", str(tmp_path), "--scenario", "later",
                     cwd=tmp_path)
        for sid, url in (("kept", receiver.url), ("hung", hanging.url)):
            assert call(stub.url, "POST", "/__plantstub/sessions", {"id": sid})[0] == 201
            assert call(stub.url, "PUT", f"/__session/{sid}/__plantstub/webhooks", {"*": url})[0] == 200
            assert post_plants(stub.url, [b'{"id": 1, "name": "Fern"}'], f"/__session/{sid}/plants") == [200]
        assert call(stub.url, "DELETE", "/__plantstub/sessions/kept")[0] == 200
        until(lambda: len(receiver.received) == 1, timeout=30)  # its delay (60 s) is not waited out
        assert call(stub.url, "DELETE", "/__plantstub/sessions/hung")[0] == 200
        until(lambda: health(stub.url)[1]["webhooks"]["unsent_at_session_end"] == 1)
        assert stub.stop(signal.SIGTERM) == 1
        assert "plantstub: session 'hung' ended; webhook deliveries not sent within the 3 s grace: 1" \
            in stub.stderr.splitlines()


def test_deliveries_of_many_sessions_share_one_bound_on_sockets(serve, tmp_path) -> None:
    # D26: each session sent 100 deliveries at once: 20 sessions used every descriptor, clients stalled and
    # deliveries were reported unreachable though the receiver was there.
    sessions, each = 20, 15
    # Each delivery takes 2 s: time for health to be answered while the last ones wait, well within the 5 s a
    # receiver has for an attempt
    with Receiver(delay=2.0) as slow:
        stub = serve("--spec", "plant-store-full", "--port", "0", cwd=tmp_path, open_files=180)
        descriptors = Path(f"/proc/{stub.proc.pid}/fd")
        for i in range(sessions):
            assert call(stub.url, "POST", "/__plantstub/sessions", {"id": f"s{i}"})[0] == 201
            assert call(stub.url, "PUT", f"/__session/s{i}/__plantstub/webhooks", {"*": slow.url})[0] == 200
        idle = len(list(descriptors.iterdir()))
        most = 0
        for i in range(sessions):
            assert post_plants(stub.url, [b'{"id": %d, "name": "Fern"}' % n for n in range(each)],
                               f"/__session/s{i}/plants") == [200] * each
            most = max(most, len(list(descriptors.iterdir())))
        assert health(stub.url)[0] == 200  # a new client is answered while 300 deliveries go out:
        status, last = health(stub.url, f"/__session/s{sessions - 1}")  # the last session's, posted last, wait 2 s
        assert status == 200 and last["webhooks"]["pending"] > 0, last["webhooks"]
        assert most - idle <= 100 + 2  # the stub-wide bound, and the client's connection

        def listed(i: int) -> list[Any]:
            found = call(stub.url, "GET", f"/__session/s{i}/__plantstub/deliveries")[1]
            assert isinstance(found, list)
            return found

        until(lambda: all(len(listed(i)) == each for i in range(sessions)))
        for i in range(sessions):
            assert {(d["status"], d["error"]) for d in listed(i)} == {(200, None)}
        assert len(slow.received) == sessions * each


def test_delivery_losses_are_reported_until_a_reset(serve, tmp_path) -> None:
    # D30: one overflow of the delivery queue kept health at 503 for good; reset did not clear it.
    with Silent() as hanging:
        stub = serve("--spec", "plant-store-full", "--port", "0", "--webhook", hanging.url, cwd=tmp_path)
        assert set(post_plants(stub.url, [b'{"id": 1, "name": "Fern"}'] * 1150)) == {200}
        status, figures = health(stub.url)
        assert status == 503 and figures["webhooks"]["lost"] == 50
        assert call(stub.url, "POST", "/__plantstub/reset")[0] == 200
        status, figures = health(stub.url)
        assert (status, figures["status"], figures["webhooks"]["lost"]) == (200, "ok", 0)
        assert set(post_plants(stub.url, [b'{"id": 1, "name": "Fern"}'] * 1050)) == {200}
        assert health(stub.url)[0] == 503  # the 100 still in flight, and 1,000 waiting: 50 more lost
        assert call(stub.url, "DELETE", "/__plantstub/deliveries")[0] == 200
        assert health(stub.url)[0] == 200


def test_subscription_password_is_shown_as_stars_and_sent_as_given(serve, tmp_path) -> None:
    with Receiver() as receiver:
        secret = receiver.url.replace("http://", "http://user:s3cret@") + "/hook"
        shown = receiver.url.replace("http://", "http://user:***@") + "/hook"
        stub = serve("--spec", "plant-store-full", "--port", "0", cwd=tmp_path)
        assert call(stub.url, "PUT", "/__plantstub/webhooks", {"*": secret}) == (200, {"*": shown})
        assert call(stub.url, "GET", "/__plantstub/webhooks") == (200, {"*": shown})
        # What GET showed, sent back with one more (as Stub.connect's subscribe does): the password stays.
        both = {"*": shown, "/plant/webhook": receiver.url + "/one"}
        assert call(stub.url, "PUT", "/__plantstub/webhooks", both) == (200, both)
        assert call(stub.url, "POST", "/plants", {"id": 1, "name": "Fern"})[0] == 200
        until(lambda: len(receiver.received) == 2)
        [got] = [r for r in receiver.received if r["path"] == "/hook"]
        assert got["headers"]["Authorization"] == "Basic dXNlcjpzM2NyZXQ="  # user:s3cret
        until(lambda: len(call(stub.url, "GET", "/__plantstub/deliveries")[1]) == 2)  # type: ignore[arg-type]
        status, raw, _ = raw_call(stub.url, "GET", "/__plantstub/deliveries")
        assert status == 200 and b"s3cret" not in raw and shown.encode() in raw


def test_urls_with_control_characters_are_refused(serve, tmp_path) -> None:
    full = serve("--spec", "plant-store-full", "--port", "0", cwd=tmp_path)
    injected = "http://127.0.0.1:9/a\r\nX-Injected: 1"
    status, answer = call(full.url, "PUT", "/__plantstub/webhooks", {"*": injected})
    assert status == 400 and isinstance(answer, dict)
    assert answer["message"] == ("body.*: 'http://127.0.0.1:9/a\\r\\nX-Injected: 1' holds a control character "
                                 "('\\r' at 20); a URL cannot")
    stub = serve("--spec", str(CALLBACKS), "--port", "0", cwd=tmp_path)
    assert call(stub.url, "POST", "/subscriptions?topic=t", {"callbackUrl": injected})[0] == 201
    until(lambda: len(call(stub.url, "GET", "/__plantstub/deliveries")[1]) == 1)  # type: ignore[arg-type]
    [delivery] = call(stub.url, "GET", "/__plantstub/deliveries")[1]  # type: ignore[misc]
    assert (delivery["attempts"], delivery["status"]) == (0, None)
    assert delivery["error"] == ("not sent: 'http://127.0.0.1:9/a\\r\\nX-Injected: 1/events?topic=t' holds a control "
                                 "character ('\\r' at 20); a URL cannot")
