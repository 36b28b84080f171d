"""Automatic failover with a real etcd and brokers in child processes: the SYNC_MASTER is SIGKILLed, its
slave is promoted and takes the sends, nothing the old master acknowledged is lost; the old master,
restarted, is fenced: it refuses writes, follows the new master, cuts off the tail no slave got and then
holds the new master's log byte for byte."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rocketq.client import Message, Producer, ProducerConfig, SendStatus
from rocketq.client.config import ClientConfig
from rocketq.client.errors import MQClientError
from rocketq.common.message_id import parse_offset_message_id
from rocketq.failover.election import GroupKeys, MasterRecord, ReplicaReport
from rocketq.failover.etcd import EtcdClient
from rocketq.protocol import ResponseCode, make_request
from rocketq.protocol.headers import SendMessageRequestHeader
from rocketq.remoting import RemotingClient
from rocketq.remoting.connection import next_opaque
from rocketq.store import MessageStore
from rocketq.testing import LocalCluster
from rocketq.testing.cluster_process import ClusterProcess
from rocketq.testing.etcd import EtcdServer

LEASE_TTL_S = 2
PROMOTION_BOUND_S = 10.0  # the bound: a slave promoted within 10 s of its master's death


def member_settings(etcd: EtcdServer, namesrv_addr: str, broker_id: int) -> dict[str, Any]:
    return {
        "namesrv_addr": namesrv_addr,
        "broker_id": broker_id,
        "broker_role": "SYNC_MASTER",
        "failover_enable": True,
        "failover_etcd_endpoints": etcd.endpoint,
        "failover_lease_ttl": LEASE_TTL_S,
        "failover_check_interval": 200,
        "ha_send_heartbeat_interval": 500,
        "ha_housekeeping_interval": 3000,
        "store_settings": {"sync_flush_timeout_ms": 800},
    }


async def master_record(client: EtcdClient) -> MasterRecord | None:
    found = await client.get(GroupKeys.of("/rocketq", "DefaultCluster", "broker-a").master)
    return None if found is None else MasterRecord.decode(found.value)


async def wait_master(client: EtcdClient, broker_id: int, timeout_s: float = 30.0) -> MasterRecord:
    async with asyncio.timeout(timeout_s):
        while True:
            record = await master_record(client)
            if record is not None and record.broker_id == broker_id and record.ha_address:
                return record
            await asyncio.sleep(0.05)


def producer(namesrv_addr: str, group: str) -> Producer:
    client = ClientConfig(namesrv_addr=namesrv_addr, poll_name_server_interval_s=0.3)
    return Producer(ProducerConfig(group=group, client=client))


def log_bytes(store: MessageStore, end: int) -> bytes:
    out = bytearray()
    while len(out) < end:
        chunk = store.read_commit_log(len(out), 1 << 20)
        assert chunk, f"no bytes at {len(out)}"
        out += chunk
    return bytes(out[:end])


def store_of(root: Path) -> MessageStore:
    """The store of the broker a ClusterProcess ran in ``root`` (opened once the process stopped)."""
    config = LocalCluster(root).broker_config(0)
    return MessageStore(config.store_config())


@pytest.fixture
async def namesrv(tmp_path: Path) -> AsyncIterator[str]:
    async with LocalCluster(tmp_path / "namesrv", brokers=0) as cluster:
        yield cluster.namesrv_addr


async def send_raw(address: str) -> int:
    """A plain SEND_MESSAGE to the broker at ``address``; its answer's code."""
    header = SendMessageRequestHeader(
        producer_group="P", topic="Orders", default_topic="TBW102", default_topic_queue_nums=4, queue_id=0,
        sys_flag=0, born_timestamp=0, flag=0, properties="",
    )  # fmt: skip
    client = RemotingClient()
    try:
        request = make_request(header.CODE, opaque=next_opaque(), ext_fields=header.to_ext_fields(), body=b"x")
        return (await client.invoke(address, request, 5)).code
    finally:
        await client.aclose()


async def report_of(client: EtcdClient, broker_id: int) -> ReplicaReport | None:
    found = await client.get(GroupKeys.of("/rocketq", "DefaultCluster", "broker-a").replica(broker_id))
    return None if found is None else ReplicaReport.decode(found.value)


