"""What the Spark tests share: topics of their own on the session's cluster, filling queues, reading the
rows a query wrote."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from rocketq.client import Message, MessageExt, MessageQueue, SyncAdminClient, SyncProducer, SyncQueueReader
from rocketq.testing import ThreadedCluster

_numbers = itertools.count()


def new_topic(cluster: ThreadedCluster, queues: int = 2, prefix: str = "t") -> str:
    """A fresh topic with ``queues`` queues on each of the cluster's two brokers."""
    topic = f"{prefix}{next(_numbers)}"
    with SyncAdminClient(cluster.namesrv_addr) as admin:
        admin.update_topic(topic, cluster="DefaultCluster", read_queues=queues, write_queues=queues)
    return topic


def fill(
    cluster: ThreadedCluster,
    queue: MessageQueue,
    count: int,
    *,
    start: int = 0,
    tags: Sequence[str | None] | None = None,
    size: int = 0,
) -> None:
    """``count`` messages into ``queue``, bodies ``<queue>/<n>`` (n from ``start``; padded to ``size``),
    tags from ``tags`` in turn, sent in batches."""
    messages = [
        Message(
            queue.topic,
            f"{queue.broker_name}/{queue.queue_id}/{n}".encode().ljust(size, b"."),
            tags=tags[(n - start) % len(tags)] if tags else None,
            keys=f"k{n}",
        )
        for n in range(start, start + count)
    ]
    with SyncProducer(group="spark-tests", namesrv_addr=cluster.namesrv_addr) as producer:
        for first in range(0, len(messages), 64):
            producer.send_batch(messages[first : first + 64], queue=queue)
    cluster.call(cluster.cluster.wait_dispatched())


def body(queue: MessageQueue, n: int) -> bytes:
    return f"{queue.broker_name}/{queue.queue_id}/{n}".encode()


def visible(cluster: ThreadedCluster, topic: str) -> list[MessageExt]:
    """Every message a consumer of ``topic`` can read now, queue by queue."""
    cluster.call(cluster.cluster.wait_dispatched())
    with SyncQueueReader(cluster.namesrv_addr) as reader:
        return [m for queue in reader.queues(topic) for m in reader.messages(queue, 0, reader.max_offset(queue))]


def pending_half_messages(namesrv_addr: str, producer_group: str) -> int:
    """Half messages of ``producer_group`` neither committed nor rolled back, over every broker."""
    with SyncAdminClient(namesrv_addr) as admin:
        return sum(
            group.half_messages
            for answer in admin.pending_transactions().values()
            for group in answer.groups
            if group.producer_group == producer_group
        )
