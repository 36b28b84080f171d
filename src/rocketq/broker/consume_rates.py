"""ConsumeRates: how fast each consumer group takes messages from each topic, the ``consumeTps`` of
GET_CONSUME_STATS (Java's BrokerStatsManager counts the same, GROUP_GET_NUMS, per topic and group).
The totals, their bytes and where each group's pulls reached per queue are also what the Prometheus
metrics report (``rocketq.metrics.broker``: messages out, throughput out, in-flight messages).

Pulls add the messages they return (``record``, on the loop's thread: dict updates per pull); every
``SAMPLE_INTERVAL_S`` the broker keeps a copy of the totals (``sample``), and a rate is the growth of a
total since the oldest copy of the last minute."""

from __future__ import annotations

from collections import deque
from typing import Final

SAMPLE_INTERVAL_S: Final = 10.0
WINDOW_S: Final = 60.0

Key = tuple[str, str]  # group, topic


class ConsumeRates:
    def __init__(self) -> None:
        self._totals: dict[Key, int] = {}
        self.bytes: dict[Key, int] = {}  # record bytes returned, by (group, topic)
        self.pulled: dict[tuple[str, str, int], int] = {}  # (group, topic, queue id) -> next offset to pull
        self._samples: deque[tuple[float, dict[Key, int]]] = deque()  # (monotonic time, totals then)

    def record(
        self, group: str, topic: str, messages: int, size: int = 0, queue_id: int = -1, next_offset: int = 0
    ) -> None:
        """A pull of ``group`` returned ``messages`` of ``topic`` (``size`` record bytes) from ``queue_id``,
        whose next pull starts at ``next_offset``."""
        key = (group, topic)
        self._totals[key] = self._totals.get(key, 0) + messages
        self.bytes[key] = self.bytes.get(key, 0) + size
        if queue_id >= 0:
            self.pulled[(group, topic, queue_id)] = next_offset

    @property
    def totals(self) -> dict[Key, int]:
        """Messages returned by pulls, by (group, topic), since the broker started (a copy)."""
        return dict(self._totals)

    def sample(self, now: float) -> None:
        """Keep the totals as of ``now``; copies older than the last minute are let go, except the
        newest of them, where the minute's rate starts."""
        samples = self._samples
        samples.append((now, dict(self._totals)))
        while len(samples) > 1 and now - samples[1][0] >= WINDOW_S:
            samples.popleft()

    def tps(self, group: str, topic: str, now: float) -> float:
        """Messages per second of ``topic`` taken by ``group`` since the oldest kept copy (the last
        minute, give or take a sample interval); 0 before the first copy."""
        if not self._samples:
            return 0.0
        start, totals = self._samples[0]
        if now <= start:
            return 0.0
        key = (group, topic)
        return (self._totals.get(key, 0) - totals.get(key, 0)) / (now - start)
