"""A SYNC_MASTER whose slave (a child process) is paused with SIGSTOP: sends fail with FLUSH_SLAVE_TIMEOUT
once the master's clock passed the sync flush timeout instead of hanging; once that clock says the slave
was silent for haHousekeepingInterval it drops it and answers SLAVE_NOT_AVAILABLE; sends succeed again
once the slave runs on and reconnects."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from rocketq.broker.config import BrokerRole
from rocketq.client import Message, Producer, SendStatus
from rocketq.testing import FakeClock, LocalCluster, eventually
from rocketq.testing.cluster_process import ClusterProcess


async def test_a_paused_slave_times_sends_out_and_a_resumed_one_acknowledges_them(tmp_path: Path) -> None:
    settings = {"sync_flush_timeout_ms": 15_000}  # (longer than the waits below: the fake clock ends it)
    clock = FakeClock()
    async with LocalCluster(
        tmp_path / "master", broker_role=BrokerRole.SYNC_MASTER, store_settings=settings, clock=clock
    ) as cluster:
        master = cluster.brokers[0]
        slave = ClusterProcess(
            tmp_path / "slave", broker_role="SLAVE", broker_id=1, ha_master_address=master.ha_address
        ).start()
        try:
            await eventually(lambda: master.replication_state().slaves, what="the slave reports")
            async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
                assert (await producer.send(Message("Orders", b"before"))).status is SendStatus.SEND_OK
                os.kill(slave.pid, signal.SIGSTOP)
                try:
                    stored = master.store.commit_log.max_offset
                    sending = asyncio.ensure_future(producer.send(Message("Orders", b"paused")))
                    # (its wait for the slave starts in the same loop step as its append)
                    await eventually(lambda: master.store.commit_log.max_offset > stored, what="the paused put")
                    assert not sending.done()
                    clock.advance(15.1)  # the sync flush timeout, still short of haHousekeepingInterval
                    paused = await asyncio.wait_for(sending, 10)
                    assert paused.status is SendStatus.FLUSH_SLAVE_TIMEOUT
                    clock.advance(21)  # haHousekeepingInterval (20 s) of silence
                    await eventually(lambda: not master.replication_state().slaves, what="the slave dropped")
                    dropped = await asyncio.wait_for(producer.send(Message("Orders", b"dropped")), 10)
                    assert dropped.status is SendStatus.SLAVE_NOT_AVAILABLE
                finally:
                    os.kill(slave.pid, signal.SIGCONT)
                await eventually(lambda: master.replication_state().slaves, 20, what="the slave reconnects")
                resumed = await asyncio.wait_for(producer.send(Message("Orders", b"resumed")), 10)
                assert resumed.status is SendStatus.SEND_OK
            assert master.replication_state().acked_offset == master.store.commit_log.max_offset
        finally:
            slave.stop()
