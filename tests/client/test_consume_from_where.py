"""Where a consumer group starts a queue it has no committed offset for.

The rule, as RocketMQ 4.x has it (RebalancePushImpl.computePullFromWhere and the broker's
ConsumerManageProcessor.queryConsumerOffset):

1. The consumer reads its stored offset: clustering asks the broker (QUERY_CONSUMER_OFFSET),
   broadcasting reads its local file. An offset found is where it starts, whatever consume_from_where.
2. A broker asked about a group it has no offset for answers **0** when the queue still holds its
   first message (min offset 0) and that message is still "in memory": within the newest
   ``accessMessageInMemoryMaxRatio`` (40) % of RAM worth of CommitLog. So a new clustering group on a
   young queue starts at 0 with every consume_from_where, and gets the messages sent before it started.
3. Only when no offset is found (the broker answers QUERY_NOT_FOUND because the queue's first
   messages were deleted or are on disk only, or a broadcasting member has no local offset) does
   consume_from_where
   decide: LAST_OFFSET starts at the queue's max offset, FIRST_OFFSET at 0, TIMESTAMP at the first
   message stored at or after consume_timestamp_ms. A retry topic starts at 0 (at its max offset for
   TIMESTAMP).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.client import ConsumeFromWhere, Message, MessageModel, Producer, PushConsumer
from rocketq.client.admin import AdminClient
from rocketq.client.message import MessageExt
from rocketq.testing import LocalCluster, eventually

from .helpers import TOPIC, close_opened, consumer_config, opened, send
from .sentinels import send_sentinels

LAST = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
TIMESTAMP = ConsumeFromWhere.CONSUME_FROM_TIMESTAMP
AGED = "Aged"  # one queue, whose first messages retention deletes


async def consume(
    cluster: LocalCluster, consumer: PushConsumer, received: list[bytes], expected: list[bytes], topic: str = TOPIC
) -> None:
    """Wait for ``expected`` and for a sentinel sent after them on every queue: nothing else may come."""
    sentinels = await send_sentinels(cluster, topic)
    await eventually(lambda: set(sentinels) <= set(received) and len(received) >= len(expected) + len(sentinels))
    assert sorted(received) == sorted(expected + sentinels)
    await consumer.aclose()


def started_between_sends() -> int:
    """A timestamp after what was sent so far and before what is sent next."""
    time.sleep(0.01)
    stamp = int(time.time() * 1000)
    time.sleep(0.01)
    return stamp


def member(cluster: LocalCluster, group: str, received: list[bytes], **settings: object) -> PushConsumer:
    def listener(messages: list[MessageExt]) -> None:
        received.extend(m.body for m in messages)

    return opened(PushConsumer(consumer_config(cluster, group, **settings), listener))


async def test_a_new_clustering_group_whose_queue_start_is_on_disk_only_follows_consume_from_where(
    tmp_path: Path,
) -> None:
    """Rule 2's memory condition: with ``accessMessageInMemoryMaxRatio`` 0 every stored byte counts as
    on disk only, so the broker answers QUERY_NOT_FOUND and LAST_OFFSET starts at the end."""
    async with LocalCluster(tmp_path, brokers=1, access_message_in_memory_max_ratio=0) as running:
        async with AdminClient(running.namesrv_addr) as admin:
            await admin.update_topic(TOPIC, cluster="DefaultCluster", read_queues=2, write_queues=2)
        try:
            await send(running, 8, "before")
            received: list[bytes] = []
            consumer = member(running, "OnDisk", received, consume_from_where=LAST)
            consumer.subscribe(TOPIC)
            await consumer.start()
            after = await send(running, 8, "after")
            await consume(running, consumer, received, after)
        finally:
            await close_opened()


async def broadcasting_member(
    cluster: LocalCluster, group: str, received: list[bytes], offsets: Path, **settings: object
) -> PushConsumer:
    """A started broadcasting member of ``group`` on ``TOPIC``, its offsets under ``offsets``."""
    consumer = member(
        cluster, group, received, message_model=MessageModel.BROADCASTING, offset_store_dir=offsets, **settings
    )
    consumer.subscribe(TOPIC)
    return await consumer.start()


@pytest.mark.parametrize("where", [LAST, TIMESTAMP])
async def test_a_new_clustering_group_starts_a_young_queue_at_zero(
    cluster: LocalCluster, where: ConsumeFromWhere
) -> None:
    """Rule 2: the broker answers 0, so messages sent before the group started are consumed too."""
    before = await send(cluster, 16, "before")
    stamp = started_between_sends()
    received: list[bytes] = []
    consumer = member(cluster, f"Young{where.name}", received, consume_from_where=where, consume_timestamp_ms=stamp)
    consumer.subscribe(TOPIC)
    await consumer.start()
    after = await send(cluster, 16, "after")
    await consume(cluster, consumer, received, before + after)


async def test_a_new_broadcasting_member_with_last_offset_gets_only_later_messages(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    await send(cluster, 16, "before")
    received: list[bytes] = []
    consumer = await broadcasting_member(cluster, "LateB", received, tmp_path, consume_from_where=LAST)
    after = await send(cluster, 16, "after")
    await consume(cluster, consumer, received, after)


async def test_a_new_broadcasting_member_from_a_timestamp_gets_what_was_stored_since(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    await send(cluster, 16, "before")
    stamp = started_between_sends()
    since = await send(cluster, 16, "since")
    received: list[bytes] = []
    consumer = await broadcasting_member(
        cluster, "StampedB", received, tmp_path, consume_from_where=TIMESTAMP, consume_timestamp_ms=stamp
    )
    after = await send(cluster, 8, "after")
    await consume(cluster, consumer, received, since + after)


@pytest.fixture
async def aged(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    """A broker with tiny files and no retention time: ``age`` deletes the oldest messages at once."""
    async with LocalCluster(
        tmp_path,
        mapped_file_size_commit_log=32 * 1024,
        mapped_file_size_consume_queue=20 * 8,
        max_message_size=4 * 1024,
        file_reserved_time=0.0,
    ) as running:
        async with AdminClient(running.namesrv_addr) as admin:
            await admin.update_topic(AGED, cluster="DefaultCluster", read_queues=1, write_queues=1)
        try:
            yield running
        finally:
            await close_opened()


async def send_aged(cluster: LocalCluster, count: int, prefix: str) -> list[bytes]:
    bodies = [f"{prefix}{i}".encode().ljust(1024, b".") for i in range(count)]
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        for body in bodies:
            await producer.send(Message(AGED, body))
    return bodies


async def age(cluster: LocalCluster) -> int:
    """Delete every CommitLog file but the current one (retention's own run); the queue's new min offset."""
    await cluster.wait_dispatched()
    time.sleep(0.01)  # the files are older than file_reserved_time (0 hours)
    assert cluster.brokers[0].store.retention.run(force=True) > 0
    async with AdminClient(cluster.namesrv_addr) as admin:
        [status] = await admin.topic_status(AGED)
    return status.min_offset


@pytest.mark.parametrize("where", [LAST, TIMESTAMP])
async def test_a_new_clustering_group_follows_consume_from_where_once_the_first_messages_are_gone(
    aged: LocalCluster, where: ConsumeFromWhere
) -> None:
    """Rule 3: with the queue's first messages deleted the broker has no offset to offer, and the group
    starts at the max offset (LAST_OFFSET) or at the first message since its timestamp."""
    await send_aged(aged, 80, "old")  # 1 KiB each: some three CommitLog files
    assert await age(aged) > 0
    await send_aged(aged, 4, "kept")  # still stored, but sent before the group started
    stamp = started_between_sends()
    since = await send_aged(aged, 8, "since")
    received: list[bytes] = []
    consumer = member(aged, f"Aged{where.name}", received, consume_from_where=where, consume_timestamp_ms=stamp)
    consumer.subscribe(AGED)
    await consumer.start()
    after = await send_aged(aged, 8, "after")
    await consume(aged, consumer, received, after if where is LAST else since + after, AGED)
