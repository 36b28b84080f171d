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


def test_offset_tables_are_lists() -> None:
    stats = ConsumeStats(
        offset_table=[
            QueueConsumeStats(
                topic="T", broker_name="b", queue_id=1, broker_offset=9, consumer_offset=4, last_timestamp=7
            )
        ]
    )
    assert json.loads(stats.encode()) == {
        "offsetTable": [
            {"topic": "T", "brokerName": "b", "queueId": 1, "brokerOffset": 9, "consumerOffset": 4, "lastTimestamp": 7}
        ],
        "consumeTps": 0.0,
    }
    reset = ResetOffsetBody(offset_table=[MessageQueueOffset(topic="T", broker_name="b", queue_id=0, offset=3)])
    assert json.loads(reset.encode()) == {"offsetTable": [{"topic": "T", "brokerName": "b", "queueId": 0, "offset": 3}]}
    assert ResetOffsetBody.decode(reset.encode()) == reset


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
