"""JSON bodies of the NameServers' tables: topic routes and clusters, the topic tables brokers register
(as JSON or in Java's zlib form), topic lists and KV tables (docs/protocol.md#bodies)."""

from __future__ import annotations

import zlib
from enum import StrEnum
from typing import Final

import msgspec

from rocketq.protocol.errors import RemoteProtocolError
from rocketq.protocol.json_body import ENCODER, JsonBody

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
        parts.append(_sized(ENCODER.encode(self.filter_server_list)))
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


# --- topic lists and KV tables ---------------------------------------------------------


class TopicList(JsonBody, frozen=True, kw_only=True, omit_defaults=True):
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER body; ``broker_addr`` only when set."""

    topic_list: list[str]
    broker_addr: str | None = None


class KVTable(JsonBody, frozen=True, kw_only=True):
    """``{"table": {...}}``, e.g. the ORDER_TOPIC_CONFIG namespace in REGISTER_BROKER replies."""

    table: dict[str, str] = msgspec.field(default_factory=dict)
