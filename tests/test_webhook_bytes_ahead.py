"""A session's webhooks hold their bytes in the memory budget taken ahead in chunks (issue 41, webhooks/ahead.py), as
the journal does: the budget counts the deliveries waiting and kept, plus at most two chunks, gives that spare first
to another kind short of room, and holds nothing once the deliveries are cleared."""

from __future__ import annotations

from plantstub import Stub
from plantstub._budget import Budget
from plantstub.webhooks.ahead import Ahead
from plantstub.webhooks.deliveries import DeliveryLog, Sent
from plantstub.webhooks.sender import Sender, job
from tests.helpers import HANG, Receiver, call

NEW_PLANT = {"id": 7, "name": "Fern", "tag": "green"}


def test_bytes_are_taken_a_chunk_ahead_and_what_lies_spare_beyond_two_chunks_goes_back():
    memory = Budget(64 * 1000)  # a chunk of 1,000 bytes (a 64th)
    ahead = Ahead(memory, "pending")
    assert ahead.chunk == 1000
    assert ahead.take(300) and (memory.held, ahead.spare) == (1300, 1000)
    assert ahead.take(900) and (memory.held, ahead.spare) == (1300, 100)  # from the spare: the budget not asked
    assert ahead.take(300) and (memory.held, ahead.spare) == (2500, 1000)  # the spare and the rest, a chunk more
    ahead.give(300)
    assert (memory.held, ahead.spare) == (2500, 1300)  # spare: the budget not asked
    ahead.give(1200)
    assert (memory.held, ahead.spare) == (1000, 1000)  # beyond two chunks: back to the budget, a chunk kept
    assert memory.figures()["parts"] == {"pending": 1000}


def test_a_take_uses_the_spare_and_only_the_rest_when_the_budget_is_nearly_full():
    memory = Budget(6400)  # a chunk of 100 bytes
    ahead = Ahead(memory, "deliveries")
    assert ahead.take(6000) and (memory.held, ahead.spare) == (6100, 100)
    assert ahead.take(350) and (memory.held, ahead.spare) == (6350, 0)  # no room for a chunk more: the rest alone
    assert not ahead.take(100) and (memory.held, ahead.spare) == (6350, 0)
    ahead.give(50)
    assert not ahead.take(200) and ahead.spare == 50  # refused: the spare stays spare, held
    ahead.lost(200)
    assert memory.figures()["dropped"] == {"deliveries": {"count": 1, "bytes": 200}}


def test_another_kind_short_of_room_gets_the_spare_first():
    memory = Budget(6400)
    log = DeliveryLog(memory=memory)
    sent = Sent(1, 1795478400.0, "/plant/webhook", "http://127.0.0.1:9/", b"{}" * 100, 1, 200, None, True)
    log.add(sent, log.epoch)
    assert memory.figures()["parts"] == {"deliveries": sent.size + 100}  # with a chunk ahead
    assert memory.take("rules", 6400 - sent.size)  # fits once the spare is given back: the delivery stays kept
    assert [d.seq for d in log.snapshot()] == [1] and log.dropped == 0
    assert memory.figures()["parts"] == {"deliveries": sent.size, "rules": 6400 - sent.size}


def _memory(url: str) -> dict:
    status, figures = call(url, "GET", "/__plantstub/health")
    assert status == 200, figures
    return figures["memory"]["session"]["parts"]  # type: ignore[index]


def test_health_counts_the_deliveries_kept_and_nothing_once_they_are_cleared():
    with Receiver() as receiver, Stub(spec="plant-store-full", webhook=[receiver.url]) as stub:
        for n in range(30):
            assert call(stub.url, "POST", "/plants", {**NEW_PLANT, "id": n})[0] == 200
        got = stub.wait_for_deliveries(30, timeout=HANG)
        kept = sum(len(d.url) + len(d.name) + len(b'{"id":%d,"name":"Fern","tag":"green"}' % (d.seq - 1)) + 350
                   for d in got)
        parts = _memory(stub.url)
        assert kept <= parts["deliveries"] <= kept + 2 * 64 * 1024
        assert parts.get("pending", 0) <= 2 * 64 * 1024  # nothing waits: at most the spare taken ahead
        stub.reset()
        parts = _memory(stub.url)
        assert "deliveries" not in parts and "pending" not in parts


def test_bytes_taken_ahead_never_cost_a_delivery_already_logged():
    """In a budget full of logged deliveries, a waiting delivery's take makes room for what it needs alone: the chunk
    ahead is taken only when it fits as things are (before, 64 KiB of logged deliveries went for bytes nobody used)."""
    memory = Budget(4 * 2**20)
    log = DeliveryLog(max_bytes=64 * 2**20, memory=memory)
    pending = Ahead(memory, "pending")
    memory.sheds("pending", pending.shed)
    n = 0
    while not log.dropped:  # the budget full of logged deliveries
        log.add(Sent(n, 0.0, "newPlant", "http://127.0.0.1:1/h", b"x" * 600, 1, 200, None, True), log.epoch)
        n += 1
    kept, dropped = len(log.items), log.dropped
    assert pending.take(1000)
    assert log.dropped - dropped <= 1000 // 600 + 1 and len(log.items) >= kept - 2  # what 1,000 bytes need, no more
    assert pending.spare == 0 and memory.figures()["parts"]["pending"] == 1000


