"""A former master that rejoins as a slave (manual failover: its slave was restarted as master) cuts off
the writes no slave got, at the point its epoch entries part from the new master's, then holds the new
master's log, queues and index byte for byte."""

from __future__ import annotations

from pathlib import Path

from rocketq.testing import LocalCluster
from rocketq.testing.cluster import wait_replicated

from .test_replication import commit_log_bytes, queue_entries, send_some


async def test_a_former_master_cuts_its_diverged_tail_and_follows(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path) as cluster:
        old = cluster.brokers[0]
        slave = await cluster.start_slave(0)
        await send_some(cluster, 30, "shared")
        await wait_replicated(old.store.commit_log.max_offset, slave)
        shared_end = old.store.commit_log.max_offset
        await cluster.stop_slave(slave)
        await send_some(cluster, 20, "lost")  # only the old master has these
        lost_end = old.store.commit_log.max_offset
        await old.aclose()

        new = await cluster.start_broker(0, store_path_root_dir=tmp_path / "broker-0-slave-1")
        assert [entry.start_offset for entry in new.store.epochs.entries] == [0, shared_end]
        await send_some(cluster, 25, "new", pad=40)
        rejoined = await cluster.start_slave(0, store_path_root_dir=tmp_path / "broker-0")
        end = new.store.commit_log.max_offset
        assert end > lost_end  # the old tail and the new one overlap: offsets alone could not tell
        await wait_replicated(end, rejoined)

        assert rejoined.ha_slave is not None and rejoined.ha_slave.truncations == 1
        assert commit_log_bytes(rejoined, end) == commit_log_bytes(new, end)
        assert rejoined.store.commit_log.max_offset == end
        assert queue_entries(rejoined) == queue_entries(new)
        for topic in ("Orders", "Payments"):
            assert not [k for i in range(20) for k in rejoined.store.query_message(topic, f"lost{i}")]
        found = {f"new{i}" for i in range(25) for topic in ("Orders", "Payments")
                 if rejoined.store.query_message(topic, f"new{i}")}  # fmt: skip
        assert found == {f"new{i}" for i in range(25)}
        assert rejoined.store.epochs.entries == new.store.epochs.entries
