"""The send handler remembers the topics sends found sendable (``SendTopics``): every change of a topic
through the admin requests (a permission change, more queues, a delete, a re-creation) is seen by the
next send, as when each send checked its topic afresh."""

from __future__ import annotations

from pathlib import Path

from rocketq.broker.server import Broker
from rocketq.broker.topic_config import PERM_READ, PERM_WRITE
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.headers import CreateTopicRequestHeader, DeleteTopicRequestHeader
from rocketq.remoting import RemotingClient

from .conftest import broker_config
from .raw import request, send_request

TOPIC = "CachedTopic"


async def _admin(client: RemotingClient, broker: Broker, command: RemotingCommand) -> None:
    answer = await client.invoke(broker.address, command, 3)
    assert answer.code == ResponseCode.SUCCESS, answer.remark


def _update(perm: int, queues: int) -> RemotingCommand:
    header = CreateTopicRequestHeader(
        topic=TOPIC, default_topic="TBW102", read_queue_nums=queues, write_queue_nums=queues, perm=perm,
        topic_filter_type="SINGLE_TAG",
    )  # fmt: skip
    return request(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())


async def _send(client: RemotingClient, broker: Broker, queue_id: int = 0) -> RemotingCommand:
    return await client.invoke(broker.address, send_request(TOPIC, b"x", queue_id=queue_id), 3)


async def test_topic_changes_reach_the_next_send(tmp_path: Path, client: RemotingClient) -> None:
    async with Broker(broker_config(tmp_path / "broker", auto_create_topic_enable=False)) as broker:
        missing = await _send(client, broker)
        assert missing.code == ResponseCode.TOPIC_NOT_EXIST

        await _admin(client, broker, _update(PERM_READ | PERM_WRITE, 2))
        for offset in range(3):  # the first send checks the topic, the others find it remembered
            sent = await _send(client, broker)
            assert sent.code == ResponseCode.SUCCESS and sent.ext_fields["queueOffset"] == str(offset)
        assert (await _send(client, broker, queue_id=3)).code == ResponseCode.SYSTEM_ERROR  # 2 queues

        await _admin(client, broker, _update(PERM_READ, 2))
        read_only = await _send(client, broker)
        assert read_only.code == ResponseCode.NO_PERMISSION and "forbidden" in (read_only.remark or "")

        await _admin(client, broker, _update(PERM_READ | PERM_WRITE, 4))
        assert (await _send(client, broker)).code == ResponseCode.SUCCESS
        fourth = await _send(client, broker, queue_id=3)
        assert fourth.code == ResponseCode.SUCCESS and fourth.ext_fields["queueId"] == "3"

        delete = DeleteTopicRequestHeader(topic=TOPIC).to_ext_fields()
        await _admin(client, broker, request(RequestCode.DELETE_TOPIC_IN_BROKER, delete))
        assert (await _send(client, broker)).code == ResponseCode.TOPIC_NOT_EXIST

        await _admin(client, broker, _update(PERM_WRITE, 1))
        assert (await _send(client, broker)).code == ResponseCode.SUCCESS


async def test_a_topic_made_by_a_send_is_remembered_with_its_config(tmp_path: Path, client: RemotingClient) -> None:
    """Auto-creation in a send changes the table; the sends after it still see later changes."""
    async with Broker(broker_config(tmp_path / "broker")) as broker:
        for _ in range(2):
            assert (await _send(client, broker)).code == ResponseCode.SUCCESS
        await _admin(client, broker, _update(PERM_READ, 4))
        assert (await _send(client, broker)).code == ResponseCode.NO_PERMISSION
