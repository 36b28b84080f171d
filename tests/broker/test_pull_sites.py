"""A pull's checks are made once per (group, topic, queue) while nothing they read changes
(``rocketq.broker.pull_sites``): every change of what they read (the pull's subscription, the group's
heartbeat subscription, the topic's permission and queues, the group's consumeEnable and broadcasting
rule) is seen by the next pull of the same site, as when each pull checked afresh."""

from __future__ import annotations

from rocketq.broker.server import Broker
from rocketq.broker.topic_config import PERM_READ, PERM_WRITE
from rocketq.protocol import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SubscriptionData,
)
from rocketq.protocol.headers import CreateTopicRequestHeader, PullMessageRequestHeader
from rocketq.remoting import RemotingClient
from rocketq.testing.cluster import wait_dispatched

from .raw import bodies, pull_request, request, send_request

TOPIC = "SiteTopic"


async def _ok(client: RemotingClient, broker: Broker, command: RemotingCommand) -> None:
    answer = await client.invoke(broker.address, command, 3)
    assert answer.code == ResponseCode.SUCCESS, answer.remark


async def _tagged(client: RemotingClient, broker: Broker) -> None:
    """TOPIC's queue 0 holds ``a`` (TagA) at offset 0 and ``b`` (TagB) at 1."""
    await _ok(client, broker, send_request(TOPIC, b"a", TAGS="TagA"))
    await _ok(client, broker, send_request(TOPIC, b"b", TAGS="TagB"))
    await wait_dispatched(broker)


async def _pulled(client: RemotingClient, broker: Broker, command: RemotingCommand) -> list[bytes]:
    """The bodies a pull was answered with (none: the queue has nothing for it, PULL_NOT_FOUND)."""
    answer = await client.invoke(broker.address, command, 3)
    assert answer.code in (ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND), (answer.code, answer.remark)
    return bodies(answer)


def _heartbeat(group: str, expression: str, model: MessageModel = MessageModel.CLUSTERING) -> RemotingCommand:
    data = HeartbeatData(
        client_id="site-client",
        consumer_data_set=[
            ConsumerData(
                group_name=group,
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=model,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                subscription_data_set=[SubscriptionData(topic=TOPIC, sub_string=expression, sub_version=1)],
            )
        ],
    )
    return request(RequestCode.HEART_BEAT, body=data.encode())


def _pull_by_heartbeat(group: str) -> RemotingCommand:
    """A pull without a subscription (as Java's push consumers send it): the heartbeat's is used."""
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic=TOPIC,
        queue_id=0,
        queue_offset=0,
        max_msg_nums=32,
        sys_flag=0,
        commit_offset=0,
        suspend_timeout_millis=0,
        sub_version=0,
    )
    return request(RequestCode.PULL_MESSAGE, header.to_ext_fields())


def _topic(perm: int, queues: int) -> RemotingCommand:
    header = CreateTopicRequestHeader(
        topic=TOPIC, default_topic="TBW102", read_queue_nums=queues, write_queue_nums=queues, perm=perm,
        topic_filter_type="SINGLE_TAG",
    )  # fmt: skip
    return request(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())


def _group(name: str, *, consume: bool = True, broadcast: bool = True) -> RemotingCommand:
    body = f'{{"groupName":"{name}","consumeEnable":{str(consume).lower()},'
    body += f'"consumeBroadcastEnable":{str(broadcast).lower()}}}'
    return request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body.encode())


async def test_the_pulls_own_subscription_changing_is_followed(broker: Broker, client: RemotingClient) -> None:
    await _tagged(client, broker)
    for expression, expected in [
        ("TagA", [b"a"]),
        ("TagA", [b"a"]),
        ("TagB", [b"b"]),
        ("*", [b"a", b"b"]),
        ("TagA || TagB", [b"a", b"b"]),
        ("TagA", [b"a"]),
    ]:
        assert await _pulled(client, broker, pull_request(TOPIC, 0, 0, expression=expression)) == expected


