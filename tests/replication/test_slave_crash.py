"""A slave (a child process) SIGKILLed while its master streams to it under load restarts on its store,
recovers (its log may end inside a record) and catches up exactly: its CommitLog and ConsumeQueues end
up the master's, byte for byte."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from rocketq.client import Message, Producer, ProducerConfig, SendStatus
from rocketq.store import MessageStore
from rocketq.testing import LocalCluster, eventually
from rocketq.testing.cluster import slave_config
from rocketq.testing.cluster_process import ClusterProcess


def _slave_process(root: Path, ha_address: str) -> ClusterProcess:
    return ClusterProcess(root, broker_role="SLAVE", broker_id=1, ha_master_address=ha_address)


def _acked(cluster: LocalCluster) -> int:
    slaves = cluster.brokers[0].replication_state().slaves
    return max((slave.acked_offset for slave in slaves), default=-1)


async def test_a_killed_slave_restarts_and_catches_up_exactly(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path / "master", ha_transfer_batch_size=1000) as cluster:
        master = cluster.brokers[0]
        slave = _slave_process(tmp_path / "slave", master.ha_address).start()
        try:
            # (a generous send timeout: the 2-core CI host may stall a send for seconds under this load)
            async with Producer(
                ProducerConfig(group="P", send_msg_timeout_s=20), namesrv_addr=cluster.namesrv_addr
            ) as producer:
                sending = True

                async def produce(number: int) -> int:
                    sent = 0
                    while sending:
                        body = f"{number}-{sent}".encode().ljust(700, b".")
                        assert (await producer.send(Message("Orders", body))).status is SendStatus.SEND_OK
                        sent += 1
                    return sent

                producers = [asyncio.create_task(produce(number)) for number in range(4)]
                await eventually(lambda: _acked(cluster) > 200_000, 60, what="the slave has 200 kB")
                killed_at = _acked(cluster)
                os.kill(slave.pid, signal.SIGKILL)
                slave.stop()
                await eventually(lambda: not master.replication_state().slaves, what="the master sees it go")
                await eventually(lambda: master.store.commit_log.max_offset > killed_at + 100_000, 60)
                slave = _slave_process(tmp_path / "slave", master.ha_address).start()
                await eventually(lambda: _acked(cluster) > 0, 30, what="the slave is back")
                sending = False
                await asyncio.gather(*producers)
            end = master.store.commit_log.max_offset
            await eventually(lambda: _acked(cluster) == end, 30, what="the slave caught up")
        finally:
            slave.stop()
        await cluster.wait_dispatched()
        config = slave_config(cluster.broker_config(0), tmp_path / "slave" / "broker-0")
        with MessageStore(config.store_config()) as copy:
            copy.dispatch_now()
            assert copy.commit_log.max_offset == end
            at = 0
            while at < end:
                chunk = master.store.read_commit_log(at, 1 << 20)
                assert copy.read_commit_log(at, len(chunk)) == chunk, f"bytes differ in the file at {at}"
                at += len(chunk)
            for queue in master.store.queues():
                topic, queue_id = queue.topic, queue.queue_id
                assert copy.get_max_offset_in_queue(topic, queue_id) == queue.max_offset
                for offset in range(queue.min_offset, queue.max_offset):
                    assert copy.get_commit_log_offset_in_queue(
                        topic, queue_id, offset
                    ) == master.store.get_commit_log_offset_in_queue(topic, queue_id, offset)
