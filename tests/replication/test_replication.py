"""Master/slave replication between real brokers on loopback: the slave's CommitLog, ConsumeQueues, index
and message ids are the master's; SYNC_MASTER acknowledges only what a slave has; a slave refuses sends."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rocketq.broker.config import BrokerRole
from rocketq.broker.server import Broker
from rocketq.client import Message, Producer, SendStatus
from rocketq.common.message_id import parse_offset_message_id
from rocketq.protocol import ResponseCode, make_request
from rocketq.protocol.headers import SendMessageRequestHeader
from rocketq.remoting import RemotingClient
from rocketq.remoting.connection import next_opaque
from rocketq.store import FlushDiskType
from rocketq.testing import LocalCluster, eventually
from rocketq.testing.cluster import wait_replicated

TOPICS = ("Orders", "Payments")


def commit_log_bytes(broker: Broker, end: int) -> bytes:
    out = bytearray()
    while len(out) < end:
        chunk = broker.store.read_commit_log(len(out), 1 << 20)
        assert chunk, f"no bytes at {len(out)}"
        out += chunk
    return bytes(out[:end])


def queue_entries(broker: Broker) -> dict[tuple[str, int], list[int | None]]:
    store = broker.store
    entries = {}
    for queue in store.queues():
        topic, queue_id = queue.topic, queue.queue_id
        lo, hi = store.get_min_offset_in_queue(topic, queue_id), store.get_max_offset_in_queue(topic, queue_id)
        entries[(topic, queue_id)] = [store.get_commit_log_offset_in_queue(topic, queue_id, i) for i in range(lo, hi)]
    return entries


async def send_some(cluster: LocalCluster, count: int, prefix: str = "m", pad: int = 0) -> list[tuple[str, int]]:
    """Send ``count`` messages over the topics; (key, physical offset) of each acknowledged one."""
    sent = []
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        for i in range(count):
            key = f"{prefix}{i}"
            body = (key.encode() * (1 + i % 7)).ljust(pad, b".")
            result = await producer.send(Message(TOPICS[i % 2], body, keys=key))
            assert result.status is SendStatus.SEND_OK
            sent.append((key, parse_offset_message_id(result.offset_msg_id)[2]))
    return sent


async def test_a_slave_holds_the_masters_log_queues_index_and_ids(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path) as cluster:
        master = cluster.brokers[0]
        slave = await cluster.start_slave(0)
        sent = await send_some(cluster, 200)
        end = master.store.commit_log.max_offset
        await asyncio.wait_for(wait_replicated(end, slave), 10)
        await cluster.wait_dispatched()
        assert commit_log_bytes(slave, end) == commit_log_bytes(master, end)
        assert queue_entries(slave) == queue_entries(master) != {}
        for key, physical in sent:  # the same record at the same offset: the same offset message id
            on_slave = slave.store.lookup_message(physical)
            assert on_slave is not None and on_slave == master.store.lookup_message(physical)
            assert on_slave.body.startswith(key.encode())
        topic = TOPICS[1]
        by_key = slave.store.query_message(topic, "m9")  # the index too
        assert [r.body for r in by_key] == [b"m9" * 3] and by_key == master.store.query_message(topic, "m9")
        state = master.replication_state()
        assert state.role == "MASTER" and state.acked_offset == end and [s.lag_bytes for s in state.slaves] == [0]
        slave_state = slave.replication_state()
        assert slave_state.role == "SLAVE" and slave_state.connected and slave_state.max_offset == end
        assert slave_state.master_address == master.ha_address


async def test_a_slave_refuses_sends(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path) as cluster:
        slave = await cluster.start_slave(0)
        header = SendMessageRequestHeader(
            producer_group="P", topic="Orders", default_topic="TBW102", default_topic_queue_nums=4, queue_id=0,
            sys_flag=0, born_timestamp=0, flag=0, properties="",
        )  # fmt: skip
        client = RemotingClient()
        try:
            request = make_request(header.CODE, opaque=next_opaque(), ext_fields=header.to_ext_fields(), body=b"no")
            response = await client.invoke(slave.address, request, 5)
        finally:
            await client.aclose()
        assert response.code == ResponseCode.SERVICE_NOT_AVAILABLE and "slave" in (response.remark or "")
        assert slave.store.commit_log.max_offset == 0


async def test_a_restarted_slave_catches_up_exactly(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path) as cluster:
        master = cluster.brokers[0]
        slave = await cluster.start_slave(0)
        await send_some(cluster, 50, "a")
        await asyncio.wait_for(wait_replicated(master.store.commit_log.max_offset, slave), 10)
        await cluster.stop_slave(slave)
        await send_some(cluster, 80, "b")
        slave = await cluster.start_slave(0)
        end = master.store.commit_log.max_offset
        await asyncio.wait_for(wait_replicated(end, slave), 10)
        await cluster.wait_dispatched()
        assert slave.store.commit_log.max_offset == end
        assert commit_log_bytes(slave, end) == commit_log_bytes(master, end)
        assert queue_entries(slave) == queue_entries(master)


async def test_sync_master_acknowledges_only_what_the_slave_has(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path, broker_role=BrokerRole.SYNC_MASTER) as cluster:
        master = cluster.brokers[0]
        slave = await cluster.start_slave(0)
        await eventually(lambda: master.replication_state().slaves, what="the slave reports")
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            for i in range(60):
                result = await producer.send(Message("Orders", f"sync{i}".encode(), keys=f"sync{i}"))
                assert result.status is SendStatus.SEND_OK
                physical = parse_offset_message_id(result.offset_msg_id)[2]
                record = slave.store.read_commit_log(physical, 1)  # on the slave when acknowledged
                assert record, f"message {i} acknowledged but not on the slave"
                assert slave.store.commit_log.max_offset >= physical + 1
            results = await asyncio.gather(*(producer.send(Message("Orders", f"burst{i}".encode())) for i in range(64)))
        assert {r.status for r in results} == {SendStatus.SEND_OK}
        for result in results:
            physical = parse_offset_message_id(result.offset_msg_id)[2]
            assert slave.store.read_commit_log(physical, 1)


async def test_sync_master_without_a_slave_answers_slave_not_available(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path, broker_role=BrokerRole.SYNC_MASTER) as cluster:
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            result = await asyncio.wait_for(producer.send(Message("Orders", b"alone")), 5)
        assert result.status is SendStatus.SLAVE_NOT_AVAILABLE
        assert cluster.brokers[0].store.commit_log.max_offset > 0  # stored, as RocketMQ does


async def test_sync_master_fails_sends_while_its_slave_is_gone_and_recovers(tmp_path: Path) -> None:
    settings = {"sync_flush_timeout_ms": 300}
    async with LocalCluster(tmp_path, broker_role=BrokerRole.SYNC_MASTER, store_settings=settings) as cluster:
        master = cluster.brokers[0]
        slave = await cluster.start_slave(0, store_settings={})
        await eventually(lambda: master.replication_state().slaves, what="the slave reports")
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            assert (await producer.send(Message("Orders", b"before"))).status is SendStatus.SEND_OK
            await cluster.stop_slave(slave)
            await eventually(lambda: not master.replication_state().slaves, what="the master sees the slave go")
            result = await asyncio.wait_for(producer.send(Message("Orders", b"while gone")), 5)
            assert result.status in (SendStatus.SLAVE_NOT_AVAILABLE, SendStatus.FLUSH_SLAVE_TIMEOUT)
            slave = await cluster.start_slave(0, store_settings={})
            await eventually(lambda: master.replication_state().slaves, what="the slave is back")
            result = await producer.send(Message("Orders", b"after"))
            assert result.status is SendStatus.SEND_OK
            assert slave.store.read_commit_log(parse_offset_message_id(result.offset_msg_id)[2], 1)
        end = master.store.commit_log.max_offset
        await asyncio.wait_for(wait_replicated(end, slave), 10)
        assert commit_log_bytes(slave, end) == commit_log_bytes(master, end)


async def test_sync_master_with_sync_flush_acknowledges_what_is_fsynced_and_replicated(tmp_path: Path) -> None:
    async with LocalCluster(
        tmp_path, broker_role=BrokerRole.SYNC_MASTER, flush_disk_type=FlushDiskType.SYNC_FLUSH
    ) as cluster:
        master = cluster.brokers[0]
        slave = await cluster.start_slave(0)
        await eventually(lambda: master.replication_state().slaves, what="the slave reports")
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            results = await asyncio.gather(*(producer.send(Message("Orders", f"d{i}".encode())) for i in range(40)))
        assert {r.status for r in results} == {SendStatus.SEND_OK}
        last = max(parse_offset_message_id(r.offset_msg_id)[2] for r in results)
        assert master.store.stats().commit_log_flushed_offset > last
        assert slave.store.commit_log.max_offset > last


async def test_a_new_slave_starts_at_the_masters_last_file(tmp_path: Path) -> None:
    file_size = 64 * 1024
    async with LocalCluster(tmp_path, mapped_file_size_commit_log=file_size) as cluster:
        master = cluster.brokers[0]
        await send_some(cluster, 150, pad=1500)  # about 4 files of records (and fillers)
        end = master.store.commit_log.max_offset
        start = end - end % file_size
        assert start >= 2 * file_size
        slave = await cluster.start_slave(0)
        await asyncio.wait_for(wait_replicated(end, slave), 10)
        assert slave.store.commit_log.min_offset == start
        assert slave.store.read_commit_log(start, file_size) == master.store.read_commit_log(start, file_size)
        after = await send_some(cluster, 150, "later", pad=1500)  # and it goes on across files
        end = master.store.commit_log.max_offset
        await asyncio.wait_for(wait_replicated(end, slave), 10)
        for _key, physical in after:
            assert slave.store.lookup_message(physical) == master.store.lookup_message(physical) is not None


async def test_records_cut_across_frames_are_dispatched_once_whole(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path, ha_transfer_batch_size=777) as cluster:  # frames end inside records
        master = cluster.brokers[0]
        slave = await cluster.start_slave(0)
        sent = await send_some(cluster, 120, pad=1500)
        end = master.store.commit_log.max_offset
        await asyncio.wait_for(wait_replicated(end, slave), 10)
        await cluster.wait_dispatched()
        assert queue_entries(slave) == queue_entries(master)
        assert {(q.topic, q.queue_id) for q in slave.store.queues()} == {
            (q.topic, q.queue_id) for q in master.store.queues()
        }
        assert all(slave.store.lookup_message(physical) is not None for _key, physical in sent)


async def test_a_slave_with_a_longer_log_is_refused_not_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A diverged slave (here: a log its master never had) without epoch entries to compare (a store
    from before they were kept) acknowledges nothing for a SYNC_MASTER."""
    async with LocalCluster(tmp_path / "other") as other:
        await send_some(other, 20)
    (tmp_path / "other" / "broker-0" / "epochs").unlink()
    async with LocalCluster(tmp_path, broker_role=BrokerRole.SYNC_MASTER) as cluster:
        master = cluster.brokers[0]
        await cluster.start_slave(0, store_path_root_dir=tmp_path / "other" / "broker-0")
        await eventually(lambda: "diverged" in caplog.text, what="the master refuses the slave")
        assert not master.replication_state().slaves
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            result = await asyncio.wait_for(producer.send(Message("Orders", b"x")), 5)
        assert result.status is SendStatus.SLAVE_NOT_AVAILABLE
