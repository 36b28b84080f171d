"""Grouped transactions (rocketq-only) through the public client API, as an exactly-once sink uses them:
tasks (and retried task attempts) send half messages tagged with a group id and a part id, in batches
or one by one; a driver that never sent anything ends the group on each broker."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.client import (
    Message,
    MessageQueue,
    Producer,
    SyncProducer,
    TransactionGroupError,
)
from rocketq.client.admin import AdminClient
from rocketq.store import FlushDiskType
from rocketq.testing import FakeClock, LocalCluster, ThreadedCluster

from .transaction_helpers import bodies, visible

TOPIC = "SinkOutput"
GROUP = "SparkSink"
QUERY = "3f2a-query:41"  # (queryId, batchId)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def cluster(tmp_path: Path, clock: FakeClock) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(tmp_path, brokers=2, clock=clock) as running:
        async with AdminClient(running.namesrv_addr) as admin:
            await admin.update_topic(TOPIC, cluster="DefaultCluster", read_queues=2, write_queues=2)
        yield running


def rows(part: str, count: int) -> list[Message]:
    return [Message(TOPIC, f"{part}/{i}".encode(), keys=f"{part}-{i}") for i in range(count)]


def pending(cluster: LocalCluster) -> int:
    total = 0
    for broker in cluster.brokers:
        assert broker.transactions is not None
        total += sum(row["messages"] for row in broker.transactions.pending_summary().values())
    return total


async def tasks_write(cluster: LocalCluster, group_id: str = QUERY) -> None:
    """Partition 0 on broker-a in two batches; partition 1 on broker-b, one by one, whose first attempt
    died after 3 rows and whose second attempt finished; partition 2's only attempt on broker-a."""
    async with Producer(group=GROUP, namesrv_addr=cluster.namesrv_addr) as task:
        group = task.transaction_group(group_id)
        a0, b1 = MessageQueue(TOPIC, "broker-a", 0), MessageQueue(TOPIC, "broker-b", 1)
        await group.send_batch(rows("0-0", 30)[:20], a0, "0-0")
        await group.send_batch(rows("0-0", 30)[20:], a0, "0-0")
        for message in rows("1-0", 3):
            await group.send(message, b1, "1-0")
        for message in rows("1-1", 5):
            await group.send(message, b1, "1-1")
        await group.send_batch(rows("2-0", 7), MessageQueue(TOPIC, "broker-a", 1), "2-0")


async def test_a_group_commit_is_visible_exactly_once_and_a_replay_is_dropped(cluster: LocalCluster) -> None:
    await tasks_write(cluster)
    await cluster.wait_dispatched()
    assert await visible(cluster, TOPIC) == [] and pending(cluster) == 45
    async with Producer(group=GROUP, namesrv_addr=cluster.namesrv_addr) as driver:  # has never sent
        group = driver.transaction_group(QUERY)
        on_a = await group.commit("broker-a", {"0-0": 30, "2-0": 7})
        on_b = await group.commit("broker-b", {"1-1": 5})
        assert (on_a.committed, on_a.rolled_back, on_b.committed, on_b.rolled_back) == (37, 0, 5, 3)
        again = await group.commit("broker-b", {"1-1": 5})  # the driver retries: nothing changes
        assert again.already_committed and (again.committed, again.rolled_back) == (0, 0)
        await cluster.wait_dispatched()
        expected = bodies([*rows("0-0", 30), *rows("1-1", 5), *rows("2-0", 7)])
        made = await visible(cluster, TOPIC)
        assert bodies(made) == expected  # the dead attempt 1-0 was rolled back
        assert {m.properties["TRAN_GROUP_ID"] for m in made} == {QUERY}

        await tasks_write(cluster)  # the batch is replayed after a failure: same id, same rows
        replay_a = await group.commit("broker-a", {"0-0": 30, "2-0": 7})
        replay_b = await group.commit("broker-b", {"1-1": 5})
        assert replay_a.already_committed and replay_a.rolled_back == 37 and replay_b.rolled_back == 8
    await cluster.wait_dispatched()
    assert bodies(await visible(cluster, TOPIC)) == expected and pending(cluster) == 0


