"""JSON bodies of RocketMQ commands (docs/protocol.md#bodies).

Each body is a msgspec Struct with snake_case Python names and fastjson's camelCase
wire names. :meth:`JsonBody.decode` is liberal, as §3 asks:

* fastjson's unquoted integer keys (``{0:"ip:port"}``) are accepted
  (see :mod:`rocketq.protocol.fastjson`);
* numbers may arrive as strings (the C++ client sends ``"subVersion":"1795…"``);
* heartbeat enums may arrive as names (Java, ali-ons) or ordinals (C++).

:meth:`JsonBody.encode` always writes standard JSON with quoted keys and enum names,
which every observed client accepts.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from enum import StrEnum
from typing import Any, Final, Self, TypeVar

import msgspec

from rocketq.protocol.errors import RemoteProtocolError
from rocketq.protocol.fastjson import quote_integer_keys, quote_object_keys

_ENCODER: Final = msgspec.json.Encoder()


class JsonBody(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Base class of JSON bodies."""

    def encode(self) -> bytes:
        """Serialise as standard JSON."""
        return _ENCODER.encode(self)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> Self:
        """Parse a received body, tolerating fastjson and client dialects.

        Raises:
            RemoteProtocolError: The body is not JSON or does not fit this type.
        """
        try:
            return msgspec.json.decode(data, type=cls, strict=False)
        except msgspec.ValidationError as exc:
            error: msgspec.ValidationError = exc
            raw: bytes | bytearray | memoryview = data
        except msgspec.DecodeError:
            raw = quote_integer_keys(data)
            try:
                return msgspec.json.decode(raw, type=cls, strict=False)
            except msgspec.ValidationError as exc:
                error = exc
            except msgspec.DecodeError as exc:
                raise RemoteProtocolError(f"invalid JSON in {cls.__name__} body: {exc}") from exc
        # Slow path for dialects a typed decode cannot express (e.g. enum ordinals). Only
        # bodies that failed validation get here, so the second parse costs nothing normally.
        try:
            return msgspec.convert(cls._normalize(msgspec.json.decode(raw)), cls, strict=False)
        except msgspec.ValidationError:
            raise RemoteProtocolError(f"invalid {cls.__name__} body: {error}") from error

    @classmethod
    def _normalize(cls, obj: Any) -> Any:
        """Rewrite decoded builtins before a second, lax conversion. Identity by default."""
        return obj


# --- route -----------------------------------------------------------------------


class QueueData(JsonBody, frozen=True, kw_only=True):
    """Queues of one topic on one broker. ``perm``: 2 write, 4 read, 1 inherit."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0


class BrokerData(JsonBody, frozen=True, kw_only=True):
    """One broker group. ``broker_addrs`` maps brokerId (0 = master) to ``ip:port``."""

    cluster: str
    broker_name: str
    broker_addrs: dict[int, str]


class TopicRouteData(JsonBody, frozen=True, kw_only=True):
    """GET_ROUTEINFO_BY_TOPIC response body.

    ``order_topic_conf`` is ``"brokerName:n;brokerName:n"`` for ordered topics; when it
    is None it is written as ``null``, which the C++ client reads as empty.
    """

    order_topic_conf: str | None = None
    queue_datas: list[QueueData]
    broker_datas: list[BrokerData]
    filter_server_table: dict[str, list[str]] = msgspec.field(default_factory=dict)


class ClusterInfo(JsonBody, frozen=True, kw_only=True):
    """GET_BROKER_CLUSTER_INFO response body."""

    broker_addr_table: dict[str, BrokerData] = msgspec.field(default_factory=dict)
    cluster_addr_table: dict[str, list[str]] = msgspec.field(default_factory=dict)


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


# --- broker registration -----------------------------------------------------------


class TopicFilterType(StrEnum):
    SINGLE_TAG = "SINGLE_TAG"
    MULTI_TAG = "MULTI_TAG"


class DataVersion(JsonBody, frozen=True, kw_only=True):
    """Version stamp of a broker's topic table; ``timestamp`` in ms."""

    timestamp: int = 0
    counter: int = 0


class TopicConfig(JsonBody, frozen=True, kw_only=True):
    """One topic's configuration. Defaults mirror Java's ``TopicConfig``."""

    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = 6
    topic_filter_type: TopicFilterType = TopicFilterType.SINGLE_TAG
    topic_sys_flag: int = 0
    order: bool = False


class TopicConfigSerializeWrapper(JsonBody, frozen=True, kw_only=True):
    topic_config_table: dict[str, TopicConfig] = msgspec.field(default_factory=dict)
    data_version: DataVersion = msgspec.field(default_factory=DataVersion)


