"""The producer against a real in-process cluster: a NameServer and two Brokers on loopback."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.client import (
    ClientConfig,
    ConsumerConfig,
    Message,
    MQClientError,
    Producer,
    PullConsumer,
    PushConsumer,
    SendStatus,
    SyncProducer,
    decode_messages,
)
from rocketq.client.admin import AdminClient
from rocketq.client.message import MessageExt
from rocketq.common.message import Property
from rocketq.protocol import RequestCode, ResponseCode, make_request
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.remoting.connection import next_opaque
from rocketq.testing import LocalCluster, ThreadedCluster, wait_until
from rocketq.testing.cluster_process import ClusterProcess


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(tmp_path, brokers=2) as running:
        yield running


async def pull_all(producer: Producer, address: str, topic: str, queue_id: int) -> list[MessageExt]:
    header = PullMessageRequestHeader(
        consumer_group="CG",
        topic=topic,
        queue_id=queue_id,
        queue_offset=0,
        max_msg_nums=1000,
        sys_flag=4,
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription="*",
        sub_version=0,
    )
    request = make_request(RequestCode.PULL_MESSAGE, opaque=next_opaque(), ext_fields=header.to_ext_fields())
    response = await producer.instance.remoting.invoke(address, request, 3)
    return decode_messages(response.body) if response.code == ResponseCode.SUCCESS else []


async def all_messages(cluster: LocalCluster, producer: Producer, topic: str) -> list[MessageExt]:
    await cluster.wait_dispatched()
    found = []
    for broker in cluster.brokers:
        config = broker.topics.get(topic)
        for queue_id in range(config.read_queue_nums if config else 0):
            found.extend(await pull_all(producer, broker.address, topic, queue_id))
    return found


async def test_send_spreads_over_brokers_and_round_trips(cluster: LocalCluster) -> None:
    async with Producer(group="PG", namesrv_addr=cluster.namesrv_addr) as producer:
        results = []
        for i in range(16):
            results.append(
                await producer.send(
                    Message("TopicA", f"m{i}".encode(), tags="TagA", keys=[f"k{i}", "all"], properties={"color": "red"})
                )
            )
        assert {r.status for r in results} == {SendStatus.SEND_OK}
        assert {r.message_queue.broker_name for r in results} == {"broker-a", "broker-b"}
        messages = await all_messages(cluster, producer, "TopicA")
    assert sorted(m.body for m in messages) == sorted(f"m{i}".encode() for i in range(16))
    one = next(m for m in messages if m.body == b"m3")
    assert one.tags == "TagA" and one.keys == ["k3", "all"] and one.user_properties == {"color": "red"}
    assert one.msg_id == next(r.msg_id for r in results if r.offset_msg_id == one.offset_msg_id)


async def test_compressed_batch_oneway_async_and_orderly(cluster: LocalCluster) -> None:
    async with Producer(group="PG", namesrv_addr=cluster.namesrv_addr) as producer:
        big = bytes(range(256)) * 40
        await producer.send(Message("TopicB", big))
        batch = await producer.send_batch([Message("TopicB", f"b{i}".encode()) for i in range(5)])
        assert batch.msg_id.count(",") == 4
        await producer.send_oneway(Message("TopicB", b"oneway"))
        called: list[object] = []
        task = producer.send_async(Message("TopicB", b"async"), lambda result, error: called.append(result or error))
        assert (await task).status is SendStatus.SEND_OK and called
        ordered = [
            await producer.send_orderly(Message("TopicB", f"o{i}".encode()), sharding_key="order-42") for i in range(6)
        ]
        assert len({r.message_queue for r in ordered}) == 1
        assert [r.queue_offset for r in ordered] == sorted(r.queue_offset for r in ordered)
        async with asyncio.timeout(15):  # the oneway send has no answer to wait for
            while b"oneway" not in [m.body for m in await all_messages(cluster, producer, "TopicB")]:
                await asyncio.sleep(0.05)
        messages = await all_messages(cluster, producer, "TopicB")
    bodies = {m.body for m in messages}
    assert big in bodies and {b"oneway", b"async", b"b0", b"b4", b"o5"} <= bodies
    compressed = next(m for m in messages if m.body == big)
    assert compressed.sys_flag & 1  # stored compressed, inflated on read


async def test_delayed_message_waits_for_its_level(cluster: LocalCluster) -> None:
    async with Producer(group="PG", namesrv_addr=cluster.namesrv_addr) as producer:
        sent = await producer.send(Message("TopicDelay", b"later", delay_level=1))
        async with asyncio.timeout(15):
            while not (messages := await all_messages(cluster, producer, "TopicDelay")):
                await asyncio.sleep(0.05)
    assert [m.body for m in messages] == [b"later"]
    # stored again when level 1 (1 s) had passed since it was sent: a slow machine only makes it later
    assert messages[0].store_timestamp - messages[0].born_timestamp >= 1000
    assert Property.DELAY_TIME_LEVEL not in messages[0].properties
    assert messages[0].msg_id == sent.msg_id


async def test_failover_to_the_other_broker(cluster: LocalCluster) -> None:
    async with Producer(group="PG", namesrv_addr=cluster.namesrv_addr) as producer:
        await producer.send(Message("TopicC", b"warm-up"))
        await cluster.brokers[0].aclose()
        results = [await producer.send(Message("TopicC", f"after-{i}".encode())) for i in range(6)]
    assert {r.message_queue.broker_name for r in results} == {"broker-b"}


async def test_unknown_nameserver_and_bad_messages(cluster: LocalCluster) -> None:
    async with Producer(group="PG", namesrv_addr=cluster.namesrv_addr) as producer:
        with pytest.raises(MQClientError, match="empty"):
            await producer.send(Message("TopicD", b""))
        with pytest.raises(MQClientError, match="exceeds"):
            await producer.send(Message("TopicD", bytes(4 * 1024 * 1024 + 1)))
    async with Producer(group="PG", namesrv_addr="127.0.0.1:1") as lost:
        with pytest.raises(MQClientError, match="NameServer"):
            await lost.send(Message("TopicD", b"x"))


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        (Message("bad topic!", b"x"), "characters outside"),
        (Message("T" * 128, b"x"), "longer than 127"),
        (Message("SCHEDULE_TOPIC_XXXX", b"x"), "written by the broker"),
        (Message("TopicE", b"x", properties={"k": "a\x02b"}), "separates properties"),
        (Message("TopicE", b"x", properties={"k\x01": "v"}), "separates properties"),
        (Message("TopicE", b"x", tags="a\x01b"), "separates properties"),
        (Message("TopicE", b"x", keys=["fine", "a\x02"]), "separates properties"),
        (Message("TopicE", b"x", properties={"k": ""}), "empty name or value"),
    ],
)
async def test_a_message_that_cannot_travel_is_refused_before_anything_is_sent(message: Message, problem: str) -> None:
    # no NameServer answers at this address: a check that asked anyone would fail differently
    async with Producer(group="PG", namesrv_addr="127.0.0.1:1") as producer:
        with pytest.raises(MQClientError, match=problem):
            await producer.send(message)
        with pytest.raises(MQClientError, match=problem):
            await producer.send_batch([Message(message.topic, b"ok"), message])


async def test_non_ascii_tags_keys_and_properties_round_trip(cluster: LocalCluster) -> None:
    async with Producer(group="PG", namesrv_addr=cluster.namesrv_addr) as producer:
        await producer.send(Message("TopicU", b"x", tags="Tä", keys=["ключ"], properties={"kü": "vé 1"}))
        [message] = await all_messages(cluster, producer, "TopicU")
    assert (message.tags, message.keys, message.user_properties) == ("Tä", ["ключ"], {"kü": "vé 1"})


async def test_starting_twice_or_after_closing_is_refused_clearly(cluster: LocalCluster) -> None:
    producer = await Producer(group="PG", namesrv_addr=cluster.namesrv_addr).start()
    with pytest.raises(MQClientError, match="already started"):
        await producer.start()
    await producer.aclose()
    await producer.aclose()  # twice is fine
    for attempt in (producer.send(Message("TopicL", b"x")), producer.start()):
        with pytest.raises(MQClientError, match="closed"):
            await attempt
    config = ConsumerConfig(group="CL", client=ClientConfig(namesrv_addr=cluster.namesrv_addr))
    push = PushConsumer(config, lambda messages: None)
    push.subscribe("TopicL")
    pull = PullConsumer(config)
    for consumer in (push, pull):
        await consumer.start()
        with pytest.raises(MQClientError, match="already started"):
            await consumer.start()
        await consumer.aclose()
        with pytest.raises(MQClientError, match="closed"):
            await consumer.start()


def test_a_closed_sync_producer_says_so(tmp_path: Path) -> None:
    with ThreadedCluster(tmp_path) as cluster:
        producer = SyncProducer(group="PG", namesrv_addr=cluster.namesrv_addr)
        producer.close()
        producer.close()  # twice is fine
        with pytest.raises(MQClientError, match="closed"):
            producer.send(Message("TopicL", b"x"))
        with pytest.raises(MQClientError, match="closed"):
            producer.send_async(Message("TopicL", b"x"))


def test_sync_producer(tmp_path: Path) -> None:
    with ThreadedCluster(tmp_path) as cluster, SyncProducer(group="PG", namesrv_addr=cluster.namesrv_addr) as producer:
        result = producer.send(Message("TopicS", b"blocking"))
        assert result.status is SendStatus.SEND_OK
        assert producer.send_async(Message("TopicS", b"future")).result(5).status is SendStatus.SEND_OK
        producer.send_oneway(Message("TopicS", b"oneway"))
        assert producer.send_batch([Message("TopicS", b"1"), Message("TopicS", b"2")]).queue_offset >= 0
        assert producer.send_orderly(Message("TopicS", b"o"), sharding_key="k").status is SendStatus.SEND_OK
        store = cluster.cluster.brokers[0].store
        # the dispatcher indexes the last records (the oneway send's among them) soon after they arrive
        wait_until(lambda: sum(store.get_max_offset_in_queue("TopicS", q) for q in range(4)) >= 6)
        assert sum(store.get_max_offset_in_queue("TopicS", q) for q in range(4)) == 6


async def test_route_drops_a_broker_whose_connection_dies(cluster: LocalCluster, tmp_path: Path) -> None:
    # a third broker in its own process, registered with this cluster's name server only
    dying = ClusterProcess(tmp_path / "dying", broker_name="broker-c", namesrv_addr=cluster.namesrv_addr).start()
    try:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.update_topic("TopicE", cluster="DefaultCluster")
            brokers = await admin.topic_route("TopicE")
            assert {b.broker_name for b in brokers.broker_datas} == {"broker-a", "broker-b", "broker-c"}
            os.kill(dying.pid, signal.SIGKILL)  # its connection drops without an unregister
            async with asyncio.timeout(30):  # the name server notices the closed connection at once
                while {b.broker_name for b in (await admin.topic_route("TopicE")).broker_datas} != {
                    "broker-a",
                    "broker-b",
                }:
                    await asyncio.sleep(0.05)
    finally:
        dying.stop()
