"""The groupless QueueReader (and so the Spark ``rocketmq`` source) reading from slaves: it follows the
master's suggestion to a slave, and reads a range whole from the slave while the master is stopped:
the same offsets, the same records (docs/replication.md#reads-from-slaves)."""

from __future__ import annotations

from pathlib import Path

from rocketq.broker.server import Broker
from rocketq.client import Message, MessageQueue, Producer, QueueReader
from rocketq.common.group_topics import TOOLS_CONSUMER_GROUP
from rocketq.testing import LocalCluster, eventually
from rocketq.testing.cluster import wait_replicated

TOPIC = "ReadRanges"


async def fill(cluster: LocalCluster, count: int) -> dict[MessageQueue, list[bytes]]:
    """``count`` messages over the topic's queues; the bodies of each queue in offset order."""
    bodies: dict[MessageQueue, list[bytes]] = {}
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        for i in range(count):
            result = await producer.send(Message(TOPIC, f"m{i}".encode() * (1 + i % 5)))
            bodies.setdefault(result.message_queue, []).append(f"m{i}".encode() * (1 + i % 5))
    return bodies


async def replicated(cluster: LocalCluster, slave: Broker) -> None:
    await wait_replicated(cluster.brokers[0].store.commit_log.max_offset, slave)
    await eventually(lambda: slave.topics.get(TOPIC) is not None, 20, what="the slave's copy of the topic")


async def read_all(reader: QueueReader) -> dict[MessageQueue, list[bytes]]:
    queues = await reader.queues(TOPIC)
    bounds = await reader.offsets(queues)
    found: dict[MessageQueue, list[bytes]] = {}
    for queue, (low, high) in bounds.items():
        if high > low:
            messages = await reader.messages(queue, low, high)
            assert [m.queue_offset for m in messages] == list(range(low, high))
            found[queue] = [m.body for m in messages]
    return found


def served(broker: Broker) -> int:
    return broker.consume_rates.totals.get((TOOLS_CONSUMER_GROUP, TOPIC), 0)


async def test_the_reader_follows_a_masters_suggestion_to_its_slave(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path, slave_read_enable=True) as cluster:
        slave = await cluster.start_slave(0)
        sent = await fill(cluster, 200)
        await replicated(cluster, slave)
        async with QueueReader(cluster.namesrv_addr, pull_batch_size=8) as reader:
            assert await read_all(reader) == sent
        # the first pull of each queue goes to the master, which sends the queue on to the slave
        assert served(slave) >= 200 - len(sent) * 8
        assert served(cluster.brokers[0]) <= len(sent) * 8


async def test_with_the_master_stopped_the_reader_reads_every_range_from_the_slave(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path) as cluster:
        slave = await cluster.start_slave(0)
        sent = await fill(cluster, 150)
        await replicated(cluster, slave)
        async with QueueReader(cluster.namesrv_addr, pull_batch_size=16) as reader:
            assert await read_all(reader) == sent
            assert served(slave) == 0  # a master that keeps its readers (no slaveReadEnable, no lag)
            await cluster.brokers[0].aclose()
            # this reader still has the master's address: its pulls and offsets fail over to the slave
            assert await read_all(reader) == sent
        async with QueueReader(cluster.namesrv_addr, pull_batch_size=16) as fresh:  # a route with no master
            assert await read_all(fresh) == sent
        assert served(slave) == 2 * 150
