"""ConsumeRates: how fast each consumer group takes messages from each topic, the ``consumeTps`` of
GET_CONSUME_STATS (Java's BrokerStatsManager counts the same, GROUP_GET_NUMS, per topic and group).
The totals, their bytes and where each group's pulls reached per queue are also what the Prometheus
metrics report (``rocketq.metrics.broker``: messages out, throughput out, in-flight messages).

Pulls add the messages they return (``record``, on the loop's thread: one ``GroupTopicFlow`` bumped per pull); every
``SAMPLE_INTERVAL_S`` the broker keeps a copy of the totals (``sample``), and a rate is the growth of a
total since the oldest copy of the last minute."""

from __future__ import annotations

from collections import deque
from typing import Final

SAMPLE_INTERVAL_S: Final = 10.0
WINDOW_S: Final = 60.0

Key = tuple[str, str]  # group, topic


class GroupTopicFlow:
    """What one consumer group's pulls took from one topic: messages, record bytes, and the next offset
    each queue's pulls start at. One object per (group, topic), kept for the broker's life and bumped by
    each pull (one dict lookup instead of five dict operations on tuple keys)."""

    __slots__ = ("bytes", "messages", "pulled")

    def __init__(self) -> None:
        self.messages = 0
        self.bytes = 0
        self.pulled: dict[int, int] = {}  # queue id -> next offset to pull


class ConsumeRates:
    def __init__(self) -> None:
        self._flows: dict[Key, GroupTopicFlow] = {}
        self._samples: deque[tuple[float, dict[Key, int]]] = deque()  # (monotonic time, totals then)

    def record(
        self, group: str, topic: str, messages: int, size: int = 0, queue_id: int = -1, next_offset: int = 0
    ) -> None:
        """A pull of ``group`` returned ``messages`` of ``topic`` (``size`` record bytes) from ``queue_id``,
        whose next pull starts at ``next_offset``."""
        flows = self._flows
        key = (group, topic)
        flow = flows.get(key)
        if flow is None:
            flow = flows[key] = GroupTopicFlow()
        flow.messages += messages
        flow.bytes += size
        if queue_id >= 0:
            flow.pulled[queue_id] = next_offset

    @property
    def totals(self) -> dict[Key, int]:
        """Messages returned by pulls, by (group, topic), since the broker started (a copy)."""
        return {key: flow.messages for key, flow in self._flows.items()}

    @property
    def bytes(self) -> dict[Key, int]:
        """Record bytes returned by pulls, by (group, topic), since the broker started (a copy)."""
        return {key: flow.bytes for key, flow in self._flows.items()}

    @property
    def pulled(self) -> dict[tuple[str, str, int], int]:
        """Where each group's pulls of each queue reached: (group, topic, queue id) -> the next offset
        to pull (a copy)."""
        return {
            (group, topic, queue_id): offset
            for (group, topic), flow in self._flows.items()
            for queue_id, offset in flow.pulled.items()
        }

    def sample(self, now: float) -> None:
        """Keep the totals as of ``now``; copies older than the last minute are let go, except the
        newest of them, where the minute's rate starts."""
        samples = self._samples
        samples.append((now, self.totals))
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
        flow = self._flows.get(key)
        total = 0 if flow is None else flow.messages
        return (total - totals.get(key, 0)) / (now - start)
