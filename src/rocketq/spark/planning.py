"""How far the next micro-batch of a ``rocketmq`` stream reads: rate limits and data-loss checks.
Pure Python (no Spark, no broker): the stream reader feeds it offsets and the time, and tests do too.
``pack_ranges`` (at the end) packs the ``rocketmq-store`` source's queue ranges into tasks.

Rate limits follow Spark's Kafka source:

- ``maxOffsetsPerTrigger``: the budget is shared out over the queues in proportion to their backlog. A
  queue whose share is below one message gets one (rounded up) and the others are rounded down, as
  Kafka and RocketMQ's own connector do, so a small queue is never starved and a batch always moves
  when there is data; a queue never reads past its end. The total can pass the budget by the queues
  rounded up.
- ``minOffsetsPerTrigger``: no batch until that many messages wait, unless ``maxTriggerDelay`` passed
  since the last batch.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from rocketq.spark.offsets import Offsets, QueueKey

log = logging.getLogger(__name__)

DATA_LOSS_HINT = (
    "Some data may have been lost (deleted, aged out, or the queue shrank); if that is expected, set the"
    " option failOnDataLoss to false to go on past it with a warning"
)


class DataLossError(RuntimeError):
    """Messages the query should read are gone, and ``failOnDataLoss`` is true."""


def report_data_loss(problem: str, fail: bool) -> None:
    """Fail with ``problem``, or log it and go on, as ``failOnDataLoss`` says."""
    if fail:
        raise DataLossError(f"{problem}. {DATA_LOSS_HINT}.")
    log.warning("%s; going on (failOnDataLoss is false)", problem)


def backlog(start: Mapping[QueueKey, int], latest: Mapping[QueueKey, int]) -> dict[QueueKey, int]:
    """Messages between ``start`` (0 for a queue not in it: a new queue) and ``latest`` per queue."""
    return {key: max(0, high - start.get(key, 0)) for key, high in latest.items()}


def prorate(start: Mapping[QueueKey, int], latest: Mapping[QueueKey, int], max_total: int) -> Offsets:
    """End offsets that read about ``max_total`` messages in all, shared in proportion to backlog."""
    sizes = backlog(start, latest)
    total = sum(sizes.values())
    if total <= max_total:
        return dict(latest)
    end: Offsets = {}
    for key, high in latest.items():
        begin, size = start.get(key, 0), sizes[key]
        share = max_total * size / total
        take = math.ceil(share) if share < 1 else math.floor(share)
        end[key] = min(high, begin + take) if size else high
    return end


@dataclass(slots=True)
class Admission:
    """The rate-limit state of one running query (the driver's long-lived reader keeps one)."""

    max_rows: int | None
    min_rows: int | None
    max_delay_ms: int
    last_batch_ms: float  # when the last batch was planned (or the query started)

    def next_end(
        self, start: Mapping[QueueKey, int], latest: Mapping[QueueKey, int], now_ms: float, *, wait_allowed: bool = True
    ) -> Offsets:
        """The next batch's end offsets; ``start`` itself (for every queue it names, the new queues at 0,
        and a queue whose latest offset fell below its start at that latest offset) when no batch should
        run now. ``wait_allowed`` is False under Trigger.AvailableNow: a
        minimum would otherwise wait forever at the end of the data."""
        waiting = sum(backlog(start, latest).values())
        moved_back = {key: high for key, high in latest.items() if high < start.get(key, 0)}
        unchanged = {**{key: 0 for key in latest}, **start, **moved_back}
        if waiting == 0:
            return unchanged
        if (
            wait_allowed
            and self.min_rows is not None
            and waiting < self.min_rows
            and now_ms - self.last_batch_ms < self.max_delay_ms
        ):
            return unchanged
        end = prorate(start, latest, self.max_rows) if self.max_rows is not None else dict(latest)
        self.last_batch_ms = now_ms
        return {**start, **end}


@dataclass(slots=True)
class Reconciled:
    """The latest offsets to plan with, after comparing the brokers' answer with where the query is."""

    latest: Offsets = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # data loss found
    waiting_brokers: set[tuple[str, str]] = field(default_factory=set)  # (topic, broker) not answering


def reconcile(
    start: Mapping[QueueKey, int],
    latest: Mapping[QueueKey, int],
    routed: Collection[tuple[str, str]],
    answered: Collection[tuple[str, str]],
) -> Reconciled:
    """Check the brokers' ``latest`` offsets against ``start``.

    ``routed``: the (topic, broker) pairs in the topics' routes; ``answered``: those whose offsets are in
    ``latest``. A queue of a broker that is routed but did not answer, or that left the route, keeps its
    offset (the broker may be restarting: nothing is lost yet). A queue that is gone while its broker
    answered (the topic's queues were cut), or whose latest offset is below ``start`` (the broker lost
    messages), is data loss; such a queue continues from its new latest offset."""
    result = Reconciled(latest=dict(latest))
    for key, offset in sorted(start.items()):
        place = (key.topic, key.broker)
        if key in latest:
            if latest[key] < offset:
                result.problems.append(f"{key}: the queue now ends at {latest[key]}, before offset {offset}")
            continue
        if place in answered:
            result.problems.append(
                f"{key} is no longer a readable queue of {key.topic}; its messages after {offset} are lost"
            )
            continue
        result.latest[key] = offset  # its broker is away: wait for it
        result.waiting_brokers.add(place)
    if result.waiting_brokers:
        away = sorted(f"{topic}@{broker}" for topic, broker in result.waiting_brokers)
        gone = [p for p in away if tuple(p.split("@", 1)) not in routed]
        log.warning(
            "no offsets from %s (%s); their queues wait where they are",
            ", ".join(away),
            "not in the route" if gone else "not answering",
        )
    return result


# -- the rocketmq-store source: queue ranges packed into tasks ------------------------------------------

OPEN_COST_RECORDS = 16_384
"""What starting a queue range costs a task, counted in records (Spark's ``openCostInBytes`` for files):
small ranges are packed together rather than each given a task."""


def pack_ranges(
    ranges: Sequence[tuple[int, int, int]], partitions: int, max_records: int
) -> list[tuple[tuple[int, int, int], ...]]:
    """Queue ranges ``(queue_id, start, end)`` packed into about ``partitions`` tasks of at most
    ``max_records`` records each, as Spark's file sources pack files: the split size is the total over
    ``partitions`` (but at least ``OPEN_COST_RECORDS`` and at most ``max_records``), a range bigger than
    it is cut into equal pieces no bigger, and the pieces, biggest first, each go to the task with the
    fewest records so far, out of total / split size tasks (to a new task when that one would pass
    ``max_records``). Each task's ranges are in queue and offset order; every offset of every range is
    in exactly one task."""
    if partitions < 1 or max_records < 1:
        raise ValueError(f"partitions and max_records must be positive, not {partitions} and {max_records}")
    ranges = [(queue, start, end) for queue, start, end in ranges if end > start]
    total = sum(end - start for _, start, end in ranges)
    if total == 0:
        return []
    split = min(max_records, max(OPEN_COST_RECORDS, -(-total // partitions)))
    pieces = []
    for queue, start, end in ranges:
        count = -(-(end - start) // split)
        for index in range(count):
            pieces.append((queue, start + (end - start) * index // count, start + (end - start) * (index + 1) // count))
    pieces.sort(key=lambda piece: (piece[1] - piece[2], piece[0], piece[1]))  # biggest first, then in order
    wanted = max(1, min(partitions, len(pieces), -(-total // split)))
    loads = [(0, task) for task in range(wanted)]  # a heap of (records, task)
    tasks: list[list[tuple[int, int, int]]] = [[] for _ in range(wanted)]
    for piece in pieces:
        size = piece[2] - piece[1]
        load, task = loads[0]
        if load and load + size > max_records:
            heapq.heappush(loads, (size, len(tasks)))
            tasks.append([piece])
            continue
        heapq.heapreplace(loads, (load + size, task))
        tasks[task].append(piece)
    return [tuple(sorted(task)) for task in tasks if task]
