from __future__ import annotations

from rocketq.broker.rebalance_locks import RebalanceLockTable
from rocketq.protocol import MessageQueue


def mq(queue_id: int, topic: str = "T") -> MessageQueue:
    return MessageQueue(topic=topic, broker_name="broker-a", queue_id=queue_id)


def test_first_client_wins_and_the_other_gets_nothing() -> None:
    table = RebalanceLockTable(max_live_ms=1000)
    assert table.try_lock_batch("G", "c1", [mq(0), mq(1)], now_ms=0) == [mq(0), mq(1)]
    assert table.try_lock_batch("G", "c2", [mq(0), mq(1)], now_ms=10) == []
    assert table.try_lock_batch("G", "c2", [mq(1), mq(2)], now_ms=10) == [mq(2)]
    assert table.holder("G", mq(2), now_ms=10) == "c2"
    assert table.is_locked_by("G", mq(0), "c1", now_ms=10)


def test_groups_are_independent() -> None:
    table = RebalanceLockTable(max_live_ms=1000)
    assert table.try_lock_batch("G1", "c1", [mq(0)], now_ms=0) == [mq(0)]
    assert table.try_lock_batch("G2", "c2", [mq(0)], now_ms=0) == [mq(0)]


def test_expiry_and_renewal() -> None:
    table = RebalanceLockTable(max_live_ms=1000)
    table.try_lock_batch("G", "c1", [mq(0)], now_ms=0)
    assert table.try_lock_batch("G", "c2", [mq(0)], now_ms=1000) == []  # exactly max_live_ms: still alive
    assert table.try_lock_batch("G", "c1", [mq(0)], now_ms=900) == [mq(0)]  # renewed at 900
    assert table.try_lock_batch("G", "c2", [mq(0)], now_ms=1800) == []
    assert table.holder("G", mq(0), now_ms=1901) is None
    assert table.try_lock_batch("G", "c2", [mq(0)], now_ms=1901) == [mq(0)]
    assert table.holder("G", mq(0), now_ms=1901) == "c2"


def test_unlock_releases_only_the_holders_locks() -> None:
    table = RebalanceLockTable(max_live_ms=1000)
    table.try_lock_batch("G", "c1", [mq(0), mq(1)], now_ms=0)
    table.unlock_batch("G", "c2", [mq(0)])
    assert table.holder("G", mq(0), now_ms=1) == "c1"
    table.unlock_batch("G", "c1", [mq(0)])
    assert table.holder("G", mq(0), now_ms=1) is None
    assert table.try_lock_batch("G", "c2", [mq(0), mq(1)], now_ms=2) == [mq(0)]
    table.unlock_batch("G", "c2", [mq(0)])
    table.unlock_batch("G", "c1", [mq(1)])
    table.unlock_batch("unknown", "c1", [mq(1)])
    assert table.holder("G", mq(1), now_ms=3) is None


def test_duplicate_queues_in_one_request_are_returned_once() -> None:
    table = RebalanceLockTable()
    assert table.try_lock_batch("G", "c1", [mq(0), mq(0)], now_ms=0) == [mq(0)]