async def test_the_heartbeats_subscription_changing_is_followed(broker: Broker, client: RemotingClient) -> None:
    await _tagged(client, broker)
    missing = await client.invoke(broker.address, _pull_by_heartbeat("CG_HB"), 3)
    assert missing.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    for expression, expected in [("TagA", [b"a"]), ("TagB", [b"b"]), ("*", [b"a", b"b"])]:
        await _ok(client, broker, _heartbeat("CG_HB", expression))
        assert await _pulled(client, broker, _pull_by_heartbeat("CG_HB")) == expected
        assert await _pulled(client, broker, _pull_by_heartbeat("CG_HB")) == expected
    # the same site pulled with a subscription of its own, then by the heartbeat's again
    assert await _pulled(client, broker, pull_request(TOPIC, 0, 0, expression="TagA", group="CG_HB")) == [b"a"]
    assert await _pulled(client, broker, _pull_by_heartbeat("CG_HB")) == [b"a", b"b"]


async def test_the_topics_permission_and_queues_changing_are_followed(broker: Broker, client: RemotingClient) -> None:
    await _ok(client, broker, _topic(PERM_READ | PERM_WRITE, 4))
    await _tagged(client, broker)
    assert await _pulled(client, broker, pull_request(TOPIC, 0, 0)) == [b"a", b"b"]
    assert await _pulled(client, broker, pull_request(TOPIC, 3, 0)) == []
    await _ok(client, broker, _topic(PERM_WRITE, 4))
    for queue_id in (0, 3):
        refused = await client.invoke(broker.address, pull_request(TOPIC, queue_id, 0), 3)
        assert refused.code == ResponseCode.NO_PERMISSION, refused.remark
    await _ok(client, broker, _topic(PERM_READ | PERM_WRITE, 2))
    assert await _pulled(client, broker, pull_request(TOPIC, 0, 0)) == [b"a", b"b"]
    gone = await client.invoke(broker.address, pull_request(TOPIC, 3, 0), 3)
    assert gone.code == ResponseCode.SYSTEM_ERROR and "queueId[3] is illegal" in (gone.remark or "")
    await _ok(client, broker, _topic(PERM_READ | PERM_WRITE, 4))
    assert await _pulled(client, broker, pull_request(TOPIC, 3, 0)) == []


async def test_the_groups_consume_permission_changing_is_followed(broker: Broker, client: RemotingClient) -> None:
    await _tagged(client, broker)
    assert await _pulled(client, broker, pull_request(TOPIC, 0, 0, group="CG_PERM")) == [b"a", b"b"]
    await _ok(client, broker, _group("CG_PERM", consume=False))
    refused = await client.invoke(broker.address, pull_request(TOPIC, 0, 0, group="CG_PERM"), 3)
    assert refused.code == ResponseCode.NO_PERMISSION, refused.remark
    await _ok(client, broker, _group("CG_PERM"))
    assert await _pulled(client, broker, pull_request(TOPIC, 0, 0, group="CG_PERM")) == [b"a", b"b"]


async def test_a_member_turning_to_broadcasting_is_refused_at_its_next_pull(
    broker: Broker, client: RemotingClient
) -> None:
    """A group that refuses broadcasting consumers: its members' heartbeat model changes in place, and
    the next pull of the same site sees it."""
    await _tagged(client, broker)
    await _ok(client, broker, _group("CG_BC", broadcast=False))
    await _ok(client, broker, _heartbeat("CG_BC", "*"))
    assert await _pulled(client, broker, pull_request(TOPIC, 0, 0, group="CG_BC")) == [b"a", b"b"]
    await _ok(client, broker, _heartbeat("CG_BC", "*", MessageModel.BROADCASTING))
    refused = await client.invoke(broker.address, pull_request(TOPIC, 0, 0, group="CG_BC"), 3)
    assert refused.code == ResponseCode.NO_PERMISSION, refused.remark
    await _ok(client, broker, _heartbeat("CG_BC", "*"))
    assert await _pulled(client, broker, pull_request(TOPIC, 0, 0, group="CG_BC")) == [b"a", b"b"]
