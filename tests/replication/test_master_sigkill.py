"""SIGKILL of a SYNC_MASTER (in a child process) under load from several producers: every message it
acknowledged is on its slave (in this process), record by record; a consumer goes on reading from the
slave, and gets every acknowledged message; the master restarted on its store serves again, its slave
catches up to it, and both hold the same messages at the same queue offsets. The NameServer runs in
this process, so it outlives the master (the child is started from a thread: it registers with that
NameServer before it says it serves)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import time
from pathlib import Path

from rocketq.broker.server import Broker
from rocketq.client import ClientConfig, Message, MessageQueue, Producer, PullConsumer, QueueReader, SendStatus
from rocketq.client.admin import AdminClient
from rocketq.common.message_id import parse_offset_message_id
from rocketq.testing import LocalCluster, eventually
from rocketq.testing.cluster import slave_config
from rocketq.testing.cluster_process import ClusterProcess
from tests.client.helpers import close_opened, consumer_config, opened

PRODUCERS = 4
TOPIC = "Orders"


async def poll_until(consumer: PullConsumer, wanted: set[bytes], seen: set[bytes], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s  # a bound on the wait only: nothing asserts on time
    while not wanted <= seen and time.monotonic() < deadline:
        seen.update(message.body for message in await consumer.poll(0.5))
    missing = wanted - seen
    assert not missing, f"{len(missing)} acknowledged messages never consumed, e.g. {sorted(missing)[:3]}"


async def master_end(admin: AdminClient, address: str) -> int:
    return int((await admin.broker_runtime_info(address))["commitLogMaxOffset"])


def stored_bodies(slave: Broker, queue: MessageQueue) -> list[bytes]:
    store = slave.store
    bodies = []
    for offset in range(store.get_max_offset_in_queue(queue.topic, queue.queue_id)):
        physical = store.get_commit_log_offset_in_queue(queue.topic, queue.queue_id, offset)
        record = None if physical is None else store.lookup_message(physical)
        assert record is not None, f"{queue}: no record at queue offset {offset} on the slave"
        bodies.append(record.body)
    return bodies


async def test_a_killed_sync_master_loses_nothing_acknowledged_and_its_readers_go_on_from_the_slave(
    tmp_path: Path,
) -> None:
    async with LocalCluster(tmp_path / "names", brokers=0) as names:
        settings = {"broker_role": "SYNC_MASTER", "namesrv_addr": names.namesrv_addr}
        master = await asyncio.to_thread(ClusterProcess(tmp_path / "master", **settings).start)
        slave: Broker | None = None
        acknowledged: list[tuple[bytes, int]] = []
        killed = asyncio.Event()
        try:
            async with AdminClient(names.namesrv_addr) as admin:
                await admin.update_topic(TOPIC, cluster="DefaultCluster", read_queues=4, write_queues=4)
            config = slave_config(LocalCluster(tmp_path / "master").broker_config(0), tmp_path / "slave")
            slave = Broker(dataclasses.replace(config, namesrv_addr=names.namesrv_addr))
            await slave.start()  # registered: it learned its master's HA address from the answer
            await eventually(lambda: slave is not None and slave.replication_state().connected, what="slave connected")

            client = ClientConfig(
                namesrv_addr=names.namesrv_addr,
                instance_name=f"c{time.monotonic_ns()}",
                poll_name_server_interval_s=0.5,
            )
            consumer = opened(PullConsumer(consumer_config(names, "Readers", client=client)))
            consumer.subscribe(TOPIC)
            await consumer.__aenter__()
            consumed: set[bytes] = set()
            consumed.update(message.body for message in await consumer.poll(0.5))
            await eventually(
                lambda: len({q for q in consumer.assignment if q.topic == TOPIC}) == 4,
                30,
                what="the topic's four queues",
            )
            consumer.pause(consumer.assignment)  # it reads on once the master is gone, from the slave
            # (a slave serves a group once it has copied it from its master)
            await eventually(
                lambda: slave is not None and slave.topics.get(TOPIC) is not None and slave.groups.find("Readers"),
                30,
                what="the slave's copy of the topic and the group",
            )

            async def produce(number: int) -> None:
                async with Producer(group=f"P{number}", namesrv_addr=names.namesrv_addr) as producer:
                    sequence = 0
                    while not killed.is_set():
                        body = f"{number}-{sequence}".encode()
                        sequence += 1
                        try:
                            result = await producer.send(Message(TOPIC, body))
                        except Exception:  # the master is gone
                            return
                        if result.status is SendStatus.SEND_OK:
                            acknowledged.append((body, parse_offset_message_id(result.offset_msg_id)[2]))

            producers = [asyncio.create_task(produce(number)) for number in range(PRODUCERS)]
            await eventually(lambda: len(acknowledged) >= 300, 60, what="300 acknowledged sends")
            os.kill(master.pid, signal.SIGKILL)
            killed.set()
            await asyncio.wait_for(asyncio.gather(*producers), 60)
            master.stop()
            assert len(acknowledged) >= 300
            for body, physical in acknowledged:
                record = slave.store.lookup_message(physical)
                assert record is not None and record.body == body, f"{body!r} acknowledged, not on the slave"

            # the consumer goes on from the slave: every acknowledged message reaches it
            consumer.resume(consumer.assignment)
            await poll_until(consumer, {body for body, _ in acknowledged}, consumed)
            # (a pull in flight when the queues paused may have brought a batch from the master)
            from_slave = slave.consume_rates.totals.get(("Readers", TOPIC), 0)
            assert from_slave >= len(acknowledged) - 4 * consumer.config.pull_batch_size

            # the master restarts on its store; the slave catches up to it, queue for queue
            master = await asyncio.to_thread(ClusterProcess(tmp_path / "master", **settings).start)
            await slave.registrar.register_all()  # the master's new HA port, without waiting for the 30 s tick
            async with AdminClient(names.namesrv_addr) as admin:
                end = await master_end(admin, master.broker_addr)
                await eventually(
                    lambda: slave is not None and slave.replication_state().connected, 30, what="slave reconnected"
                )
                await eventually(lambda: slave is not None and slave.store.commit_log.max_offset == end, 30)
                assert await master_end(admin, master.broker_addr) == end  # (nothing sent meanwhile)
            await eventually(lambda: slave is not None and slave.store.dispatcher.dispatched_offset == end, 30)
            async with QueueReader(names.namesrv_addr) as reader:
                for queue in await reader.queues(TOPIC):
                    high = await reader.max_offset(queue)
                    assert high == slave.store.get_max_offset_in_queue(TOPIC, queue.queue_id)
                    on_master = [m.body for m in await reader.messages(queue, 0, high)] if high else []
                    assert on_master == stored_bodies(slave, queue), f"{queue} differs"

            # and sends and reads go on with the master back
            async with Producer(group="after", namesrv_addr=names.namesrv_addr) as producer:
                later = {f"after-{i}".encode() for i in range(20)}
                for body in sorted(later):
                    assert (await producer.send(Message(TOPIC, body))).status is SendStatus.SEND_OK
            await poll_until(consumer, later, consumed)
        finally:
            await close_opened()
            master.stop()
            if slave is not None:
                await slave.aclose()
