"""Queue locks, consumer connections, consume stats, offset resets and subscription group settings."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.broker.server import Broker
from rocketq.protocol import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    LanguageCode,
    MessageModel,
    MessageQueue,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SubscriptionData,
)
from rocketq.protocol.bodies import (
    ConsumerConnection,
    ConsumeStats,
    LockBatchRequestBody,
    LockBatchResponseBody,
    ResetOffsetBody,
    SubscriptionGroupConfigBody,
    SubscriptionGroupWrapper,
    TopicStatsTable,
    UnlockBatchRequestBody,
)
from rocketq.protocol.headers import ResetOffsetRequestHeader, UpdateConsumerOffsetRequestHeader
from rocketq.remoting import Connection, RemotingClient
from rocketq.testing import FakeClock, eventually
from rocketq.testing.cluster import wait_dispatched

from .conftest import broker_config
from .raw import pull_request, request, send_request

LOCK_LIVE_MS = 500


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    config = broker_config(tmp_path / "broker", rebalance_lock_max_live_time_ms=LOCK_LIVE_MS)
    async with Broker(config) as running:
        yield running


def queues(*ids: int) -> list[MessageQueue]:
    return [MessageQueue(topic="TopicL", broker_name="broker-a", queue_id=i) for i in ids]


async def lock(broker: Broker, client: RemotingClient, client_id: str, *ids: int) -> list[int]:
    body = LockBatchRequestBody(consumer_group="CG_LOCK", client_id=client_id, mq_set=queues(*ids))
    response = await client.invoke(broker.address, request(RequestCode.LOCK_BATCH_MQ, body=body.encode()), 3)
    assert response.code == ResponseCode.SUCCESS
    return [mq.queue_id for mq in LockBatchResponseBody.decode(response.body).lock_ok_mq_set]


async def unlock(broker: Broker, client: RemotingClient, client_id: str, *ids: int) -> None:
    body = UnlockBatchRequestBody(consumer_group="CG_LOCK", client_id=client_id, mq_set=queues(*ids))
    response = await client.invoke(broker.address, request(RequestCode.UNLOCK_BATCH_MQ, body=body.encode()), 3)
    assert response.code == ResponseCode.SUCCESS and not response.body


async def test_lock_unlock_expiry_and_renewal(tmp_path: Path, client: RemotingClient) -> None:
    clock = FakeClock()  # the leases run on the broker's clock
    config = broker_config(tmp_path / "broker", rebalance_lock_max_live_time_ms=LOCK_LIVE_MS)
    other = RemotingClient()
    async with Broker(config, clock=clock) as broker:
        try:
            assert await lock(broker, client, "c1", 0, 1) == [0, 1]
            assert await lock(broker, other, "c2", 0, 1) == []
            await unlock(broker, other, "c2", 0)  # not its lock: nothing happens
            assert await lock(broker, other, "c2", 0, 1) == []
            await unlock(broker, client, "c1", 0)
            assert await lock(broker, other, "c2", 0, 1) == [0]
            clock.advance(LOCK_LIVE_MS * 0.6 / 1000)
            assert await lock(broker, client, "c1", 1) == [1]  # renewed: c1's lease of 1 starts again
            assert await lock(broker, client, "c1", 0) == []  # c2's lease of 0 still runs
            clock.advance(LOCK_LIVE_MS * 0.6 / 1000)  # c2's lease of 0 ran out, c1's renewed one did not
            assert await lock(broker, other, "c2", 1) == []
            assert await lock(broker, client, "c1", 0, 1) == [0, 1]
        finally:
            await other.aclose()


def heartbeat(client_id: str, group: str, topic: str) -> RemotingCommand:
    data = HeartbeatData(
        client_id=client_id,
        consumer_data_set=[
            ConsumerData(
                group_name=group,
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                subscription_data_set=[SubscriptionData(topic=topic, sub_string="TagB || TagA", sub_version=7)],
            )
        ],
    )
    return request(RequestCode.HEART_BEAT, body=data.encode())


def commit(group: str, topic: str, queue_id: int, offset: int) -> RemotingCommand:
    header = UpdateConsumerOffsetRequestHeader(
        consumer_group=group, topic=topic, queue_id=queue_id, commit_offset=offset
    )
    return request(RequestCode.UPDATE_CONSUMER_OFFSET, header.to_ext_fields())


def reset(group: str, topic: str, timestamp: int, *, force: bool) -> RemotingCommand:
    header = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp, is_force=force)
    return request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header.to_ext_fields())


async def test_connections_stats_and_reset(broker: Broker, client: RemotingClient) -> None:
    resets: list[RemotingCommand] = []

    async def on_reset(command: RemotingCommand, connection: Connection) -> RemotingCommand | None:
        resets.append(command)
        return None

    member = RemotingClient(handlers={RequestCode.RESET_CONSUMER_CLIENT_OFFSET: on_reset})
    cpp_resets: list[RemotingCommand] = []

    async def on_cpp_reset(command: RemotingCommand, connection: Connection) -> RemotingCommand | None:
        cpp_resets.append(command)
        return None

    cpp_member = RemotingClient(handlers={RequestCode.RESET_CONSUMER_CLIENT_OFFSET: on_cpp_reset})
    try:
        joined = await member.invoke(broker.address, heartbeat("10.0.0.1@42", "CG_ADMIN", "TopicR"), 3)
        assert joined.code == ResponseCode.SUCCESS
        for body in (b"m0", b"m1", b"m2"):
            await client.invoke(broker.address, send_request("TopicR", body, queue_id=0), 3)
            await asyncio.sleep(0.01)  # distinct store timestamps
        for body in (b"n0", b"n1"):
            await client.invoke(broker.address, send_request("TopicR", body, queue_id=1), 3)
        await wait_dispatched(broker)
        for queue_id, offset in ((0, 3), (1, 1)):
            assert (await client.invoke(broker.address, commit("CG_ADMIN", "TopicR", queue_id, offset), 3)).code == 0

        listed = await client.invoke(
            broker.address, request(RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "CG_ADMIN"}), 3
        )
        assert listed.code == ResponseCode.SUCCESS
        connection = ConsumerConnection.decode(listed.body)
        (channel,) = connection.connection_set
        assert channel.client_id == "10.0.0.1@42" and channel.client_addr.startswith("127.0.0.1:")
        assert channel.language == "JAVA" and channel.version > 0
        subscription = connection.subscription_table["TopicR"]
        assert subscription.sub_string == "TagB || TagA" and subscription.tags_set == ["TagA", "TagB"]
        assert subscription.sub_version == 7 and len(subscription.code_set) == 2
        assert connection.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        assert json.loads(bytes(listed.body))["messageModel"] == "CLUSTERING"
        nobody = await client.invoke(
            broker.address, request(RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "CG_NONE"}), 3
        )
        assert nobody.code == ResponseCode.CONSUMER_NOT_ONLINE

        stats_response = await client.invoke(
            broker.address, request(RequestCode.GET_CONSUME_STATS, {"consumerGroup": "CG_ADMIN"}), 3
        )
        assert stats_response.code == ResponseCode.SUCCESS
        stats = ConsumeStats.decode(stats_response.body)
        table = {(row.topic, row.queue_id): row for row in stats.offset_table}
        assert set(table) == {("TopicR", q) for q in range(4)} | {("%RETRY%CG_ADMIN", 0)}
        last_consumed = broker.store.get_message_store_timestamp("TopicR", 0, 2)
        row = table["TopicR", 0]
        assert (row.broker_offset, row.consumer_offset, row.last_timestamp) == (3, 3, last_consumed)
        assert row.broker_name == "broker-a"
        row = table["TopicR", 1]
        assert (row.broker_offset, row.consumer_offset) == (2, 1) and row.last_timestamp > 0
        assert (table["TopicR", 2].broker_offset, table["TopicR", 2].last_timestamp) == (0, 0)
        assert stats.consume_tps == 0
        only = await client.invoke(
            broker.address,
            request(RequestCode.GET_CONSUME_STATS, {"consumerGroup": "CG_ADMIN", "topic": "%RETRY%CG_ADMIN"}),
            3,
        )
        assert [row.topic for row in ConsumeStats.decode(only.body).offset_table] == ["%RETRY%CG_ADMIN"]

        # A C++ member joins: it is told in the list form a Java broker sends C++ clients.
        cpp_heartbeat = heartbeat("10.0.0.2@43", "CG_ADMIN", "TopicR")
        cpp_heartbeat.language = LanguageCode.CPP
        assert (await cpp_member.invoke(broker.address, cpp_heartbeat, 3)).code == ResponseCode.SUCCESS

        # Back to the time of m1: queue 0 moves back to 1, queue 1 to 0 (n0 is younger).
        second = broker.store.get_message_store_timestamp("TopicR", 0, 1)
        assert second is not None
        moved = await client.invoke(broker.address, reset("CG_ADMIN", "TopicR", second, force=False), 3)
        assert moved.code == ResponseCode.SUCCESS
        new_offsets = {entry.queue_id: entry.offset for entry in ResetOffsetBody.decode(moved.body).offset_table}
        assert new_offsets == {0: 1, 1: 0, 2: 0, 3: 0}
        assert broker.offsets.offsets_of("CG_ADMIN", "TopicR") == new_offsets
        await eventually(lambda: resets and cpp_resets)
        (told,), (told_cpp,) = resets, cpp_resets
        assert told.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET and told.is_oneway
        assert told.ext_fields == {"topic": "TopicR", "group": "CG_ADMIN", "timestamp": str(second), "isForce": "false"}
        assert bytes(told.body) == bytes(moved.body)  # Java's map keyed by queue objects
        assert bytes(told.body).startswith(b'{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"TopicR"}:1,')
        assert told_cpp.ext_fields == told.ext_fields
        assert json.loads(bytes(told_cpp.body))["offsetTable"][0] == {
            "topic": "TopicR",
            "brokerName": "broker-a",
            "queueId": 0,
            "offset": 1,
        }

        # Without force an offset never moves forward; with force it does.
        future = int(time.time() * 1000) + 60_000
        kept = await client.invoke(broker.address, reset("CG_ADMIN", "TopicR", future, force=False), 3)
        assert [e.offset for e in ResetOffsetBody.decode(kept.body).offset_table] == [1, 0, 0, 0]
        forced = await client.invoke(broker.address, reset("CG_ADMIN", "TopicR", future, force=True), 3)
        assert [e.offset for e in ResetOffsetBody.decode(forced.body).offset_table] == [3, 2, 0, 0]
        assert broker.offsets.query("CG_ADMIN", "TopicR", 0) == 3
        missing = await client.invoke(broker.address, reset("CG_ADMIN", "NoSuchTopic", 0, force=True), 3)
        assert missing.code == ResponseCode.TOPIC_NOT_EXIST
    finally:
        await member.aclose()
        await cpp_member.aclose()


async def all_groups(broker: Broker, client: RemotingClient) -> SubscriptionGroupWrapper:
    response = await client.invoke(broker.address, request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG), 3)
    assert response.code == ResponseCode.SUCCESS
    return SubscriptionGroupWrapper.decode(response.body)


async def test_subscription_groups_and_consume_enable(broker: Broker, client: RemotingClient) -> None:
    await client.invoke(broker.address, send_request("TopicS", b"x"), 3)
    await wait_dispatched(broker)
    before = await all_groups(broker, client)
    body = b'{"groupName":"CG_OFF","consumeEnable":false,"retryMaxTimes":"3","retryQueueNums":2}'
    created = await client.invoke(
        broker.address, request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body), 3
    )
    assert created.code == ResponseCode.SUCCESS
    after = await all_groups(broker, client)
    assert after.subscription_group_table["CG_OFF"] == SubscriptionGroupConfigBody(
        group_name="CG_OFF", consume_enable=False, retry_max_times=3, retry_queue_nums=2
    )
    assert after.data_version.counter > before.data_version.counter
    assert (
        json.loads((broker.config.store_path_root_dir / "config" / "subscriptionGroup.json").read_text())[
            "subscriptionGroupTable"
        ]["CG_OFF"]["consumeEnable"]
        is False
    )

    blocked = await client.invoke(broker.address, pull_request("TopicS", 0, 0, group="CG_OFF"), 3)
    assert blocked.code == ResponseCode.NO_PERMISSION

    await client.invoke(broker.address, commit("CG_OFF", "TopicS", 0, 1), 3)
    deleted = await client.invoke(
        broker.address,
        request(RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "CG_OFF", "removeOffset": "true"}),
        3,
    )
    assert deleted.code == ResponseCode.SUCCESS
    assert "CG_OFF" not in (await all_groups(broker, client)).subscription_group_table
    assert broker.offsets.query("CG_OFF", "TopicS", 0) is None
    allowed = await client.invoke(broker.address, pull_request("TopicS", 0, 0, group="CG_OFF"), 3)
    assert allowed.code == ResponseCode.SUCCESS  # auto-created again, with the defaults

    bad = await client.invoke(broker.address, request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=b"{}"), 3)
    assert bad.code == ResponseCode.SYSTEM_ERROR


async def test_topic_stats_answer_in_javas_form(broker: Broker, client: RemotingClient) -> None:
    """GET_TOPIC_STATS_INFO (202), what Java's mqadmin topicStatus asks: every write queue's offsets and
    its last message's store time, keyed by queue objects."""
    for body in (b"s0", b"s1"):
        await client.invoke(broker.address, send_request("TopicS", body, queue_id=1), 3)
    await wait_dispatched(broker)
    answer = await client.invoke(broker.address, request(RequestCode.GET_TOPIC_STATS_INFO, {"topic": "TopicS"}), 3)
    assert answer.code == ResponseCode.SUCCESS
    assert bytes(answer.body).startswith(
        b'{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"TopicS"}:'
        b'{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0},'
    )
    rows = {row.queue_id: row for row in TopicStatsTable.decode(answer.body).offset_table}
    assert sorted(rows) == list(range(len(rows))) and len(rows) == broker.topics.get("TopicS").write_queue_nums
    assert (rows[1].min_offset, rows[1].max_offset) == (0, 2)
    assert rows[1].last_update_timestamp == broker.store.get_message_store_timestamp("TopicS", 1, 1)
    missing = await client.invoke(broker.address, request(RequestCode.GET_TOPIC_STATS_INFO, {"topic": "NoSuch"}), 3)
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST
