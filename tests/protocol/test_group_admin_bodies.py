"""Headers and bodies of the consumer group admin requests (200, 201, 203, 207, 208, 220, 222)."""

from __future__ import annotations

import json

import pytest

from rocketq.protocol import ConsumeFromWhere, RemoteProtocolError, SubscriptionData
from rocketq.protocol.bodies import (
    ClientConnection,
    ConsumerConnection,
    ConsumeStats,
    MessageQueueOffset,
    QueueConsumeStats,
    ResetOffsetBody,
    SubscriptionGroupConfigBody,
    SubscriptionGroupWrapper,
)
from rocketq.protocol.headers import (
    DeleteSubscriptionGroupRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    ResetOffsetRequestHeader,
)


def test_headers_use_java_names() -> None:
    header = ResetOffsetRequestHeader(topic="T", group="G", timestamp=-1, is_force=True)
    assert header.to_ext_fields() == {"topic": "T", "group": "G", "timestamp": "-1", "isForce": "true"}
    assert ResetOffsetRequestHeader.from_ext_fields(header.to_ext_fields()) == header
    assert GetConsumeStatsRequestHeader.from_ext_fields({"consumerGroup": "G"}).topic is None
    assert GetConsumerConnectionListRequestHeader(consumer_group="G").to_ext_fields() == {"consumerGroup": "G"}
    delete = DeleteSubscriptionGroupRequestHeader.from_ext_fields({"groupName": "G"})
    assert delete.group_name == "G" and delete.remove_offset is False
    with pytest.raises(RemoteProtocolError, match="isForce"):
        ResetOffsetRequestHeader.from_ext_fields({"topic": "T", "group": "G", "timestamp": "1"})


def test_consumer_connection_has_javas_shape() -> None:
    body = ConsumerConnection(
        connection_set=[ClientConnection(client_id="c", client_addr="1.2.3.4:5", language="CPP", version=63)],
        subscription_table={"T": SubscriptionData(topic="T", sub_string="*")},
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_TIMESTAMP,
    )
    data = json.loads(body.encode())
    assert data["connectionSet"] == [{"clientId": "c", "clientAddr": "1.2.3.4:5", "language": "CPP", "version": 63}]
    assert data["subscriptionTable"]["T"]["subString"] == "*"
    assert (data["consumeType"], data["messageModel"], data["consumeFromWhere"]) == (
        "CONSUME_PASSIVELY",
        "CLUSTERING",
        "CONSUME_FROM_TIMESTAMP",
    )
    assert ConsumerConnection.decode(body.encode()) == body


def test_offset_tables_are_keyed_by_queue_objects_as_java_writes_them() -> None:
    stats = ConsumeStats(
        offset_table=[
            QueueConsumeStats(
                topic="T", broker_name="b", queue_id=1, broker_offset=9, consumer_offset=4, last_timestamp=7
            ),
            QueueConsumeStats(
                topic="%RETRY%G", broker_name="b", queue_id=0, broker_offset=0, consumer_offset=0, last_timestamp=0
            ),
        ]
    )
    assert stats.encode() == (
        b'{"consumeTps":0.0,"offsetTable":{'
        b'{"brokerName":"b","queueId":1,"topic":"T"}:{"brokerOffset":9,"consumerOffset":4,"lastTimestamp":7},'
        b'{"brokerName":"b","queueId":0,"topic":"%RETRY%G"}:{"brokerOffset":0,"consumerOffset":0,"lastTimestamp":0}}}'
    )
    assert ConsumeStats.decode(stats.encode()) == stats
    assert ConsumeStats.decode(b'{"consumeTps":0.0,"offsetTable":{}}') == ConsumeStats()
    reset = ResetOffsetBody(offset_table=[MessageQueueOffset(topic="T", broker_name="b", queue_id=0, offset=3)])
    assert reset.encode() == b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:3}}'
    assert ResetOffsetBody.decode(reset.encode()) == reset


def test_a_java_brokers_bodies_are_read_with_their_extra_fields() -> None:
    """As a 4.9 broker writes them: ConsumeStats' OffsetWrapper may carry more fields (5.x: pullOffset),
    and keys are in no particular order; a topic may hold the characters JSON uses for structure."""
    java = (
        b'{"consumeTps":1.5,"offsetTable":{{"topic":"a{b}:c,d","queueId":2,"brokerName":"broker-a"}:'
        b'{"lastTimestamp":1700000000000,"pullOffset":12,"consumerOffset":10,"brokerOffset":12}}}'
    )
    stats = ConsumeStats.decode(java)
    assert stats.consume_tps == 1.5
    assert stats.offset_table == [
        QueueConsumeStats(
            topic="a{b}:c,d",
            broker_name="broker-a",
            queue_id=2,
            broker_offset=12,
            consumer_offset=10,
            last_timestamp=1700000000000,
        )
    ]


def test_the_reset_body_for_cpp_clients_is_a_list_and_either_form_is_read() -> None:
    reset = ResetOffsetBody(
        offset_table=[
            MessageQueueOffset(topic="T", broker_name="b", queue_id=0, offset=3),
            MessageQueueOffset(topic="T", broker_name="b", queue_id=1, offset=5),
        ]
    )
    assert json.loads(reset.encode_for_c()) == {
        "offsetTable": [
            {"brokerName": "b", "offset": 3, "queueId": 0, "topic": "T"},
            {"brokerName": "b", "offset": 5, "queueId": 1, "topic": "T"},
        ]
    }
    assert ResetOffsetBody.decode(reset.encode_for_c()) == reset == ResetOffsetBody.decode(reset.encode())


@pytest.mark.parametrize(
    "body",
    [b"not json", b'{"offsetTable":{{"brokerName":"b"}:3}}', b'{"offsetTable":{{"brokerName":"b","queueId":0', b"[]"],
)
def test_malformed_offset_tables_are_protocol_errors(body: bytes) -> None:
    with pytest.raises(RemoteProtocolError, match="invalid ResetOffsetBody body"):
        ResetOffsetBody.decode(body)


def test_subscription_group_bodies() -> None:
    java = (
        b'{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,'
        b'"groupName":"G","notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,'
        b'"whichBrokerWhenConsumeSlowly":1,"groupSysFlag":0}'
    )
    assert SubscriptionGroupConfigBody.decode(java) == SubscriptionGroupConfigBody(group_name="G")
    wrapper = SubscriptionGroupWrapper.decode(
        b'{"subscriptionGroupTable":{"G":' + java + b'},"dataVersion":{"counter":3,"timestamp":9}}'
    )
    assert wrapper.subscription_group_table["G"].retry_max_times == 16 and wrapper.data_version.counter == 3
    with pytest.raises(RemoteProtocolError):
        SubscriptionGroupConfigBody.decode(b'{"consumeEnable":false}')