async def test_a_commit_short_of_messages_is_refused_and_changes_nothing(cluster: LocalCluster) -> None:
    await tasks_write(cluster)
    async with Producer(group=GROUP, namesrv_addr=cluster.namesrv_addr) as driver:
        group = driver.transaction_group(QUERY)
        with pytest.raises(TransactionGroupError) as refused:
            await group.commit("broker-a", {"0-0": 31, "2-0": 7, "9-0": 4})  # a lost row, a part never written
        assert refused.value.missing == {"0-0": (31, 30), "9-0": (4, 0)}
        assert pending(cluster) == 45
        with pytest.raises(TransactionGroupError):
            await driver.transaction_group(QUERY).commit("broker-b", {"1-1": 5, "1-0": 4})
        assert (await group.rollback("broker-a")).rolled_back == 37  # the driver aborts the batch
        assert (await group.rollback("broker-b")).rolled_back == 8
        with pytest.raises(TransactionGroupError):  # nothing left to commit
            await group.commit("broker-a", {"0-0": 30})
    await cluster.wait_dispatched()
    assert await visible(cluster, TOPIC) == [] and pending(cluster) == 0


async def test_a_group_nobody_ends_is_rolled_back_after_its_immunity(cluster: LocalCluster, clock: FakeClock) -> None:
    async with Producer(group=GROUP, namesrv_addr=cluster.namesrv_addr) as task:
        group = task.transaction_group("orphan:1", immunity_s=90)
        await group.send_batch(rows("0-0", 4), MessageQueue(TOPIC, "broker-a", 0), "0-0")
        for rounds, left in ((1, 4), (2, 0)):  # the first round comes too early, the second does not
            clock.advance(60)
            for broker in cluster.brokers:
                assert broker.transaction_checks is not None
                await asyncio.wait_for(broker.transaction_checks.wait_rounds(rounds), 10)
            assert pending(cluster) == left
        with pytest.raises(TransactionGroupError):
            await group.commit("broker-a", {"0-0": 4})
    await cluster.wait_dispatched()
    assert await visible(cluster, TOPIC) == []


def test_the_blocking_api(tmp_path: Path) -> None:
    with ThreadedCluster(tmp_path) as cluster:
        with SyncProducer(group=GROUP, namesrv_addr=cluster.namesrv_addr) as producer:
            group = producer.transaction_group("sync:1")
            queue = MessageQueue(TOPIC, "broker-a", 0)
            assert group.group_id == "sync:1"
            group.send_batch(rows("0-0", 3), queue, "0-0")
            group.send(Message(TOPIC, b"alone"), queue, "1-0")
            outcome = group.commit("broker-a", {"0-0": 3})
            assert (outcome.committed, outcome.rolled_back) == (3, 1)
            assert group.rollback("broker-a").rolled_back == 0
        cluster.call(cluster.cluster.wait_dispatched())
        assert bodies(cluster.call(visible(cluster, TOPIC))) == bodies(rows("0-0", 3))


async def test_commits_wait_for_their_fsync_with_sync_flush(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH) as cluster:
        async with Producer(group=GROUP, namesrv_addr=cluster.namesrv_addr) as producer:
            group = producer.transaction_group("durable:1")
            await group.send_batch(rows("0-0", 5), MessageQueue(TOPIC, "broker-a", 0), "0-0")
            await group.send(Message(TOPIC, b"one more"), MessageQueue(TOPIC, "broker-a", 1), "1-0")
            outcome = await group.commit("broker-a", {"0-0": 5, "1-0": 1})
        assert outcome.committed == 6
        await cluster.wait_dispatched()
        assert bodies(await visible(cluster, TOPIC)) == bodies([*rows("0-0", 5), Message(TOPIC, b"one more")])
