"""QueueReader: exact ranges of a queue, filtered by the broker and by tag text, nothing written on the
broker; queue offsets without a consumer; the blocking twins; committing a group's offsets."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import pytest

from rocketq.client import (
    AdminClient,
    Message,
    MessageQueue,
    MessageSelector,
    OffsetOutOfRangeError,
    Producer,
    QueueReader,
    SyncAdminClient,
    SyncQueueReader,
)
from rocketq.client.errors import ValidationError
from rocketq.client.pull import PullStatus
from rocketq.common.message import java_string_hash
from rocketq.protocol import RemotingCommand, RequestCode
from rocketq.testing import LocalCluster, ThreadedCluster

from .broker_taps import tap
from .helpers import TOPIC

QUEUE = MessageQueue(TOPIC, "broker-a", 1)


async def fill(cluster: LocalCluster, queue: MessageQueue, tags: list[str | None]) -> None:
    """One message per tag into ``queue``, body ``m<offset>``."""
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        for i, tag in enumerate(tags):
            await producer.send_orderly(
                Message(queue.topic, f"m{i}".encode(), tags=tag), selector=lambda queues, m, a: a, arg=queue
            )
    await cluster.wait_dispatched()


async def test_reads_exactly_the_range_with_small_pulls_and_nothing_past_it(cluster: LocalCluster) -> None:
    await fill(cluster, QUEUE, [None] * 20)
    pulls: list[dict[str, str]] = []

    def seen(request: RemotingCommand, response: RemotingCommand | None) -> None:
        pulls.append(dict(request.ext_fields))

    tap(cluster.brokers[0], RequestCode.PULL_MESSAGE, seen)
    async with QueueReader(cluster.namesrv_addr, pull_batch_size=3) as reader:
        chunks = [chunk async for chunk in reader.read(QUEUE, 4, 15)]
    offsets = [m.queue_offset for chunk in chunks for m in chunk.messages]
    assert offsets == list(range(4, 15))
    assert [m.body for c in chunks for m in c.messages] == [f"m{i}".encode() for i in range(4, 15)]
    assert chunks[-1].next_offset == 15 and all(c.positions is None for c in chunks)
    # every pull asked for what was left of the range at most, no long polling, no offset commit
    assert pulls and all(int(p["queueOffset"]) + int(p["maxMsgNums"]) <= 15 for p in pulls)
    assert all(p["suspendTimeoutMillis"] == "0" and int(p["sysFlag"]) & 0x3 == 0 for p in pulls)
    assert {p["consumerGroup"] for p in pulls} == {"TOOLS_CONSUMER"}


async def test_reading_leaves_nothing_on_the_broker(cluster: LocalCluster, tmp_path: Path) -> None:
    await fill(cluster, QUEUE, [None] * 3)
    async with QueueReader(cluster.namesrv_addr) as reader:
        assert len(await reader.messages(QUEUE, 0, 3)) == 3
    async with AdminClient(cluster.namesrv_addr) as admin:
        assert not [t for t in await admin.topic_list() if t.startswith("%RETRY%")]
        assert await admin.groups_consuming(TOPIC) == []
    groups_file = tmp_path / "broker-0" / "config" / "subscriptionGroup.json"
    assert not groups_file.exists() or "TOOLS_CONSUMER" not in groups_file.read_text()


async def test_tag_filter_drops_hash_collisions_and_reports_the_offset_past_skipped_messages(
    cluster: LocalCluster,
) -> None:
    assert java_string_hash("Aa") == java_string_hash("BB")  # the broker cannot tell them apart
    tags: list[str | None] = ["Aa", "BB", "C", "Aa", "BB", "C", "C", "C"]
    await fill(cluster, QUEUE, tags)
    async with QueueReader(cluster.namesrv_addr) as reader:
        chunk = await reader.pull(QUEUE, 0, end=6, selector="Aa")
        assert [m.queue_offset for m in chunk.messages] == [0, 3]
        assert chunk.count == 2 and chunk.positions is not None and len(chunk.positions) == 2
        assert chunk.next_offset == 6  # the broker scanned to the end of the range
        nothing = await reader.pull(QUEUE, 6, end=8, selector=MessageSelector.by_tag("Aa || BB"))
        assert nothing.status is PullStatus.NO_MATCHED_MSG and nothing.next_offset == 8 and nothing.count == 0
        both = await reader.messages(QUEUE, 0, 8, selector="C || BB")
        assert [m.queue_offset for m in both] == [1, 2, 4, 5, 6, 7]
        # a filtered pull may find messages past the range's end: they are not handed over
        tail = await reader.pull(QUEUE, 0, end=2, selector="C", max_nums=1)
        assert tail.count == 0 and tail.next_offset == 2


async def test_sql92_selector_travels_with_the_pull(cluster: LocalCluster) -> None:
    await fill(cluster, QUEUE, ["A"])
    pulls: list[dict[str, str]] = []
    tap(cluster.brokers[0], RequestCode.PULL_MESSAGE, lambda request, response: pulls.append(request.ext_fields))
    async with QueueReader(cluster.namesrv_addr) as reader:
        # a broker without SQL92 filtering refuses it; what was asked is the point here
        with contextlib.suppress(Exception):
            await reader.pull(QUEUE, 0, end=1, selector=MessageSelector.by_sql("TAGS = 'A'"))
    assert pulls[0]["expressionType"] == "SQL92" and pulls[0]["subscription"] == "TAGS = 'A'"
    assert int(pulls[0]["sysFlag"]) & 0x4  # the subscription is in the pull itself


async def test_offsets_without_a_consumer(cluster: LocalCluster) -> None:
    before = int(time.time() * 1000) - 1
    await fill(cluster, QUEUE, [None] * 5)
    async with QueueReader(cluster.namesrv_addr) as reader:
        by_broker = await reader.queues_by_broker(TOPIC)
        assert sorted(by_broker) == ["broker-a", "broker-b"]
        assert [q.queue_id for q in by_broker["broker-b"]] == [0, 1, 2, 3]
        assert await reader.offsets([QUEUE, MessageQueue(TOPIC, "broker-b", 0)]) == {
            QUEUE: (0, 5),
            MessageQueue(TOPIC, "broker-b", 0): (0, 0),
        }
        assert await reader.offset_for_timestamp(QUEUE, before) == 0
        assert await reader.offset_for_timestamp(QUEUE, int(time.time() * 1000) + 60_000) == 5
        with pytest.raises(Exception, match="does not exist"):
            await reader.queues("NoSuchTopic")


async def test_a_range_past_the_queue_end_fails_unless_lost_data_is_skipped(cluster: LocalCluster) -> None:
    await fill(cluster, QUEUE, [None] * 4)
    async with QueueReader(cluster.namesrv_addr) as reader:
        with pytest.raises(OffsetOutOfRangeError, match="queue's end"):
            await reader.messages(QUEUE, 2, 9)
        skipped = [c async for c in reader.read(QUEUE, 2, 9, skip_lost=True)]
        assert [m.queue_offset for c in skipped for m in c.messages] == [2, 3]
        assert [m.queue_offset for m in await reader.messages(QUEUE, 1)] == [1, 2, 3]  # no end: to the head


async def test_aged_out_messages_fail_the_read_or_are_skipped(tmp_path: Path) -> None:
    async with LocalCluster(
        tmp_path, mapped_file_size_commit_log=32 * 1024, mapped_file_size_consume_queue=20 * 8, file_reserved_time=0.0
    ) as cluster:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.update_topic("Aged", cluster="DefaultCluster", read_queues=1, write_queues=1)
        queue = MessageQueue("Aged", "broker-a", 0)
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            for i in range(80):
                await producer.send(Message("Aged", str(i).encode().ljust(1024, b".")))
        await cluster.wait_dispatched()
        time.sleep(0.01)  # older than file_reserved_time (0 hours)
        assert cluster.brokers[0].store.retention.run(force=True) > 0
        async with QueueReader(cluster.namesrv_addr, pull_batch_size=16) as reader:
            low, high = (await reader.offsets([queue]))[queue]
            assert 0 < low < high == 80
            with pytest.raises(OffsetOutOfRangeError, match="no longer kept") as failed:
                await reader.messages(queue, 0, 80)
            assert failed.value.min_offset == low
            chunks = [c async for c in reader.read(queue, 0, 80, skip_lost=True)]
            assert chunks[0].status is PullStatus.OFFSET_ILLEGAL and chunks[0].next_offset == low
            assert [m.queue_offset for c in chunks for m in c.messages] == list(range(low, 80))


async def test_stopping_early_cancels_the_read_ahead(cluster: LocalCluster) -> None:
    await fill(cluster, QUEUE, [None] * 10)
    async with QueueReader(cluster.namesrv_addr, pull_batch_size=2) as reader:
        chunks = reader.read(QUEUE, 0, 10)
        first = await anext(chunks)
        await chunks.aclose()
        assert [m.queue_offset for m in first.messages] == [0, 1]
        assert not [t for t in asyncio.all_tasks() if "pull" in repr(t.get_coro())]


def test_blocking_twins_read_ranges_and_commit_a_groups_offsets(tmp_path: Path) -> None:
    with ThreadedCluster(tmp_path, brokers=1) as cluster, SyncAdminClient(cluster.namesrv_addr) as admin:
        admin.update_topic("T", cluster="DefaultCluster", read_queues=2, write_queues=2)
        queues = [MessageQueue("T", "broker-a", i) for i in (0, 1)]
        cluster.call(fill(cluster.cluster, queues[0], [None] * 6))
        with SyncQueueReader(cluster.namesrv_addr, pull_batch_size=4) as reader:
            assert reader.queues("T") == queues
            assert reader.max_offset(queues[0]) == 6 and reader.min_offset(queues[0]) == 0
            read = [m.queue_offset for chunk in reader.read(queues[0], 1, 6) for m in chunk.messages]
            assert read == [1, 2, 3, 4, 5]
            stopped = reader.read(queues[0], 0, 6)
            assert next(stopped).count == 4
            stopped.close()  # the generator's cleanup runs on the reader's loop
        admin.commit_offsets("pipeline", {queues[0]: 4, queues[1]: 0})
        progress = {(r.queue_id, r.broker_offset, r.consumer_offset) for r in admin.consumer_progress("pipeline")}
        assert progress == {(0, 6, 4), (1, 0, 0)}
        with pytest.raises(Exception, match="0 or more"):
            admin.commit_offsets("pipeline", {queues[0]: -1})
        assert admin.commit_offsets.__doc__ and "consumerProgress" in admin.commit_offsets.__doc__


async def test_a_batch_goes_to_the_queue_it_names(cluster: LocalCluster) -> None:
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        queues = await producer.fetch_publish_queues(TOPIC)
        assert len(queues) == 8 and {q.broker_name for q in queues} == {"broker-a", "broker-b"}
        target = MessageQueue(TOPIC, "broker-b", 2)
        result = await producer.send_batch([Message(TOPIC, b"x"), Message(TOPIC, b"y")], queue=target)
        assert result.message_queue == target
        with pytest.raises(Exception, match="the queue's"):
            await producer.send_batch([Message(TOPIC, b"x")], queue=MessageQueue("Other", "broker-b", 2))
    await cluster.wait_dispatched()
    async with QueueReader(cluster.namesrv_addr) as reader:
        assert [m.body for m in await reader.messages(target, 0, 2)] == [b"x", b"y"]


async def test_pulls_ask_for_about_what_the_brokers_byte_cap_lets_through(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path, max_pull_bytes=8 * 1024) as cluster:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.update_topic("Big", cluster="DefaultCluster", read_queues=1, write_queues=1)
        queue = MessageQueue("Big", "broker-a", 0)
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            await producer.send_batch([Message("Big", bytes(1000)) for _ in range(60)], queue=queue)
        await cluster.wait_dispatched()
        asked: list[int] = []
        tap(
            cluster.brokers[0],
            RequestCode.PULL_MESSAGE,
            lambda request, _: asked.append(int(request.ext_fields["maxMsgNums"])),
        )
        async with QueueReader(cluster.namesrv_addr, pull_batch_size=5000) as reader:
            assert [m.queue_offset for m in await reader.messages(queue, 0, 60)] == list(range(60))
        assert asked[0] == 60 and max(asked[2:]) < 20  # the first asks for the range, the later for what fits


async def test_read_ahead_goes_on_while_the_caller_works_and_keeps_order_errors_and_cancellation(
    cluster: LocalCluster,
) -> None:
    await fill(cluster, QUEUE, [None] * 12)
    pulls: list[int] = []
    all_pulled = asyncio.Event()

    def seen(request: RemotingCommand, response: RemotingCommand | None) -> None:
        pulls.append(int(request.ext_fields["queueOffset"]))
        if len(pulls) == 6:
            all_pulled.set()

    tap(cluster.brokers[0], RequestCode.PULL_MESSAGE, seen)
    async with QueueReader(cluster.namesrv_addr, pull_batch_size=2) as reader:
        chunks = reader.read(QUEUE, 0, 12, read_ahead_bytes=10**6)
        first = await anext(chunks)
        # the caller does not ask for more, yet the pulls go on to the range's end
        await asyncio.wait_for(all_pulled.wait(), 30)
        assert pulls == [0, 2, 4, 6, 8, 10] and [m.queue_offset for m in first.messages] == [0, 1]
        rest = [m.queue_offset async for chunk in chunks for m in chunk.messages]
        assert rest == list(range(2, 12)) and len(pulls) == 6

        # an error comes after the chunks pulled before it
        got: list[int] = []
        with pytest.raises(OffsetOutOfRangeError, match="queue's end"):
            async for chunk in reader.read(QUEUE, 8, 20, read_ahead_bytes=1):
                got.extend(m.queue_offset for m in chunk.messages)
        assert got == [8, 9, 10, 11]

        # stopping early stops the background pulls
        early = reader.read(QUEUE, 0, 12, read_ahead_bytes=1)
        assert [m.queue_offset for m in (await anext(early)).messages] == [0, 1]
        await early.aclose()
        others = asyncio.all_tasks() - {asyncio.current_task()}
        assert not [t for t in others if "pull" in repr(t.get_coro()) or "fill" in repr(t.get_coro())]


async def test_a_reader_asks_for_larger_answers_and_the_broker_grants_up_to_its_limit(tmp_path: Path) -> None:
    """rocketq's rqMaxBytes: a pull answers up to the bytes asked for, never past ``pull_bytes_limit``;
    without it, the broker's own ``max_pull_bytes``."""
    async with LocalCluster(tmp_path, max_pull_bytes=2048, pull_bytes_limit=8192) as cluster:
        queue = MessageQueue("TopicBytes", "broker-a", 0)
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.update_topic(queue.topic, cluster="DefaultCluster", read_queues=1, write_queues=1)
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            await producer.send_batch([Message(queue.topic, b"x" * 300) for _ in range(100)], queue=queue)
        await cluster.wait_dispatched()

        async def first_pull(max_pull_bytes: int | None) -> int:
            async with QueueReader(cluster.namesrv_addr, pull_batch_size=1000, max_pull_bytes=max_pull_bytes) as reader:
                chunk = await reader.pull(queue, 0)
            assert [m.queue_offset for m in chunk.messages] == list(range(len(chunk.messages)))
            return len(chunk.messages)

        default, asked, beyond = await first_pull(None), await first_pull(6000), await first_pull(10**9)
        smaller = await first_pull(1)
    # each stored record is 300 bytes of body plus its header and properties (300-700 bytes)
    assert 2048 // 700 <= default <= 2048 // 300  # the broker's own cap
    assert 6000 // 700 <= asked <= 6000 // 300 and asked > default  # what was asked for
    assert 8192 // 700 <= beyond <= 8192 // 300 and beyond > asked  # no more than pull_bytes_limit
    assert smaller == 1  # at least one record, however little was asked


