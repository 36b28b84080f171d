"""JSON bodies of what a client tells brokers about itself and its group: heartbeats with their
subscriptions, the members of a group, and the queue locks of orderly consumers
(docs/protocol.md#bodies)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final

import msgspec

from rocketq.protocol.json_body import JsonBody

# --- heartbeat -------------------------------------------------------------------


class ConsumeType(StrEnum):
    """Listed in ordinal order; the C++ client sends the ordinal."""

    CONSUME_ACTIVELY = "CONSUME_ACTIVELY"
    CONSUME_PASSIVELY = "CONSUME_PASSIVELY"


class MessageModel(StrEnum):
    """Listed in ordinal order; the C++ client sends the ordinal."""

    BROADCASTING = "BROADCASTING"
    CLUSTERING = "CLUSTERING"


_LAST_AND_MIN: Final = "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST"


class ConsumeFromWhere(StrEnum):
    """Listed in ordinal order; the C++ client sends the ordinal."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = _LAST_AND_MIN
    CONSUME_FROM_MIN_OFFSET = "CONSUME_FROM_MIN_OFFSET"
    CONSUME_FROM_MAX_OFFSET = "CONSUME_FROM_MAX_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class SubscriptionData(JsonBody, frozen=True, kw_only=True):
    """One subscription. Never trust ``code_set`` from C++ (all zeros): recompute it."""

    topic: str
    sub_string: str
    sub_version: int = 0
    class_filter_mode: bool = False
    tags_set: list[str] = msgspec.field(default_factory=list)
    code_set: list[int] = msgspec.field(default_factory=list)
    expression_type: str = "TAG"


class CheckClientRequestBody(JsonBody, frozen=True, kw_only=True):
    """CHECK_CLIENT_CONFIG (46) request body: may this broker filter by this subscription?"""

    client_id: str = ""
    group: str = ""
    subscription_data: SubscriptionData | None = None


class ConsumerData(JsonBody, frozen=True, kw_only=True):
    group_name: str
    consume_type: ConsumeType
    message_model: MessageModel
    consume_from_where: ConsumeFromWhere
    subscription_data_set: list[SubscriptionData] = msgspec.field(default_factory=list)
    unit_mode: bool = False


class ProducerData(JsonBody, frozen=True, kw_only=True):
    group_name: str


_ORDINAL_ENUMS: Final[dict[str, tuple[StrEnum, ...]]] = {
    "consumeType": tuple(ConsumeType),
    "messageModel": tuple(MessageModel),
    "consumeFromWhere": tuple(ConsumeFromWhere),
}


def _enum_name(value: Any, members: tuple[StrEnum, ...]) -> Any:
    if isinstance(value, str) and value.lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(members):
        return members[value].value
    return value  # let the typed conversion report it


class HeartbeatData(JsonBody, frozen=True, kw_only=True):
    """HEART_BEAT request body. A producer-only C++ heartbeat has no consumer set."""

    client_id: str = msgspec.field(name="clientID")
    producer_data_set: list[ProducerData] = msgspec.field(default_factory=list)
    consumer_data_set: list[ConsumerData] = msgspec.field(default_factory=list)

    @classmethod
    def _normalize(cls, obj: Any) -> Any:
        # The C++ client writes enum ordinals (docs/protocol.md#heartbeatdata, #rule-9-heartbeats-come-in-two-dialects).
        if isinstance(obj, dict):
            for consumer in obj.get("consumerDataSet") or ():
                if isinstance(consumer, dict):
                    for key, members in _ORDINAL_ENUMS.items():
                        if key in consumer:
                            consumer[key] = _enum_name(consumer[key], members)
        return obj


# --- group members and queue locks ------------------------------------------------------


class ConsumerListBody(JsonBody, frozen=True, kw_only=True):
    """GET_CONSUMER_LIST_BY_GROUP response body (``GetConsumerListByGroupResponseBody``)."""

    consumer_id_list: list[str] = msgspec.field(default_factory=list)


GetConsumerListByGroupResponseBody = ConsumerListBody


class GroupList(JsonBody, frozen=True, kw_only=True):
    """QUERY_TOPIC_CONSUME_BY_WHO response body."""

    group_list: list[str] = msgspec.field(default_factory=list)


class MessageQueue(JsonBody, frozen=True, kw_only=True):
    """A (topic, broker, queue id) triple; hashable, so it can live in sets."""

    topic: str
    broker_name: str
    queue_id: int


class LockBatchRequestBody(JsonBody, frozen=True, kw_only=True):
    """LOCK_BATCH_MQ (41) request body."""

    consumer_group: str
    client_id: str
    mq_set: list[MessageQueue] = msgspec.field(default_factory=list)
    only_this_broker: bool = False


class UnlockBatchRequestBody(JsonBody, frozen=True, kw_only=True):
    """UNLOCK_BATCH_MQ (42) request body; same shape as the lock request."""

    consumer_group: str
    client_id: str
    mq_set: list[MessageQueue] = msgspec.field(default_factory=list)
    only_this_broker: bool = False


class LockBatchResponseBody(JsonBody, frozen=True, kw_only=True):
    """LOCK_BATCH_MQ response body: the queues now locked by the requesting client."""

    lock_ok_mq_set: list[MessageQueue] = msgspec.field(default_factory=list, name="lockOKMQSet")
