"""The delivery log is bounded in count and in bytes of bodies, and says how many it dropped."""

from __future__ import annotations

from plantstub.webhooks.deliveries import Delivery, DeliveryLog


def delivery(seq: int, body: object) -> Delivery:
    return Delivery(seq, "2026-11-24T00:00:00.000Z", "/plant/webhook", "http://127.0.0.1:9/", body, 1, 200, None, True)


def test_delivery_log_drops_the_oldest_beyond_its_bytes_and_counts_them():
    log = DeliveryLog(size=100, max_bytes=250)
    for seq in range(1, 6):
        log.add(delivery(seq, {"name": "x" * 90}), log.epoch)  # 101 bytes each as JSON
    assert [d.seq for d in log.snapshot()] == [4, 5]
    assert (log.recorded, log.dropped, log.bytes) == (5, 3, 202)


def test_delivery_log_keeps_one_delivery_bigger_than_its_bytes():
    log = DeliveryLog(size=100, max_bytes=10)
    log.add(delivery(1, {"name": "x" * 90}), log.epoch)
    assert [d.seq for d in log.snapshot()] == [1] and log.dropped == 0


def test_delivery_log_drops_beyond_its_count():
    log = DeliveryLog(size=2)
    for seq in range(1, 4):
        log.add(delivery(seq, None), log.epoch)
    assert [d.seq for d in log.snapshot()] == [2, 3] and log.dropped == 1
    assert log.clear() == 2 and log.snapshot() == [] and log.bytes == 0
