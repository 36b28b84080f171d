"""A group member that dies (SIGKILL) or hangs (SIGSTOP: connection open, heartbeats stop) loses its
queues to the survivors: at once for a closed connection, after the channel expiry for a silent one."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rocketq.client import ClientConfig, PushConsumer
from rocketq.client.admin import AdminClient
from rocketq.testing import LocalCluster, eventually

from .helpers import consumer_config

CHILD = Path(__file__).with_name("consumer_child.py")


async def start_child(cluster: LocalCluster, group: str) -> asyncio.subprocess.Process:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(CHILD), cluster.namesrv_addr, group, "Work", stdout=subprocess.PIPE, env=env
    )
    assert child.stdout is not None
    async with asyncio.timeout(20):
        assert (await child.stdout.readline()).strip() == b"ready"
    return child


@pytest.mark.parametrize("failure", ["killed", "hung"])
async def test_survivor_takes_over_the_queues(tmp_path: Path, failure: str) -> None:
    async with LocalCluster(
        tmp_path, brokers=1, channel_expired_timeout_ms=2000, client_channel_scan_interval_ms=200
    ) as cluster:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.update_topic("Work", cluster="DefaultCluster", read_queues=8, write_queues=8)
        # a 60 s rebalance period: only the broker's notification can move the queues in time; heartbeats
        # every 0.5 s keep the survivor itself inside the 2 s channel expiry
        client = ClientConfig(
            namesrv_addr=cluster.namesrv_addr, instance_name="survivor", heartbeat_broker_interval_s=0.5
        )
        config = consumer_config(cluster, "F", rebalance_interval_s=60.0, client=client)
        survivor = PushConsumer(config, lambda messages: None)
        survivor.subscribe("Work")
        await survivor.start()
        child = await start_child(cluster, "F")
        try:

            def mine() -> int:
                return len([q for q in survivor.assigned_queues if q.topic == "Work"])

            await eventually(lambda: mine() == 4)
            broker = cluster.brokers[0]
            child.send_signal(signal.SIGKILL if failure == "killed" else signal.SIGSTOP)
            await eventually(lambda: mine() == 8, timeout_s=30)
            expired = broker.channels_expired
        finally:
            with contextlib.suppress(ProcessLookupError):
                child.kill()
            await child.wait()
            await survivor.aclose()
    if failure == "killed":
        assert expired == 0  # the broker saw the connection close and notified the group at once
    else:
        assert expired >= 1  # the open, silent connection was dropped by the channel expiry
