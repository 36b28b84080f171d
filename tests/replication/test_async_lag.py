"""An ASYNC_MASTER under load from several producers: its slave's lag (the master's CommitLog end minus
what the slave acknowledged, as ``replication_state`` and GET_BROKER_HA_STATUS report it) is measured
after every send and stays bounded; once the sends stop it drains to 0, the logs byte for byte equal."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rocketq.client import Message, Producer, SendStatus
from rocketq.client.admin import AdminClient
from rocketq.client.admin_cluster import ha_status
from rocketq.replication.master import WRITE_BUFFER_HIGH_WATER
from rocketq.testing import LocalCluster, eventually
from rocketq.testing.cluster import wait_replicated

from .test_replication import commit_log_bytes, queue_entries

MIB = 1024 * 1024
SENT = 48 * MIB  # CommitLog bytes the producers write
PRODUCERS = 4
LAG_BOUND = WRITE_BUFFER_HIGH_WATER + 12 * MIB
"""The master's unsent stream (at most its high-water mark and a frame) plus what loopback socket buffers
and the slave's reader hold; far below what is sent, so a slave that fell behind would cross it."""


async def test_async_replication_lag_is_measured_and_stays_bounded_under_load(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path, mapped_file_size_commit_log=64 * MIB) as cluster:
        master = cluster.brokers[0]
        slave = await cluster.start_slave(0)
        await eventually(lambda: bool(master.replication_state().slaves), what="the master sees its slave")
        lags: list[int] = []

        async def produce(number: int) -> None:
            batch = [Message("Load", bytes([65 + number]) * 1024) for _ in range(32)]
            async with Producer(group=f"P{number}", namesrv_addr=cluster.namesrv_addr) as producer:
                while master.store.commit_log.max_offset < SENT:
                    assert (await producer.send_batch(batch)).status is SendStatus.SEND_OK
                    [seen] = master.replication_state().slaves
                    lags.append(seen.lag_bytes)

        await asyncio.gather(*(produce(number) for number in range(PRODUCERS)))
        assert len(lags) > SENT // (32 * 1024 * 2)  # a sample after every send
        assert max(lags) <= LAG_BOUND, f"lag reached {max(lags)} bytes (mean {sum(lags) // len(lags)})"

        end = master.store.commit_log.max_offset
        await asyncio.wait_for(wait_replicated(end, slave), 30)
        await cluster.wait_dispatched()
        async with AdminClient(cluster.namesrv_addr) as admin:
            status = await ha_status(admin, master.address)
        assert status.master_commit_log_max_offset == end
        assert [(c.slave_ack_offset, c.diff, c.in_sync) for c in status.ha_connection_info] == [(end, 0, True)]
        assert commit_log_bytes(slave, end) == commit_log_bytes(master, end)
        assert queue_entries(slave) == queue_entries(master)
