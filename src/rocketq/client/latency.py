"""Latency fault tolerance (RocketMQ's MQFaultStrategy; docs/architecture.md#send): a broker that
answered slowly or failed is avoided for a while that grows with its latency, using RocketMQ's table."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from rocketq.client.message import MessageQueue

# latency (ms) at or above which a broker is avoided for the matching duration (ms)
LATENCY_MAX_MS = (50, 100, 550, 1000, 2000, 3000, 15000)
NOT_AVAILABLE_MS = (0, 0, 30000, 60000, 120000, 180000, 600000)
FAILURE_LATENCY_MS = 30000  # a failed send counts as this latency


def backoff_for(latency_ms: float) -> float:
    if latency_ms < LATENCY_MAX_MS[2]:  # every healthy send: no back-off, and no walk of the table
        return 0
    for step in range(len(LATENCY_MAX_MS) - 1, -1, -1):
        if latency_ms >= LATENCY_MAX_MS[step]:
            return NOT_AVAILABLE_MS[step]
    return 0


class _FaultItem:
    __slots__ = ("available_from", "latency_ms")

    def __init__(self, latency_ms: float, available_from: float) -> None:
        self.latency_ms = latency_ms
        self.available_from = available_from  # monotonic seconds; 0.0: no back-off (noted without the clock)


class LatencyFaultTolerance:
    """The latest latency of each broker and until when it is avoided.

    A healthy answer (no back-off) is noted without reading the clock: a broker never backed off is
    "available from 0", and ``is_available`` reads the clock only for a broker in back-off (a clock read
    costs about 0.35 µs on a host that traps the TSC, and every send notes its latency). After a
    healthy answer to a healthy broker only its latency is replaced; any other change replaces the
    broker's item, so a thread sending beside the loop (``rocketq.client.blocking_send``) sees one
    item or the other, each whole."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._items: dict[str, _FaultItem] = {}

    def update(self, broker_name: str, latency_ms: float, *, failed: bool) -> None:
        latency = FAILURE_LATENCY_MS if failed else latency_ms
        backoff_ms = backoff_for(latency)
        if not backoff_ms:
            item = self._items.get(broker_name)
            if item is not None and item.available_from == 0.0:  # healthy before and now: one store
                item.latency_ms = latency
                return
        available_from = self._clock() + backoff_ms / 1000 if backoff_ms else 0.0
        self._items[broker_name] = _FaultItem(latency, available_from)

    def is_available(self, broker_name: str) -> bool:
        item = self._items.get(broker_name)
        return item is None or item.available_from == 0.0 or self._clock() >= item.available_from

    def least_bad(self, broker_names: list[str]) -> str | None:
        """Among brokers in back-off, the one that will be available soonest (ties: lowest latency)."""
        known = [
            (self._items[n].available_from, self._items[n].latency_ms, n) for n in broker_names if n in self._items
        ]
        return min(known)[2] if known else None


def select_queue(
    queues: Sequence[MessageQueue], start: int, last_broker: str | None, fault: LatencyFaultTolerance | None
) -> MessageQueue:
    """The queue a send attempt goes to (Java's MQFaultStrategy.selectOneMessageQueue): the first of
    ``queues`` from index ``start`` on (round-robin) whose broker is not ``last_broker`` (the one the
    previous attempt failed on) and, with ``fault`` (latency fault tolerance on), not in back-off; when
    every broker is, a queue of the one that leaves back-off soonest."""
    count = len(queues)
    if fault is None:
        for i in range(count):
            queue = queues[(start + i) % count]
            if queue.broker_name != last_broker:
                return queue
        return queues[start % count]
    for i in range(count):
        queue = queues[(start + i) % count]
        if fault.is_available(queue.broker_name) and (last_broker is None or queue.broker_name != last_broker):
            return queue
    brokers = sorted({q.broker_name for q in queues})
    best = fault.least_bad(brokers)
    candidates = [q for q in queues if q.broker_name == best] or queues
    return candidates[start % len(candidates)]