def test_max_pull_bytes_must_be_positive() -> None:
    with pytest.raises(ValidationError, match="max_pull_bytes"):
        QueueReader("127.0.0.1:1", max_pull_bytes=0)


async def test_a_large_answer_is_handed_on_as_the_buffer_it_was_received_into(cluster: LocalCluster) -> None:
    """A pull answer of MiBs is not copied on its way to the caller: ``records`` is a read-only view of
    the buffer the client received it into, and reading it (messages, counts, a tag filter's positions)
    gives what a small answer gives."""
    tags = ["Aa" if i % 3 else "BB" for i in range(300)]  # one tag hash: the broker sends both
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        batch = [Message(QUEUE.topic, bytes([i % 251]) * 4000, tags=tag) for i, tag in enumerate(tags)]
        await producer.send_batch(batch, queue=QUEUE)
    await cluster.wait_dispatched()
    async with QueueReader(cluster.namesrv_addr, pull_batch_size=300, max_pull_bytes=4 << 20) as reader:
        whole = await reader.pull(QUEUE, 0, end=300)
        only_b = await reader.pull(QUEUE, 0, end=300, selector="BB")
        small = await reader.pull(QUEUE, 0, end=300, max_nums=2)
    assert isinstance(whole.records, memoryview) and whole.records.readonly and len(whole.records) > 1 << 20
    assert whole.positions is None and whole.count == 300
    assert [m.body for m in whole.messages] == [m.body for m in batch]
    assert type(small.records) is bytes and small.messages[1].body == batch[1].body  # a small answer: bytes
    assert only_b.positions is not None and only_b.count == 100
    assert isinstance(only_b.records, memoryview)
    assert [m.queue_offset for m in only_b.messages] == [i for i, tag in enumerate(tags) if tag == "BB"]
