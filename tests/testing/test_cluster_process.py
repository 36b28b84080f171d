"""ClusterProcess: a NameServer + Broker in a child process, configured broker.conf style."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocketq.client import Message, Producer
from rocketq.client.admin import AdminClient
from rocketq.store import FlushDiskType
from rocketq.testing.cluster_process import ClusterProcess, ClusterProcessError, typed_overrides


def test_overrides_take_the_config_types() -> None:
    typed = typed_overrides({"flush_disk_type": "SYNC_FLUSH", "mapped_file_size_commit_log": "1048576"})
    assert typed == {"flush_disk_type": FlushDiskType.SYNC_FLUSH, "mapped_file_size_commit_log": 1048576}
    with pytest.raises(ClusterProcessError, match="not BrokerConfig fields"):
        typed_overrides({"flushDiskTypo": "SYNC_FLUSH"})


async def test_child_serves_sends_and_stops_cleanly(tmp_path: Path) -> None:
    cluster = ClusterProcess(tmp_path, flush_disk_type="SYNC_FLUSH", mapped_file_size_commit_log=1 << 20)
    with cluster:
        async with AdminClient(cluster.namesrv_addr) as admin:
            stats = [await admin.broker_runtime_info(a) for a in (await admin.master_addresses()).values()]
        assert len(stats) == 1
        async with Producer(group="p", namesrv_addr=cluster.namesrv_addr) as producer:
            result = await producer.send(Message("ChildTopic", b"hello"))
        assert result.queue_offset == 0
        pid = cluster.pid
    assert not (tmp_path / "broker-0" / "abort").exists()  # SIGTERM closed the store cleanly
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the child is gone
