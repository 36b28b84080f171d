"""How far the next micro-batch of a ``rocketmq`` stream reads: rate limits and data-loss checks.
Pure Python (no Spark, no broker): the stream reader feeds it offsets and the time, and tests do too.

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

import logging
import math
from collections.abc import Collection, Mapping
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
