"""JSON bodies of the administration requests (``rocketq admin``, RocketMQ's dashboard): consumer
groups' connections, consume stats, offsets and settings, and topics' stats. The stats and offset
tables are maps keyed by queue objects on the wire, as fastjson writes them (docs/protocol.md#bodies)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Self, TypeVar

import msgspec

from rocketq.protocol.client_bodies import ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData
from rocketq.protocol.errors import RemoteProtocolError
from rocketq.protocol.fastjson import quote_object_keys
from rocketq.protocol.json_body import ENCODER, JsonBody
from rocketq.protocol.route_bodies import DataVersion


class ConsumerOffsetSerializeWrapper(JsonBody, frozen=True, kw_only=True):
    """GET_ALL_CONSUMER_OFFSET body: ``"topic@group"`` to {queueId: offset}."""

    offset_table: dict[str, dict[int, int]] = msgspec.field(default_factory=dict)


# --- consumer groups: administration ---------------------------------------------------


class ClientConnection(JsonBody, frozen=True, kw_only=True):
    """One client channel (Java ``Connection``); ``language`` is a LanguageCode name."""

    client_id: str
    client_addr: str
    language: str
    version: int


class ConsumerConnection(JsonBody, frozen=True, kw_only=True):
    """GET_CONSUMER_CONNECTION_LIST (203) response body, as Java writes it."""

    connection_set: list[ClientConnection] = msgspec.field(default_factory=list)
    subscription_table: dict[str, SubscriptionData] = msgspec.field(default_factory=dict)
    consume_type: ConsumeType = ConsumeType.CONSUME_PASSIVELY
    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET


class QueueConsumeStats(JsonBody, frozen=True, kw_only=True):
    """One queue of a ConsumeStats body: Java's MessageQueue and OffsetWrapper fields flattened."""

    topic: str
    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    last_timestamp: int


def _queue_keyed(entries: list[tuple[str, str, int, Any]]) -> bytes:
    """A map keyed by MessageQueue as fastjson writes one: each (topic, broker name, queue id, value)
    as the queue object, its fields in alphabetical order, then ``:`` and the value."""
    encode = ENCODER.encode
    pairs = [
        b"%s:%s" % (encode({"brokerName": broker, "queueId": queue_id, "topic": topic}), encode(value))
        for topic, broker, queue_id, value in entries
    ]
    return b"{%s}" % b",".join(pairs)


def _rows_by_queue(rows: Sequence[Any], value_fields: dict[str, str]) -> bytes:
    """Flat rows (``topic``, ``broker_name``, ``queue_id`` and more) as a map keyed by their queues,
    each to an object of ``value_fields`` (wire name: the row's attribute)."""
    return _queue_keyed(
        [
            (
                row.topic,
                row.broker_name,
                row.queue_id,
                {wire: getattr(row, name) for wire, name in value_fields.items()},
            )
            for row in rows
        ]
    )


_OFFSET_WRAPPER: Final = {
    "brokerOffset": "broker_offset",
    "consumerOffset": "consumer_offset",
    "lastTimestamp": "last_timestamp",
}
"""Java's OffsetWrapper, the value of a ConsumeStats entry, fields in fastjson's (alphabetical) order."""
_TOPIC_OFFSET: Final = {
    "lastUpdateTimestamp": "last_update_timestamp",
    "maxOffset": "max_offset",
    "minOffset": "min_offset",
}
"""Java's TopicOffset, the value of a TopicStatsTable entry."""

_Body = TypeVar("_Body", bound=JsonBody)


def _decode_queue_keyed(cls: type[_Body], data: bytes | bytearray | memoryview, value_name: str) -> _Body:
    """A body whose ``offsetTable`` ``cls`` holds as a list of flat rows (a queue's fields and its
    value's), from Java's map keyed by MessageQueue objects (``value_name`` names a plain value, such
    as ResetOffsetBody's offset) or from a list of flat objects (the form sent to C++ clients).

    Raises:
        RemoteProtocolError: The body is not JSON of either form.
    """
    try:
        document = msgspec.json.decode(quote_object_keys(data))
        table = document.get("offsetTable") or {}
        if isinstance(table, dict):
            rows = []
            for key, value in table.items():
                row = msgspec.json.decode(key)
                row.update(value if isinstance(value, dict) else {value_name: value})
                rows.append(row)
            document["offsetTable"] = rows
        return msgspec.convert(document, cls, strict=False)
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError, AttributeError, TypeError) as exc:
        raise RemoteProtocolError(f"invalid {cls.__name__} body: {exc}") from exc