_MAX_INFLATED_SIZE: Final = 64 * 1024 * 1024


class RegisterBrokerBody(JsonBody, frozen=True, kw_only=True):
    """REGISTER_BROKER request body.

    Sent as JSON, or, when the request header says ``compressed``, in the binary zlib
    form handled by :meth:`decode_compressed` / :meth:`encode_compressed`.
    """

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = msgspec.field(
        default_factory=TopicConfigSerializeWrapper
    )
    filter_server_list: list[str] = msgspec.field(default_factory=list)

    def encode_compressed(self) -> bytes:
        """Encode the zlib form (``RegisterBrokerBody.encode(true)`` in Java).

        The compressed form carries only name, queue counts, perm and filter type per
        topic; ``topic_sys_flag`` and ``order`` are lost, as in Java.
        """
        wrapper = self.topic_config_serialize_wrapper
        parts = [_sized(wrapper.data_version.encode()), len(wrapper.topic_config_table).to_bytes(4, "big")]
        for config in wrapper.topic_config_table.values():
            line = (
                f"{config.topic_name} {config.read_queue_nums} {config.write_queue_nums} "
                f"{config.perm} {config.topic_filter_type.value}"
            )
            parts.append(_sized(line.encode()))
        parts.append(_sized(_ENCODER.encode(self.filter_server_list)))
        return zlib.compress(b"".join(parts), 9)

    @classmethod
    def decode_compressed(cls, data: bytes | bytearray | memoryview) -> RegisterBrokerBody:
        """Decode the zlib form.

        Raises:
            RemoteProtocolError: The stream is corrupt, truncated or too large.
        """
        try:
            inflater = zlib.decompressobj()
            raw = inflater.decompress(data, _MAX_INFLATED_SIZE)
        except zlib.error as exc:
            raise RemoteProtocolError(f"corrupt compressed RegisterBrokerBody: {exc}") from exc
        if inflater.unconsumed_tail:
            raise RemoteProtocolError("compressed RegisterBrokerBody inflates beyond the size limit")
        reader = _SizedReader(raw)
        data_version = DataVersion.decode(reader.sized())
        table: dict[str, TopicConfig] = {}
        for _ in range(reader.int32()):
            fields = reader.sized().decode(errors="replace").split(" ")
            if len(fields) < 5:
                raise RemoteProtocolError(f"bad topic config line {' '.join(fields)!r}")
            try:
                config = TopicConfig(
                    topic_name=fields[0],
                    read_queue_nums=int(fields[1]),
                    write_queue_nums=int(fields[2]),
                    perm=int(fields[3]),
                    topic_filter_type=TopicFilterType(fields[4]),
                )
            except ValueError as exc:
                raise RemoteProtocolError(f"bad topic config line {' '.join(fields)!r}") from exc
            table[config.topic_name] = config
        try:
            filter_servers = msgspec.json.decode(reader.sized(), type=list[str])
        except msgspec.DecodeError as exc:
            raise RemoteProtocolError(f"bad filterServerList: {exc}") from exc
        wrapper = TopicConfigSerializeWrapper(topic_config_table=table, data_version=data_version)
        return cls(topic_config_serialize_wrapper=wrapper, filter_server_list=filter_servers)


def _sized(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


class _SizedReader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def int32(self) -> int:
        if self.pos + 4 > len(self.data):
            raise RemoteProtocolError("compressed RegisterBrokerBody is truncated")
        value = int.from_bytes(self.data[self.pos : self.pos + 4], "big", signed=True)
        self.pos += 4
        return value

    def sized(self) -> bytes:
        size = self.int32()
        end = self.pos + size
        if size < 0 or end > len(self.data):
            raise RemoteProtocolError("compressed RegisterBrokerBody is truncated")
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk


# --- consumers and queues ------------------------------------------------------------


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


# --- misc ------------------------------------------------------------------------


class TopicList(JsonBody, frozen=True, kw_only=True, omit_defaults=True):
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER body; ``broker_addr`` only when set."""

    topic_list: list[str]
    broker_addr: str | None = None


class KVTable(JsonBody, frozen=True, kw_only=True):
    """``{"table": {...}}``, e.g. the ORDER_TOPIC_CONFIG namespace in REGISTER_BROKER replies."""

    table: dict[str, str] = msgspec.field(default_factory=dict)


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
    encode = _ENCODER.encode
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
        return b'{"consumeTps":%s,"offsetTable":%s}' % (_ENCODER.encode(self.consume_tps), table)

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
        return _ENCODER.encode({"offsetTable": self.offset_table})

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
