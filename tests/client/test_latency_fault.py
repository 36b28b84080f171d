"""Latency fault tolerance (``rocketq.client.latency``): which broker a send attempt goes to, and
when a slow or failed broker is avoided, with an injected clock."""

from __future__ import annotations

from rocketq.client.latency import LatencyFaultTolerance, select_queue
from rocketq.client.message import MessageQueue


class CountingClock:
    """A fake monotonic clock that counts its reads."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


QUEUES = [MessageQueue("T", broker, queue_id) for broker in ("a", "b") for queue_id in range(2)]


def test_a_slow_answer_avoids_the_broker_until_its_back_off_ends() -> None:
    clock = CountingClock()
    fault = LatencyFaultTolerance(clock)
    fault.update("a", 600, failed=False)  # 550 ms and more: 30 s of back-off
    assert not fault.is_available("a") and fault.is_available("b")
    clock.now += 29.9
    assert not fault.is_available("a")
    clock.now += 0.2
    assert fault.is_available("a")
    fault.update("a", 3, failed=False)
    fault.update("a", 4, failed=True)  # a failure counts as 30 s of latency: 10 minutes
    clock.now += 599
    assert not fault.is_available("a")


def test_healthy_answers_are_noted_without_reading_the_clock() -> None:
    clock = CountingClock()
    fault = LatencyFaultTolerance(clock)
    for latency_ms in (1, 5, 40, 549):
        fault.update("a", latency_ms, failed=False)
        assert fault.is_available("a")
    assert clock.reads == 0
    fault.update("a", 600, failed=False)  # a back-off needs the time it ends
    assert clock.reads == 1 and not fault.is_available("a")
    clock.now += 31
    fault.update("a", 2, failed=False)  # healthy again: available at once, whatever the clock says
    clock.now -= 31
    assert fault.is_available("a")


def test_queues_are_taken_round_robin_away_from_the_last_broker_and_backed_off_ones() -> None:
    clock = CountingClock()
    fault = LatencyFaultTolerance(clock)
    assert [select_queue(QUEUES, start, None, fault) for start in range(4)] == QUEUES
    assert select_queue(QUEUES, 0, "a", fault) == QUEUES[2]  # a retry leaves the broker that failed
    fault.update("b", 1000, failed=False)
    assert {select_queue(QUEUES, start, None, fault).broker_name for start in range(4)} == {"a"}
    assert select_queue(QUEUES, 2, None, None) == QUEUES[2]  # fault tolerance off: round-robin only


def test_when_every_broker_is_backed_off_the_one_back_soonest_is_taken() -> None:
    clock = CountingClock()
    fault = LatencyFaultTolerance(clock)
    fault.update("a", 0, failed=True)  # 10 minutes
    fault.update("b", 600, failed=False)  # 30 s
    assert {select_queue(QUEUES, start, None, fault).broker_name for start in range(4)} == {"b"}
    assert select_queue(QUEUES, 1, "b", fault).broker_name == "b"  # even right after it failed