async def test_a_killed_master_is_replaced_and_fenced_when_it_returns(
    tmp_path: Path, etcd: EtcdServer, namesrv: str
) -> None:
    # (started on a thread: the NameServer they register with runs on this loop)
    old = await asyncio.to_thread(ClusterProcess(tmp_path / "one", **member_settings(etcd, namesrv, 1)).start)
    new: ClusterProcess | None = None
    returned: ClusterProcess | None = None
    try:
        async with EtcdClient([etcd.endpoint]) as client:
            first = await wait_master(client, 1)
            new = await asyncio.to_thread(ClusterProcess(tmp_path / "two", **member_settings(etcd, namesrv, 2)).start)
            acknowledged: list[tuple[bytes, int]] = []
            async with producer(namesrv, "P") as sender:

                async def send_until_ok(body: bytes, *, stored: bool = False) -> None:
                    """Send until acknowledged (``stored``: until stored, acknowledged or not: a SYNC_MASTER
                    without a slave stores a send and answers SLAVE_NOT_AVAILABLE)."""
                    while True:
                        try:
                            result = await sender.send(Message("Orders", body))
                        except MQClientError:  # (no master in the route for a moment)
                            continue
                        if result.status is SendStatus.SEND_OK:
                            acknowledged.append((body, parse_offset_message_id(result.offset_msg_id)[2]))
                            return
                        if stored and result.status is SendStatus.SLAVE_NOT_AVAILABLE:
                            return

                async with asyncio.timeout(30):  # the slave connects, then sends are acknowledged
                    for number in range(200):
                        await send_until_ok(f"before-{number}".encode())

                # the slave stops (SIGSTOP); once the master has dropped it (silent for haHousekeepingInterval:
                # sends are answered SLAVE_NOT_AVAILABLE at once), what the master stores reaches no slave
                os.kill(new.pid, signal.SIGSTOP)
                try:
                    async with asyncio.timeout(30):
                        while True:
                            result = await sender.send(Message("Orders", b"probe"))
                            assert result.status is not SendStatus.SEND_OK
                            if result.status is SendStatus.SLAVE_NOT_AVAILABLE:
                                break
                        for lost in range(5):
                            result = await sender.send(Message("Orders", f"lost-{lost}".encode()))
                            assert result.status is SendStatus.SLAVE_NOT_AVAILABLE
                    old_end_offset = parse_offset_message_id(result.offset_msg_id)[2]
                    os.kill(old.pid, signal.SIGKILL)
                    killed_at = time.monotonic()
                finally:
                    os.kill(new.pid, signal.SIGCONT)
                old.stop()

                promoted = await wait_master(client, 2, timeout_s=PROMOTION_BOUND_S + 20)
                promoted_after = time.monotonic() - killed_at
                async with asyncio.timeout(30):
                    await send_until_ok(b"after-0", stored=True)
                first_send_after = time.monotonic() - killed_at
                assert promoted.epoch > first.epoch
                assert promoted_after < PROMOTION_BOUND_S, f"promoted {promoted_after:.1f} s after the kill"
                print(f"promoted {promoted_after:.2f} s, first send {first_send_after:.2f} s after the kill")
                for number in range(1, 50):
                    await send_until_ok(f"after-{number}".encode(), stored=True)

                # the old master comes back: etcd names another master of a newer epoch
                again = ClusterProcess(tmp_path / "one", **member_settings(etcd, namesrv, 1))
                returned = await asyncio.to_thread(again.start)
                assert await send_raw(returned.broker_addr) == ResponseCode.SERVICE_NOT_AVAILABLE
                async with asyncio.timeout(30):  # acknowledged again once it follows
                    for number in range(50, 80):
                        await send_until_ok(f"after-{number}".encode())

            async def caught_up() -> bool:  # (each broker reports where its log ends to etcd)
                leader, follower = await report_of(client, 2), await report_of(client, 1)
                return leader is not None and follower is not None and follower.max_offset == leader.max_offset

            async with asyncio.timeout(30):
                while not await caught_up():
                    await asyncio.sleep(0.05)
    finally:
        for process in (returned, new, old):  # (the follower first: a master stopped hands over at once)
            if process is not None:
                process.stop()

    with store_of(tmp_path / "two") as leader, store_of(tmp_path / "one") as follower:
        for body, physical in acknowledged:
            record = leader.lookup_message(physical)
            assert record is not None and record.body == body, f"{body!r} acknowledged, not on the new master"
        assert leader.epochs.entries[-1].start_offset <= old_end_offset  # the old master's tail was its own
        end = leader.commit_log.max_offset
        assert follower.commit_log.max_offset == end
        assert log_bytes(follower, end) == log_bytes(leader, end)
        assert follower.epochs.entries == leader.epochs.entries
        assert leader.epochs.last_epoch == promoted.epoch
        assert not any(b"lost-" in record.body for _, record in follower.commit_log.records(0))
