"""Latency fault tolerance (RocketMQ's MQFaultStrategy; docs/architecture.md#send): a broker that
answered slowly or failed is avoided for a while that grows with its latency, using RocketMQ's table."""

from __future__ import annotations

import time
from collections.abc import Callable

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
        self.available_from = available_from  # monotonic seconds


class LatencyFaultTolerance:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._items: dict[str, _FaultItem] = {}

    def update(self, broker_name: str, latency_ms: float, *, failed: bool) -> None:
        latency = FAILURE_LATENCY_MS if failed else latency_ms
        self._items[broker_name] = _FaultItem(latency, self._clock() + backoff_for(latency) / 1000)

    def is_available(self, broker_name: str) -> bool:
        item = self._items.get(broker_name)
        return item is None or self._clock() >= item.available_from

    def least_bad(self, broker_names: list[str]) -> str | None:
        """Among brokers in back-off, the one that will be available soonest (ties: lowest latency)."""
        known = [
            (self._items[n].available_from, self._items[n].latency_ms, n) for n in broker_names if n in self._items
        ]
        return min(known)[2] if known else None
