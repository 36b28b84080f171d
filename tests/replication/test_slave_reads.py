"""Reads from slaves: which broker a pull answer suggests, consumers following the suggestion, and a
consumer going on from the slave while its master is stopped (docs/replication.md#reads-from-slaves)."""

from __future__ import annotations

import time
from pathlib import Path

from rocketq.broker.handlers.pull import MASTER_ID, SLAVE_ID, suggest_broker_id
from rocketq.client import ClientConfig, Message, MessageExt, Producer, PullConsumer
from rocketq.testing import LocalCluster, eventually
from rocketq.testing.cluster import wait_replicated
from tests.client.helpers import close_opened, consumer_config, opened

TOPIC = "SlaveReads"
GIB = 1 << 30


def suggestion(**changes: object) -> int:
    settings: dict[str, object] = {
        "is_slave": False,
        "own_id": 0,
        "slave_read_enable": False,
        "slave_available": True,
        "lag_bytes": 0,
        "in_memory_bytes": GIB,
    }
    settings.update(changes)
    return suggest_broker_id(**settings)  # type: ignore[arg-type]


def test_a_master_suggests_its_slave_to_lagging_consumers_or_always_with_slave_read_enable() -> None:
    assert suggestion() == MASTER_ID
    assert suggestion(lag_bytes=GIB) == MASTER_ID  # at the limit: still in memory
    assert suggestion(lag_bytes=GIB + 1) == SLAVE_ID
    assert suggestion(slave_read_enable=True) == SLAVE_ID
    assert suggestion(slave_read_enable=True, slave_available=False) == MASTER_ID
    assert suggestion(lag_bytes=GIB + 1, slave_available=False) == MASTER_ID


def test_a_slave_keeps_its_readers_only_with_slave_read_enable() -> None:
    assert suggestion(is_slave=True, own_id=2, slave_read_enable=True) == 2
    assert suggestion(is_slave=True, own_id=2, slave_read_enable=False, lag_bytes=GIB + 1) == MASTER_ID


async def send(cluster: LocalCluster, prefix: str, count: int) -> set[bytes]:
    bodies = {f"{prefix}{i}".encode() for i in range(count)}
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        for body in sorted(bodies):
            await producer.send(Message(TOPIC, body))
    return bodies


async def poll_until(consumer: PullConsumer, wanted: set[bytes], timeout_s: float = 30.0) -> list[MessageExt]:
    polled: list[MessageExt] = []
    deadline = time.monotonic() + timeout_s  # a bound on the wait only: nothing asserts on time
    while not wanted <= {m.body for m in polled} and time.monotonic() < deadline:
        polled.extend(await consumer.poll(0.5))
    assert wanted <= {m.body for m in polled}, f"missing {sorted(wanted - {m.body for m in polled})[:5]}"
    return polled


async def test_pulls_go_to_the_slave_and_on_from_it_while_the_master_is_stopped(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path, slave_read_enable=True) as cluster:
        master = cluster.brokers[0]
        slave = await cluster.start_slave(0)
        client = ClientConfig(
            namesrv_addr=cluster.namesrv_addr, instance_name=f"c{time.monotonic_ns()}", poll_name_server_interval_s=0.5
        )
        try:
            first = await send(cluster, "a", 32)  # every queue has messages: each answer suggests the slave
            consumer = opened(PullConsumer(consumer_config(cluster, "Readers", client=client)))
            consumer.subscribe(TOPIC)
            await consumer.__aenter__()
            await poll_until(consumer, first)
            await eventually(lambda: slave.topics.get(TOPIC) is not None, 15, what="the slave's copy of the topic")
            served = slave.consume_rates.totals.get(("Readers", TOPIC), 0)
            second = await send(cluster, "b", 32)
            await poll_until(consumer, second)
            assert slave.consume_rates.totals.get(("Readers", TOPIC), 0) - served >= len(second) // 2
            await consumer.commit()
            await close_opened()

            third = await send(cluster, "c", 16)
            await wait_replicated(master.store.commit_log.max_offset, slave)
            await master.aclose()  # the master is gone: a new consumer reads everything from the slave
            late = opened(PullConsumer(consumer_config(cluster, "Late", client=client)))
            late.subscribe(TOPIC)
            await late.__aenter__()
            await poll_until(late, first | second | third)
            assert slave.consume_rates.totals.get(("Late", TOPIC), 0) >= len(first | second | third)

            await cluster.start_broker(0)  # the master is back: sends go to it, reads go on
            fourth = await send(cluster, "d", 16)
            await poll_until(late, fourth)
        finally:
            await close_opened()
