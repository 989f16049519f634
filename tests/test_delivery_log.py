"""The delivery log is bounded in count and in bytes, keeps bodies as bytes, and says how many it dropped."""

from __future__ import annotations

from plantstub._budget import Budget
from plantstub.webhooks.deliveries import DeliveryLog, Sent


def sent(seq: int, payload: bytes) -> Sent:
    return Sent(seq, 1795478400.0, "/plant/webhook", "http://127.0.0.1:9/", payload, 1, 200, None, True)


BIG = b'{"name":"' + b"x" * 90 + b'"}'


def test_delivery_log_drops_the_oldest_beyond_its_bytes_and_counts_them():
    size = sent(1, BIG).size
    log = DeliveryLog(size=100, max_bytes=2 * size + size // 2)
    for seq in range(1, 6):
        log.add(sent(seq, BIG), log.epoch)
    assert [d.seq for d in log.snapshot()] == [4, 5]
    assert (log.recorded, log.dropped, log.bytes) == (5, 3, 2 * size)


def test_delivery_log_keeps_one_delivery_bigger_than_its_bytes():
    log = DeliveryLog(size=100, max_bytes=10)
    log.add(sent(1, BIG), log.epoch)
    assert [d.seq for d in log.snapshot()] == [1] and log.dropped == 0


def test_delivery_log_drops_beyond_its_count():
    log = DeliveryLog(size=2)
    for seq in range(1, 4):
        log.add(sent(seq, b"null"), log.epoch)
    assert [d.seq for d in log.snapshot()] == [2, 3] and log.dropped == 1
    assert log.clear() == 2 and log.snapshot() == [] and log.bytes == 0


def test_delivery_log_parses_bodies_when_read():
    log = DeliveryLog()
    log.add(sent(1, b'{"id":1,"big":123456789012345678901234567890}'), log.epoch)
    [delivery] = log.snapshot()
    assert delivery.body == {"id": 1, "big": 123456789012345678901234567890}
    assert delivery.as_dict()["body"] == delivery.body


def test_delivery_log_holds_its_bytes_in_the_budget_and_sheds_the_oldest():
    size = sent(1, BIG).size
    memory = Budget(3 * size)
    log = DeliveryLog(memory=memory)
    for seq in range(1, 5):
        log.add(sent(seq, BIG), log.epoch)
    assert [d.seq for d in log.snapshot()] == [2, 3, 4]
    assert memory.figures()["parts"] == {"deliveries": 3 * size}
    assert memory.figures()["dropped"] == {"deliveries": {"count": 1, "bytes": size}}
    assert memory.take("pending", 2 * size)  # another kind makes the log shed its oldest
    assert [d.seq for d in log.snapshot()] == [4] and log.dropped == 3
    log.clear()
    assert memory.figures()["parts"] == {"pending": 2 * size}
