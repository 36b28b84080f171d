"""Offsets of the ``rocketmq`` source: per queue, the offset of the next message to read.

A stream's offset, as Spark checkpoints it, is JSON of the form
``{"topic": {"brokerName": {"queueId": nextOffset}}}``. Spark compares two offsets as text, so the same
positions must always give the same text: ``offsets_json`` builds the document with every level's keys
in sorted order (queue ids sorted as the strings they are in JSON), which is also the order
``json.dumps(..., sort_keys=True)`` writes. Pure Python: no Spark needed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rocketq.spark.options import EARLIEST, LATEST, OffsetsJson, OffsetSpec, OptionError


@dataclass(frozen=True, slots=True, order=True)
class QueueKey:
    """One queue: topic, broker name, queue id (RocketMQ's order)."""

    topic: str
    broker: str
    queue_id: int

    def __str__(self) -> str:
        return f"{self.topic}@{self.broker}:{self.queue_id}"


Offsets = dict[QueueKey, int]
Bounds = Mapping[QueueKey, tuple[int, int]]
"""(min offset, max offset) of each queue, as the brokers answered."""


def offsets_json(offsets: Mapping[QueueKey, int]) -> OffsetsJson:
    """The canonical JSON document of ``offsets`` (keys sorted at every level, values ints)."""
    document: OffsetsJson = {}
    for key, value in sorted(offsets.items(), key=lambda item: (item[0].topic, item[0].broker, str(item[0].queue_id))):
        document.setdefault(key.topic, {}).setdefault(key.broker, {})[str(key.queue_id)] = int(value)
    return document


def parse_offsets(document: Mapping[str, Any]) -> Offsets:
    """A checkpointed offset back into queue offsets (ValueError when it is not of that form)."""
    offsets: Offsets = {}
    for topic, brokers in document.items():
        if not isinstance(brokers, Mapping):
            raise ValueError(f"offsets of topic {topic!r} are not an object: {brokers!r}")
        for broker, queues in brokers.items():
            if not isinstance(queues, Mapping):
                raise ValueError(f"offsets of {topic}@{broker} are not an object: {queues!r}")
            for queue_id, offset in queues.items():
                offsets[QueueKey(str(topic), str(broker), int(queue_id))] = int(offset)
    return offsets


def resolve(
    spec: OffsetSpec,
    option: str,
    bounds: Bounds,
    by_timestamp: Callable[[QueueKey, int], int],
) -> Offsets:
    """Each queue's offset as ``spec`` says, for the queues in ``bounds``. In JSON, -2 is the queue's
    earliest offset and -1 its latest; a queue the JSON leaves out takes the option's default side
    (``startingOffsets``: earliest, ``endingOffsets``: latest). A broker or queue in the JSON that the
    topic does not have fails, naming ``option``."""
    if spec.kind == "earliest":
        return {key: low for key, (low, _) in bounds.items()}
    if spec.kind == "latest":
        return {key: high for key, (_, high) in bounds.items()}
    if spec.kind == "timestamp":
        assert spec.timestamp_ms is not None
        return {key: by_timestamp(key, spec.timestamp_ms) for key in bounds}
    given = parse_offsets(spec.offsets or {})
    missing = sorted(set(given) - set(bounds))
    if missing:
        raise OptionError(option, f"{missing[0]} is not a readable queue of its topic")
    default = EARLIEST if option.lower().startswith("starting") else LATEST
    resolved: Offsets = {}
    for key, (low, high) in bounds.items():
        wanted = given.get(key, default)
        resolved[key] = low if wanted == EARLIEST else high if wanted == LATEST else wanted
    return resolved


@dataclass(frozen=True, slots=True)
class QueueRange:
    """Offsets ``[start, end)`` of one queue: what one Spark task reads."""

    topic: str
    broker: str
    queue_id: int
    start: int
    end: int

    @property
    def key(self) -> QueueKey:
        return QueueKey(self.topic, self.broker, self.queue_id)

    @property
    def size(self) -> int:
        return self.end - self.start


def plan_ranges(
    start: Mapping[QueueKey, int], end: Mapping[QueueKey, int], min_partitions: int | None
) -> list[QueueRange]:
    """One range per queue with messages between ``start`` and ``end`` (a queue missing from ``start``
    starts at 0: it is new); empty ranges are dropped. With ``min_partitions`` above the number of
    ranges, big ranges are cut into pieces in proportion to their size (Kafka's rule), so that there are
    about that many tasks."""
    ranges = [
        QueueRange(key.topic, key.broker, key.queue_id, start.get(key, 0), stop)
        for key, stop in sorted(end.items())
        if stop > start.get(key, 0)
    ]
    if not min_partitions or min_partitions <= len(ranges):
        return ranges
    total = sum(r.size for r in ranges)
    pieces: list[QueueRange] = []
    for whole in ranges:
        parts = max(1, round(whole.size / total * min_partitions))
        for index in range(parts):
            low = whole.start + whole.size * index // parts
            high = whole.start + whole.size * (index + 1) // parts
            if high > low:
                pieces.append(QueueRange(whole.topic, whole.broker, whole.queue_id, low, high))
    return pieces
