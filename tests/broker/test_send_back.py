"""CONSUMER_SEND_MSG_BACK (36): retries through the schedule service, then the dead-letter queue. The
broker runs on a ``FakeClock``: a retry is due when the test moves it past the level's delay, and a dead
letter, never delayed, is there while it stands still."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.broker.server import Broker
from rocketq.common.message import decode_properties
from rocketq.common.message_id import parse_offset_message_id
from rocketq.common.record import StoredRecord
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.bodies import SubscriptionGroupConfigBody
from rocketq.protocol.headers import ConsumerSendMsgBackRequestHeader
from rocketq.remoting import RemotingClient
from rocketq.testing import FakeClock
from rocketq.testing.cluster import wait_dispatched

from ..client.helpers import schedule_pass
from .conftest import broker_config
from .raw import pull_request, records, request, send_request

LEVELS = "100ms 200ms 300ms 400ms 500ms 600ms"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def broker(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Broker]:
    async with Broker(broker_config(tmp_path / "broker", message_delay_level=LEVELS), clock=clock) as running:
        yield running


def send_back_request(
    offset: int,
    group: str,
    delay_level: int = 0,
    *,
    max_reconsume_times: int | None = None,
    version: int | None = None,
) -> RemotingCommand:
    header = ConsumerSendMsgBackRequestHeader(
        offset=offset, group=group, delay_level=delay_level, max_reconsume_times=max_reconsume_times
    )
    return request(RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext_fields(), version=version)


async def stored_record(broker: Broker, client: RemotingClient, topic: str) -> StoredRecord | None:
    """The one record of ``topic``'s queue 0 once the broker has indexed what it stored; None without."""
    await wait_dispatched(broker)
    response = await client.invoke(broker.address, pull_request(topic, 0, 0), 3)
    if response.code != ResponseCode.SUCCESS:
        return None
    (record,) = records(response)
    return record


async def record_now(broker: Broker, client: RemotingClient, topic: str) -> StoredRecord:
    """The one record of ``topic``, there without the broker's clock moving."""
    record = await stored_record(broker, client, topic)
    assert record is not None, f"nothing in {topic}"
    return record


async def send_original(broker: Broker, client: RemotingClient) -> tuple[str, int]:
    sent = await client.invoke(
        broker.address, send_request("TopicA", b"payload", TAGS="TagA", KEYS="k1 k2", UNIQ_KEY="UNIQ-1"), 3
    )
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    message_id = sent.ext_fields["msgId"]
    return message_id, parse_offset_message_id(message_id)[2]


async def test_retry_after_the_delay_then_dead_letter(broker: Broker, client: RemotingClient, clock: FakeClock) -> None:
    message_id, offset = await send_original(broker, client)
    original = broker.store.lookup_message(offset)
    assert original is not None

    schedule = broker.schedule
    assert schedule is not None
    sent_back_at = clock.time()
    back = await client.invoke(broker.address, send_back_request(offset, "CG_RETRY"), 3)
    assert back.code == ResponseCode.SUCCESS, back.remark
    clock.advance(sent_back_at + 0.15 - clock.time())
    await schedule_pass(clock, schedule, limit=sent_back_at + 0.25)
    assert await stored_record(broker, client, "%RETRY%CG_RETRY") is None  # level 3 + 0 = 300 ms: not yet
    clock.advance(sent_back_at + 0.3 - clock.time())
    await schedule_pass(clock, schedule)
    if schedule.delivered == 0:  # (the pass that ran may have begun before the move)
        await schedule_pass(clock, schedule)
    retry = await record_now(broker, client, "%RETRY%CG_RETRY")
    assert retry.topic == "%RETRY%CG_RETRY" and retry.body == b"payload" and retry.reconsume_times == 1
    assert retry.born_timestamp == original.born_timestamp and retry.born_host == original.born_host
    properties = decode_properties(retry.properties)
    assert properties["RETRY_TOPIC"] == "TopicA" and properties["ORIGIN_MESSAGE_ID"] == message_id
    assert properties["UNIQ_KEY"] == "UNIQ-1" and properties["TAGS"] == "TagA" and properties["KEYS"] == "k1 k2"
    assert "DELAY" not in properties
    topic = broker.topics.get("%RETRY%CG_RETRY")
    assert topic is not None and topic.perm == 6 and topic.read_queue_nums == 1

    # The retry fails too; with at most one reconsumption it becomes a dead letter, undelayed.
    dead_back = send_back_request(retry.physical_offset, "CG_RETRY", max_reconsume_times=1)
    assert (await client.invoke(broker.address, dead_back, 3)).code == ResponseCode.SUCCESS
    dead = await record_now(broker, client, "%DLQ%CG_RETRY")
    assert dead.reconsume_times == 2 and dead.body == b"payload"
    dead_properties = decode_properties(dead.properties)
    assert dead_properties["RETRY_TOPIC"] == "TopicA" and dead_properties["ORIGIN_MESSAGE_ID"] == message_id
    dlq = broker.topics.get("%DLQ%CG_RETRY")
    assert dlq is not None and dlq.perm == 6 and dlq.read_queue_nums == 1


async def test_negative_delay_level_goes_straight_to_the_dlq(broker: Broker, client: RemotingClient) -> None:
    _, offset = await send_original(broker, client)
    back = await client.invoke(broker.address, send_back_request(offset, "CG_DEAD", delay_level=-1), 3)
    assert back.code == ResponseCode.SUCCESS
    dead = await record_now(broker, client, "%DLQ%CG_DEAD")
    assert dead.reconsume_times == 1 and decode_properties(dead.properties)["RETRY_TOPIC"] == "TopicA"
    assert broker.topics.get("%RETRY%CG_DEAD") is None


async def test_group_max_applies_to_old_clients(broker: Broker, client: RemotingClient) -> None:
    group = SubscriptionGroupConfigBody(group_name="CG_OLD", retry_max_times=0)
    created = await client.invoke(
        broker.address, request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=group.encode()), 3
    )
    assert created.code == ResponseCode.SUCCESS
    _, offset = await send_original(broker, client)
    # A C++ client (version 63 < 121) cannot raise the group's maximum through the header.
    back = send_back_request(offset, "CG_OLD", max_reconsume_times=16, version=63)
    assert (await client.invoke(broker.address, back, 3)).code == ResponseCode.SUCCESS
    dead = await record_now(broker, client, "%DLQ%CG_OLD")
    assert dead.reconsume_times == 1


async def test_unknown_offset_is_a_system_error(broker: Broker, client: RemotingClient) -> None:
    await send_original(broker, client)
    response = await client.invoke(broker.address, send_back_request(1 << 40, "CG_RETRY"), 3)
    assert response.code == ResponseCode.SYSTEM_ERROR and response.remark and "offset" in response.remark
