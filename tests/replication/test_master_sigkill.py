"""SIGKILL of a SYNC_MASTER (in a child process) under load from several producers: every message it
acknowledged is on its slave (in this process), record by record."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
from pathlib import Path

from rocketq.broker.server import Broker
from rocketq.client import Message, Producer, SendStatus
from rocketq.common.message_id import parse_offset_message_id
from rocketq.testing import LocalCluster, eventually
from rocketq.testing.cluster import slave_config
from rocketq.testing.cluster_process import ClusterProcess

PRODUCERS = 4


async def test_every_message_a_killed_sync_master_acknowledged_is_on_its_slave(tmp_path: Path) -> None:
    master = ClusterProcess(tmp_path / "master", broker_role="SYNC_MASTER").start()
    slave: Broker | None = None
    acknowledged: list[tuple[bytes, int]] = []
    killed = asyncio.Event()
    try:
        config = slave_config(LocalCluster(tmp_path / "master").broker_config(0), tmp_path / "slave")
        slave = Broker(dataclasses.replace(config, namesrv_addr=master.namesrv_addr))
        await slave.start()  # registered: it learned its master's HA address from the answer
        await eventually(lambda: slave is not None and slave.replication_state().connected, what="slave connected")

        async def produce(number: int) -> None:
            async with Producer(group=f"P{number}", namesrv_addr=master.namesrv_addr) as producer:
                sequence = 0
                while not killed.is_set():
                    body = f"{number}-{sequence}".encode()
                    sequence += 1
                    try:
                        result = await producer.send(Message("Orders", body))
                    except Exception:  # the master is gone
                        return
                    if result.status is SendStatus.SEND_OK:
                        acknowledged.append((body, parse_offset_message_id(result.offset_msg_id)[2]))

        producers = [asyncio.create_task(produce(number)) for number in range(PRODUCERS)]
        await eventually(lambda: len(acknowledged) >= 300, 60, what="300 acknowledged sends")
        os.kill(master.pid, signal.SIGKILL)
        killed.set()
        await asyncio.wait_for(asyncio.gather(*producers), 60)
        assert len(acknowledged) >= 300
        for body, physical in acknowledged:
            record = slave.store.lookup_message(physical)
            assert record is not None and record.body == body, f"{body!r} acknowledged, not on the slave"
    finally:
        master.stop()
        if slave is not None:
            await slave.aclose()