class ConsumeStats(JsonBody, frozen=True, kw_only=True):
    """GET_CONSUME_STATS (208) response body, here a list of :class:`QueueConsumeStats`. On the wire it
    has Java's form, which Java's mqadmin and RocketMQ's dashboard read: ``offsetTable`` maps each
    queue, written as a JSON object used as a key (fastjson's way), to its offsets::

        {"consumeTps":0.0,"offsetTable":{{"brokerName":"a","queueId":0,"topic":"T"}:
            {"brokerOffset":10,"consumerOffset":9,"lastTimestamp":1700000000000}}}
    """

    offset_table: list[QueueConsumeStats] = msgspec.field(default_factory=list)
    consume_tps: float = 0.0

    def encode(self) -> bytes:
        table = _rows_by_queue(self.offset_table, _OFFSET_WRAPPER)
        return b'{"consumeTps":%s,"offsetTable":%s}' % (ENCODER.encode(self.consume_tps), table)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> Self:
        return _decode_queue_keyed(cls, data, "consumerOffset")


class MessageQueueOffset(JsonBody, frozen=True, kw_only=True):
    """A queue and an offset in it: one entry of a ResetOffsetBody (Java's MessageQueueForC)."""

    topic: str
    broker_name: str
    queue_id: int
    offset: int


class ResetOffsetBody(JsonBody, frozen=True, kw_only=True):
    """Body of RESET_CONSUMER_CLIENT_OFFSET (220) and of the INVOKE_BROKER_TO_RESET_OFFSET (222)
    response, here a list of :class:`MessageQueueOffset`. ``encode`` writes Java's form, a map keyed by
    queue objects as in :class:`ConsumeStats` (``{"offsetTable":{{"brokerName":"a","queueId":0,
    "topic":"T"}:12}}``), for Java clients and tools; ``encode_for_c`` the list a Java broker sends C++
    clients instead (``ResetOffsetBodyForC``). ``decode`` reads both."""

    offset_table: list[MessageQueueOffset] = msgspec.field(default_factory=list)

    def encode(self) -> bytes:
        table = _queue_keyed([(e.topic, e.broker_name, e.queue_id, e.offset) for e in self.offset_table])
        return b'{"offsetTable":%s}' % table

    def encode_for_c(self) -> bytes:
        """The list form, for C++ clients: each entry a MessageQueueOffset (MessageQueueForC's fields)."""
        return ENCODER.encode({"offsetTable": self.offset_table})

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> Self:
        return _decode_queue_keyed(cls, data, "offset")


class QueueStats(JsonBody, frozen=True, kw_only=True):
    """One queue of a TopicStatsTable: Java's MessageQueue and TopicOffset fields flattened."""

    topic: str
    broker_name: str
    queue_id: int
    min_offset: int
    max_offset: int
    last_update_timestamp: int  # the store time of the queue's last message; 0 when it has none


class TopicStatsTable(JsonBody, frozen=True, kw_only=True):
    """GET_TOPIC_STATS_INFO (202) response body, here a list of :class:`QueueStats`; on the wire a map
    keyed by queue objects as in :class:`ConsumeStats`, each to ``{"lastUpdateTimestamp", "maxOffset",
    "minOffset"}``."""

    offset_table: list[QueueStats] = msgspec.field(default_factory=list)

    def encode(self) -> bytes:
        table = _rows_by_queue(self.offset_table, _TOPIC_OFFSET)
        return b'{"offsetTable":%s}' % table

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> Self:
        return _decode_queue_keyed(cls, data, "maxOffset")


class SubscriptionGroupConfigBody(JsonBody, frozen=True, kw_only=True):
    """A consumer group's settings (Java ``SubscriptionGroupConfig``): the UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
    (200) request body and the values of a :class:`SubscriptionGroupWrapper`."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True


class SubscriptionGroupWrapper(JsonBody, frozen=True, kw_only=True):
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) response body."""

    subscription_group_table: dict[str, SubscriptionGroupConfigBody] = msgspec.field(default_factory=dict)
    data_version: DataVersion = msgspec.field(default_factory=DataVersion)
