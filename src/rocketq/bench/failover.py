"""``rocketq bench replication``'s failover runs: how long a broker group is without a master.

A real etcd (``rocketq.testing.etcd``) and two brokers of one group with failover on (SYNC_MASTER,
``failoverLeaseTtl`` seconds), each in a child process, a NameServer and a producer in the bench's
process. Each round SIGKILLs the group's master while a producer sends, and times the kill to the moment
etcd names the other broker master (``promoted_s``) and to the first send the new master stores
(``first_send_s``: acknowledged, or stored and answered SLAVE_NOT_AVAILABLE, as a SYNC_MASTER without a
slave does). The killed broker is then restarted; it rejoins as the new master's slave (cutting off what
no slave got) before the next round kills the new master.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

from rocketq.bench import Measurement, Sink
from rocketq.client import ClientConfig, Message, Producer, ProducerConfig, SendStatus
from rocketq.client.errors import MQClientError
from rocketq.failover.election import GroupKeys, MasterRecord, ReplicaReport
from rocketq.failover.etcd import EtcdClient
from rocketq.testing import LocalCluster
from rocketq.testing.cluster_process import ClusterProcess
from rocketq.testing.etcd import EtcdServer, etcd_binary

TOPIC = "BenchFailover"
LEASE_TTL_S = 2
CHECK_INTERVAL_MS = 200
PRODUCER_POLL_S = 1.0
ROUND_TIMEOUT_S = 60.0
KEYS = GroupKeys.of("/rocketq", "DefaultCluster", "broker-a")


def _member(root: Path, etcd: EtcdServer, namesrv: str, broker_id: int) -> ClusterProcess:
    settings: dict[str, Any] = {
        "mapped_file_size_commit_log": 64 * 1024 * 1024,
        "namesrv_addr": namesrv,
        "broker_id": broker_id,
        "broker_role": "SYNC_MASTER",
        "failover_enable": True,
        "failover_etcd_endpoints": etcd.endpoint,
        "failover_lease_ttl": LEASE_TTL_S,
        "failover_check_interval": CHECK_INTERVAL_MS,
        "ha_send_heartbeat_interval": 500,
        "ha_housekeeping_interval": 3000,
    }
    return ClusterProcess(root / f"member-{broker_id}", **settings)


async def _master(client: EtcdClient) -> MasterRecord | None:
    found = await client.get(KEYS.master)
    return None if found is None else MasterRecord.decode(found.value)


async def _wait_master(client: EtcdClient, other_than: int | None = None) -> MasterRecord:
    while True:
        record = await _master(client)
        if record is not None and record.ha_address and record.broker_id != other_than:
            return record
        await asyncio.sleep(0.01)


async def _wait_follows(client: EtcdClient, follower: int, leader: int) -> None:
    """Until ``follower`` reports the log end ``leader`` reports (each reports to etcd)."""
    while True:
        reports = {}
        for broker_id in (follower, leader):
            found = await client.get(KEYS.replica(broker_id))
            if found is not None:
                reports[broker_id] = ReplicaReport.decode(found.value).max_offset
        if len(reports) == 2 and reports[follower] == reports[leader]:
            return
        await asyncio.sleep(0.05)


async def _stored(producer: Producer, body: bytes) -> None:
    """Send until the group's master stores it."""
    while True:
        try:
            result = await producer.send(Message(TOPIC, body))
        except MQClientError:
            continue
        if result.status in (SendStatus.SEND_OK, SendStatus.SLAVE_NOT_AVAILABLE):
            return


async def _run(root: Path, rounds: int, emit: Sink) -> None:
    with EtcdServer(root / "etcd") as etcd:
        async with LocalCluster(root / "namesrv", brokers=0) as cluster, EtcdClient([etcd.endpoint]) as client:
            namesrv = cluster.namesrv_addr
            members = {1: await asyncio.to_thread(_member(root, etcd, namesrv, 1).start)}
            try:
                first = await asyncio.wait_for(_wait_master(client), ROUND_TIMEOUT_S)
                members[2] = await asyncio.to_thread(_member(root, etcd, namesrv, 2).start)
                config = ProducerConfig(
                    group="bench-failover",
                    client=ClientConfig(namesrv_addr=namesrv, poll_name_server_interval_s=PRODUCER_POLL_S),
                )
                promoted: list[float] = []
                first_send: list[float] = []
                leader = first.broker_id
                async with Producer(config) as producer:
                    for number in range(rounds):
                        follower = 3 - leader
                        await asyncio.wait_for(_wait_follows(client, follower, leader), ROUND_TIMEOUT_S)
                        await asyncio.wait_for(_stored(producer, b"before"), ROUND_TIMEOUT_S)
                        os.kill(members[leader].pid, signal.SIGKILL)
                        killed = time.perf_counter()
                        sending = asyncio.create_task(_stored(producer, f"after-{number}".encode()))
                        record = await asyncio.wait_for(_wait_master(client, other_than=leader), ROUND_TIMEOUT_S)
                        promoted.append(time.perf_counter() - killed)
                        await asyncio.wait_for(sending, ROUND_TIMEOUT_S)
                        first_send.append(time.perf_counter() - killed)
                        members[leader].stop()
                        members[leader] = await asyncio.to_thread(_member(root, etcd, namesrv, leader).start)
                        leader = record.broker_id
            finally:
                for member in members.values():
                    member.stop()
    measurement = Measurement.from_counts("failover", None, rounds, sum(first_send), 0)
    measurement.extra.update(
        {
            "promoted_s": " ".join(f"{seconds:.2f}" for seconds in promoted),
            "first_send_s": " ".join(f"{seconds:.2f}" for seconds in first_send),
            "first_send_max_s": round(max(first_send), 2),
            "lease_ttl_s": LEASE_TTL_S,
            "producer_poll_s": PRODUCER_POLL_S,
        }
    )
    emit(measurement)


def run_failover_bench(root: Path, rounds: int, emit: Sink) -> bool:
    """Run the failover rounds in ``root``; False (nothing measured) when etcd is not installed."""
    if etcd_binary() is None:
        return False
    from rocketq.bench.running import run_loop

    run_loop(_run(root, rounds, emit))
    return True


NOTES = (
    "failover: a SYNC_MASTER of a two-broker group with failover on (etcd lease TTL 2 s) SIGKILLed per round;",
    "promoted_s: kill to etcd naming the other broker master; first_send_s: kill to the first send the new",
    "master stores (producer route poll 1 s; an unreachable broker makes the producer ask the NameServer again).",
)
