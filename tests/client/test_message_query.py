"""Message queries through ``AdminClient`` against two real brokers: by key (merged over both brokers,
hash collisions dropped, time ranges to the millisecond), by unique key, by offset id, by queue offset,
and the errors a user sees."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import pytest

from rocketq.client import Message, MQClientError, Producer, SendResult
from rocketq.client.admin import AdminClient
from rocketq.client.message import MessageExt, MessageQueue, decode_messages
from rocketq.client.message_query import kept, offset_id_address
from rocketq.common.message import java_string_hash
from rocketq.common.record import StoredRecord, encode_record
from rocketq.testing import LocalCluster

from .helpers import TOPIC

# "Aa" and "BB" have the same Java hashCode, so "Orders#Aa" and "Orders#BB" share an index slot and hash.
COLLIDING = ("Aa", "BB")


def on_broker(name: str) -> object:
    """A ``send_orderly`` selector: the first queue of broker ``name``."""

    def select(queues: Sequence[MessageQueue], message: Message, arg: object) -> MessageQueue:
        return next(q for q in queues if q.broker_name == name)

    return select


async def send_to(producer: Producer, broker: str, message: Message) -> SendResult:
    return await producer.send_orderly(message, selector=on_broker(broker))  # type: ignore[arg-type]


def bodies(messages: list[MessageExt]) -> list[bytes]:
    return [m.body for m in messages]


async def next_millisecond(after_ms: int) -> None:
    """Return once the wall clock (the stores' clock) has passed ``after_ms``: stored times then differ."""
    while time.time() * 1000 <= after_ms + 1:
        await asyncio.sleep(0.002)


def test_the_colliding_keys_collide() -> None:
    assert java_string_hash(f"{TOPIC}#{COLLIDING[0]}") == java_string_hash(f"{TOPIC}#{COLLIDING[1]}")
    assert java_string_hash("AaX") == java_string_hash("BBX")


async def test_query_by_key_merges_both_brokers_and_drops_hash_collisions(cluster: LocalCluster) -> None:
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        await send_to(producer, "broker-a", Message(TOPIC, b"aa-on-a", keys="Aa"))
        await send_to(producer, "broker-b", Message(TOPIC, b"aa-on-b", keys=["x", "Aa", "y"]))
        for i in range(3):  # newer than the Aa messages: first in the index chain of their slot
            await send_to(producer, "broker-a", Message(TOPIC, b"bb-%d" % i, keys="BB"))
            await send_to(producer, "broker-b", Message(TOPIC, b"bb-b-%d" % i, keys="BB"))
    await cluster.wait_dispatched()
    async with AdminClient(cluster.namesrv_addr) as admin:
        found = await admin.query_by_key(TOPIC, "Aa")
        assert sorted(bodies(found)) == [b"aa-on-a", b"aa-on-b"]
        assert {m.store_host for m in found} == {b.address for b in cluster.brokers}
        assert all("Aa" in m.keys for m in found)
        assert sorted(bodies(await admin.query_by_key(TOPIC, "BB"))) == sorted(
            [b"bb-%d" % i for i in range(3)] + [b"bb-b-%d" % i for i in range(3)]
        )
        # each broker fills its limit with real matches, skipping the newer colliding entries
        assert sorted(bodies(await admin.query_by_key(TOPIC, "Aa", max_num=2))) == [b"aa-on-a", b"aa-on-b"]
        newest = await admin.query_by_key(TOPIC, "BB", max_num=2)
        assert len(newest) == 2 and set(bodies(newest)) <= {b"bb-1", b"bb-2", b"bb-b-1", b"bb-b-2"}
        assert await admin.query_by_key(TOPIC, "A") == []
    store = cluster.brokers[0].store
    assert [r.body for r in store.query_message(TOPIC, "Aa", max_num=1, unique=False)] == [b"aa-on-a"]


async def test_a_unique_key_query_returns_only_that_unique_key(cluster: LocalCluster) -> None:
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        first = await send_to(producer, "broker-a", Message(TOPIC, b"one", properties={"UNIQ_KEY": "AaX"}))
        await send_to(producer, "broker-a", Message(TOPIC, b"two", properties={"UNIQ_KEY": "BBX"}))
        await send_to(producer, "broker-b", Message(TOPIC, b"three", properties={"UNIQ_KEY": "BBX"}, keys="AaX"))
    assert first.msg_id == "AaX"
    await cluster.wait_dispatched()
    async with AdminClient(cluster.namesrv_addr) as admin:
        assert bodies(await admin.query_by_unique_key(TOPIC, "AaX")) == [b"one"]
        assert sorted(bodies(await admin.query_by_unique_key(TOPIC, "BBX"))) == [b"three", b"two"]  # stored twice
        assert bodies(await admin.query_by_key(TOPIC, "AaX")) == [b"three"]  # a plain key is one of KEYS
        assert bodies(await admin.query_by_id(TOPIC, "AaX")) == [b"one"]
        assert await admin.query_by_unique_key(TOPIC, "CCX") == []


async def test_a_message_is_found_by_key_as_soon_as_its_send_is_answered(cluster: LocalCluster) -> None:
    """No wait for the dispatcher: a lone send's keys are indexed after its answer, and a query takes
    them first (``IndexService.build(later=True)``)."""
    async with (
        Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer,
        AdminClient(cluster.namesrv_addr) as admin,
    ):
        for number in range(5):
            key = f"at-once-{number}"
            sent = await send_to(producer, "broker-a", Message(TOPIC, b"m%d" % number, keys=key))
            assert bodies(await admin.query_by_key(TOPIC, key)) == [b"m%d" % number]
            assert bodies(await admin.query_by_unique_key(TOPIC, sent.msg_id)) == [b"m%d" % number]


async def test_time_ranges_are_kept_to_the_millisecond(cluster: LocalCluster) -> None:
    sent: list[SendResult] = []
    async with (
        Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer,
        AdminClient(cluster.namesrv_addr) as admin,
    ):
        for number, broker in enumerate(["broker-a", "broker-b", "broker-a"]):
            sent.append(await send_to(producer, broker, Message(TOPIC, b"t%d" % number, keys="timed")))
            stored = await admin.view_message(sent[-1].offset_msg_id)
            await next_millisecond(stored.store_timestamp)
        await cluster.wait_dispatched()
        everything = await admin.query_by_key(TOPIC, "timed")
        assert bodies(everything) == [b"t0", b"t1", b"t2"]
        t0, t1, t2 = (m.store_timestamp for m in everything)
        assert t0 < t1 < t2  # (usually inside one second: the index alone could not tell them apart)

        async def between(begin_ms: int, end_ms: int | None) -> list[bytes]:
            return bodies(await admin.query_by_key(TOPIC, "timed", begin_ms=begin_ms, end_ms=end_ms))

        assert await between(t1, t1) == [b"t1"]
        assert await between(t0, t1) == [b"t0", b"t1"]
        assert await between(t0 + 1, t2 - 1) == [b"t1"]
        assert await between(t1 + 1, None) == [b"t2"]
        assert await between(0, t0 - 1) == []
        assert await between(t2 + 1, None) == []


async def test_by_offset_id_by_queue_offset_and_clear_errors(cluster: LocalCluster) -> None:
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        sent = await send_to(producer, "broker-b", Message(TOPIC, b"\x00\xffbinary", tags="TagB"))
    queue = sent.message_queue
    async with AdminClient(cluster.namesrv_addr) as admin:
        viewed = await admin.view_message(sent.offset_msg_id)
        assert (viewed.body, viewed.tags, viewed.msg_id) == (b"\x00\xffbinary", "TagB", sent.msg_id)
        by_offset = await admin.query_by_offset(TOPIC, queue.broker_name, queue.queue_id, sent.queue_offset)
        assert by_offset.offset_msg_id == sent.offset_msg_id and by_offset.body == viewed.body
        assert [m.offset_msg_id for m in await admin.query_by_id(None, sent.offset_msg_id)] == [sent.offset_msg_id]

        with pytest.raises(MQClientError, match=r"offset 5 of .*: it holds offsets 0 to 0"):
            await admin.query_by_offset(TOPIC, queue.broker_name, queue.queue_id, 5)
        with pytest.raises(MQClientError, match="the queue is empty"):
            await admin.query_by_offset(TOPIC, "broker-a", 3, 0)
        with pytest.raises(MQClientError, match="no master on broker 'broker-z'"):
            await admin.query_by_offset(TOPIC, "broker-z", 0, 0)
        with pytest.raises(MQClientError, match=r"client message id \(UNIQ_KEY\), give its topic \(-t\)"):
            await admin.query_by_id(None, sent.msg_id)
        assert offset_id_address(sent.msg_id) is None and offset_id_address(sent.offset_msg_id) is not None
        host, offset = sent.offset_msg_id[:16], int(sent.offset_msg_id[16:], 16)
        inside = f"{host}{offset + 7:016X}"  # 7 bytes into the record: no record starts there
        with pytest.raises(MQClientError, match=r"not found: broker .* has none at offset"):
            await admin.view_message(inside)
        assert await admin.query_by_id(None, inside) == []
        with pytest.raises(MQClientError, match="not an offset message id"):
            await admin.view_message("nonsense")


def record(topic: str, properties: str, store_timestamp: int) -> bytes:
    fields = StoredRecord(
        0, 0, 0, 0, 0, 0, 0, 0, store_timestamp, bytes(8), store_timestamp, bytes(8), 0, 0, b"b", topic, properties
    )
    return encode_record(fields)


def test_the_client_drops_what_a_broker_returns_for_a_colliding_hash() -> None:
    """RocketMQ's brokers return every record the index finds for the hash; the client keeps only matches."""
    answer = decode_messages(
        record(TOPIC, "KEYS\x01Aa other", 1000)
        + record(TOPIC, "KEYS\x01BB", 1000)  # the same hash
        + record(TOPIC, "UNIQ_KEY\x01Aa", 1000)  # the key as a unique key: not a plain match
        + record("Other", "KEYS\x01Aa", 1000)  # another topic
        + record(TOPIC, "KEYS\x01Aa", 2500)  # outside the range
    )
    plain = kept(answer, TOPIC, "Aa", unique=False, begin_ms=0, end_ms=2000)
    assert [m.properties_text for m in plain] == ["KEYS\x01Aa other"]
    unique = kept(answer, TOPIC, "Aa", unique=True, begin_ms=0, end_ms=2000)
    assert [m.properties_text for m in unique] == ["UNIQ_KEY\x01Aa"]


async def test_queries_reuse_a_route_for_its_ttl_then_look_again(cluster: LocalCluster) -> None:
    """A topic that gains a broker: queries see it once their cached route is ``query_route_ttl_s`` old."""
    now = [0.0]
    async with AdminClient(cluster.namesrv_addr, query_route_ttl_s=30.0, clock=lambda: now[0]) as admin:
        await admin.update_topic("Growing", broker_addr=cluster.brokers[0].address, read_queues=1, write_queues=1)
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            await send_to(producer, "broker-a", Message("Growing", b"on-a", keys="g"))
        await cluster.wait_dispatched()
        assert bodies(await admin.query_by_key("Growing", "g")) == [b"on-a"]
        await admin.update_topic("Growing", broker_addr=cluster.brokers[1].address, read_queues=1, write_queues=1)
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            on_b = await send_to(producer, "broker-b", Message("Growing", b"on-b", keys="g"))
        assert on_b.message_queue.broker_name == "broker-b"
        await cluster.wait_dispatched()
        now[0] += 29.9
        assert bodies(await admin.query_by_key("Growing", "g")) == [b"on-a"]  # the cached route: broker-a only
        now[0] += 0.1
        assert sorted(bodies(await admin.query_by_key("Growing", "g"))) == [b"on-a", b"on-b"]