def test_bytes_handed_over_to_the_log_leave_the_budget_as_a_give_and_a_take_do():
    """A delivery's bytes handed from the deliveries waiting to the log in one lock round trip (Ahead.hand_over) leave
    the budget's figures and each spare exactly as the give() and the take() they stand for, or do nothing."""
    sizes = [(300, 900), (5000, 40), (700, 700), (64, 6000), (2500, 2500), (10, 10), (6000, 300)] * 6
    handing = Budget(64 * 1000)  # a chunk of 1,000 bytes
    pending = Ahead(handing, "pending")
    deliveries = Ahead(handing, "deliveries", pending.lock)
    stepping = Budget(64 * 1000)
    pending_2, deliveries_2 = Ahead(stepping, "pending"), Ahead(stepping, "deliveries")
    handed = 0
    logged: list[int] = []
    for waited, kept in sizes:
        while sum(logged) > 30_000:  # the log drops its oldest
            size = logged.pop(0)
            deliveries.give(size)
            deliveries_2.give(size)
        logged.append(kept)
        assert pending.take(waited) and pending_2.take(waited)
        if pending.hand_over(waited, deliveries, kept):
            handed += 1
        else:
            pending.give(waited)
            assert deliveries.take(kept)
        pending_2.give(waited)
        assert deliveries_2.take(kept)
        assert handing.figures() == stepping.figures()
        assert (pending.spare, deliveries.spare) == (pending_2.spare, deliveries_2.spare)
    assert 0 < handed < len(sizes)  # both ways were taken


def test_a_log_handed_a_delivery_keeps_and_drops_as_when_its_bytes_were_given_back_first():
    """DeliveryLog.add(sent, epoch, waiting, waited): the bytes the delivery held while it waited go back, whether the
    log has room (one lock round trip), must drop its oldest first (count or bytes), or the delivery is of an epoch
    before a reset; what is kept and dropped and the budget's figures are those of a give() then an add()."""
    def run(handed: bool) -> tuple[list[int], int, dict]:
        memory = Budget(64 * 1000)
        log = DeliveryLog(size=6, max_bytes=5 * 1500, memory=memory)
        waiting = Ahead(memory, "pending", log.held.lock if handed and log.held is not None else None)
        for n in range(1, 30):
            payload = b"x" * (100 * (n % 13))
            waited = len(payload) + 400
            assert waiting.take(waited)
            epoch = log.epoch - 1 if n % 7 == 0 else log.epoch  # decided before a reset: not kept
            sent = Sent(n, 0.0, "newPlant", "http://127.0.0.1:1/h", payload, 1, 204, None, True)
            if handed:
                log.add(sent, epoch, waiting, waited)
            else:
                waiting.give(waited)
                log.add(sent, epoch)
        return [sent.seq for sent in log.kept()], log.dropped, memory.figures()

    kept, dropped, figures = run(handed=True)
    assert (kept, dropped, figures) == run(handed=False)
    assert dropped > 0 and 28 not in kept and 29 in kept  # 28: of the epoch before


def test_the_log_holds_each_delivery_answered_by_its_size():
    """What the delivery log counts for each delivery a receiver answered (the budget's "deliveries") is its Sent.size,
    with the words of an undeclared status and without, a password in the URL shown as `***`; nothing stays pending."""
    memory = Budget(64 * 1000)
    log = DeliveryLog(memory=memory)

    class Outbox:
        def ready(self, sender: Sender) -> None:
            pass

    sender = Sender(log, Outbox(), memory)
    urls = ("http://127.0.0.1:1/h", "http://user:secret@127.0.0.1:1/h")
    sender.submit_to(urls, "newPlant", b'{"id":1}', None)
    sender.submit(job(log, "newPlant", "http://127.0.0.1:1/other", b"[]", None))
    for status, waiting in zip((200, 418, 404), list(sender.queue), strict=True):
        sender.answered(waiting, 1, status)
    kept = log.kept()
    assert [(sent.status, bool(sent.error), sent.url) for sent in kept] == [
        (200, False, urls[0]), (418, True, "http://user:***@127.0.0.1:1/h"), (404, True, "http://127.0.0.1:1/other")]
    assert log.bytes == sum(sent.size for sent in kept)
    assert memory.figures()["parts"]["deliveries"] == log.bytes + log.held.spare  # type: ignore[union-attr]
    assert memory.figures()["parts"].get("pending", 0) == sender.held.spare  # type: ignore[union-attr]
