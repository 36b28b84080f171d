"""What users send and receive: Message, MessageExt, MessageQueue, SendResult."""

from __future__ import annotations

import enum
import zlib
from dataclasses import dataclass, field
from typing import Final

from librt.strings import read_i32_be, read_i64_be
from mypy_extensions import mypyc_attr

from rocketq.common.message import KEY_SEPARATOR, Property, decode_properties
from rocketq.common.message_id import decode_host, offset_message_id
from rocketq.common.record import (
    BODY_LENGTH_AT,
    FLAG_AT,
    HEAD_SIZE,
    PHYSICAL_OFFSET_AT,
    QUEUE_ID_AT,
    QUEUE_OFFSET_AT,
    RECORD_OVERHEAD,
    SYS_FLAG_AT,
    RecordFormatError,
    SysFlag,
    head_reader,
)


@mypyc_attr(allow_interpreted_subclasses=True)  # users may subclass it; see rocketq.native
@dataclass(slots=True)
class Message:
    """A message to send. ``properties`` are user properties; tags, keys and delay have their own fields."""

    topic: str
    body: bytes
    tags: str | None = None
    keys: str | list[str] | None = None
    properties: dict[str, str] = field(default_factory=dict)
    delay_level: int = 0
    flag: int = 0
    wait_store_msg_ok: bool = True

    def wire_properties(self) -> dict[str, str]:
        """User properties plus TAGS, KEYS, DELAY and WAIT, as they travel."""
        out = dict(self.properties)
        if self.tags:
            out[Property.TAGS] = self.tags
        if self.keys:
            out[Property.KEYS] = self.keys if isinstance(self.keys, str) else KEY_SEPARATOR.join(self.keys)
        if self.delay_level > 0:
            out[Property.DELAY_TIME_LEVEL] = str(self.delay_level)
        out[Property.WAIT_STORE_MSG_OK] = "true" if self.wait_store_msg_ok else "false"
        return out


@dataclass(frozen=True, slots=True, init=False)
class MessageQueue:
    """A queue of a topic on one broker. Ordered by topic, broker name, queue id (rebalancing sorts
    them)."""

    topic: str
    broker_name: str
    queue_id: int
    _hash: int = field(repr=False, compare=False)
    """``hash((topic, broker_name, queue_id))``, computed once: a consumer's dicts keyed by its queues
    hash one about six times per message (its process queue, its offsets, its pull's bookkeeping),
    each time a tuple built, hashed and freed (about 580 instructions compiled) before."""

    # Written out (see rocketq.native.modules): queues are built per pull and send, and dicts keyed by
    # them hash and compare them on every pull and commit.
    def __init__(self, topic: str, broker_name: str, queue_id: int) -> None:
        object.__setattr__(self, "topic", topic)
        object.__setattr__(self, "broker_name", broker_name)
        object.__setattr__(self, "queue_id", queue_id)
        object.__setattr__(self, "_hash", hash((topic, broker_name, queue_id)))

    def __reduce__(self) -> tuple[type[MessageQueue], tuple[str, str, int]]:
        """Pickled as its three fields: the cached hash of its text is this process's own."""
        return (MessageQueue, (self.topic, self.broker_name, self.queue_id))

    def _key(self) -> tuple[str, str, int]:
        return (self.topic, self.broker_name, self.queue_id)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self.queue_id == other.queue_id and self.topic == other.topic and self.broker_name == other.broker_name

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self._key() < other._key()

    def __le__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self._key() <= other._key()

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self._key() > other._key()

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self._key() >= other._key()

    def __str__(self) -> str:
        return f"{self.topic}@{self.broker_name}:{self.queue_id}"


_LAZY: Final = head_reader("born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times")


@mypyc_attr(acyclic=True)  # see rocketq.native.modules
class MessageExt:
    """A stored message as a consumer or a query sees it (body inflated).

    Built once per consumed message, so it stays cheap: the fields every consumer needs are read
    when the record is decoded; the timestamps, hosts, reconsume times and properties are read from
    the record (kept by reference) when first asked for.
    """

    __slots__ = (
        "_at",
        "_lazy",
        "_properties",
        "_properties_text",
        "_reconsume_times",
        "_record",
        "body",
        "commit_log_offset",
        "flag",
        "queue_id",
        "queue_offset",
        "store_size",
        "sys_flag",
        "topic",
    )

    def __init__(
        self,
        topic: str,
        body: bytes,
        queue_id: int,
        queue_offset: int,
        commit_log_offset: int,
        store_size: int,
        sys_flag: int,
        flag: int,
        record: bytes,
        at: int,
    ) -> None:
        """``record[at : at + store_size]`` is the stored record the message was read from."""
        self.topic = topic
        self.body = body
        self.queue_id = queue_id
        self.queue_offset = queue_offset
        self.commit_log_offset = commit_log_offset
        self.store_size = store_size
        self.sys_flag = sys_flag
        self.flag = flag
        self._record = record
        self._at = at
        self._lazy: tuple[int, bytes, int, bytes, int] | None = None
        self._properties_text: str | None = None
        self._properties: dict[str, str] | None = None
        self._reconsume_times: int | None = None  # set by a local (orderly) retry

    def with_topic(self, topic: str) -> MessageExt:
        """A copy of this message under another topic (a retried message under its original one)."""
        copy = MessageExt(
            topic,
            self.body,
            self.queue_id,
            self.queue_offset,
            self.commit_log_offset,
            self.store_size,
            self.sys_flag,
            self.flag,
            self._record,
            self._at,
        )
        copy._properties = self._properties
        copy._reconsume_times = self._reconsume_times
        return copy

    def __repr__(self) -> str:
        return (
            f"MessageExt(topic={self.topic!r}, queue_id={self.queue_id}, queue_offset={self.queue_offset}, "
            f"commit_log_offset={self.commit_log_offset}, body={self.body[:32]!r}"
            f"{'...' if len(self.body) > 32 else ''}, properties_text={self.properties_text!r})"
        )

    def _late_fields(self) -> tuple[int, bytes, int, bytes, int]:
        if self._lazy is None:
            self._lazy = _LAZY.unpack_from(self._record, self._at)
        return self._lazy

    @property
    def born_timestamp(self) -> int:
        return self._late_fields()[0]

    @property
    def born_host_packed(self) -> bytes:
        """The producer's IPv4 address and port, 8 bytes as stored."""
        return self._late_fields()[1]

    @property
    def store_timestamp(self) -> int:
        return self._late_fields()[2]

    @property
    def store_host_packed(self) -> bytes:
        return self._late_fields()[3]

    @property
    def reconsume_times(self) -> int:
        """Deliveries before this one: the stored count, plus the local retries of an orderly consumer."""
        if self._reconsume_times is not None:
            return self._reconsume_times
        return self._late_fields()[4]

    @reconsume_times.setter
    def reconsume_times(self, times: int) -> None:
        self._reconsume_times = times

    @property
    def born_host(self) -> str:
        """The producer's ``ip:port``."""
        return _host_text(self.born_host_packed)

    @property
    def store_host(self) -> str:
        """The storing broker's ``ip:port``."""
        return _host_text(self.store_host_packed)

    @property
    def properties_text(self) -> str:
        """The encoded properties string; ``properties`` is its parsed form."""
        if self._properties_text is None:
            record, at = self._record, self._at
            topic_at = at + HEAD_SIZE + read_i32_be(record, at + BODY_LENGTH_AT)
            self._properties_text = record[topic_at + 3 + record[topic_at] : at + self.store_size].decode()
        return self._properties_text

    @property
    def properties(self) -> dict[str, str]:
        if self._properties is None:
            self._properties = decode_properties(self.properties_text)
        return self._properties

    @property
    def offset_msg_id(self) -> str:
        """The broker's id of this message: store host and CommitLog offset (32 hex characters)."""
        return offset_message_id(self.store_host_packed, self.commit_log_offset)

    @property
    def tags(self) -> str | None:
        return self.properties.get(Property.TAGS)

    @property
    def keys(self) -> list[str]:
        return (self.properties.get(Property.KEYS) or "").split()

    @property
    def msg_id(self) -> str:
        """The client's unique id (UNIQ_KEY) when it set one, else the broker's offset id."""
        return self.properties.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or self.offset_msg_id

    @property
    def user_properties(self) -> dict[str, str]:
        hidden = {
            Property.TAGS,
            Property.KEYS,
            Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
            Property.WAIT_STORE_MSG_OK,
            Property.MSG_REGION,
            Property.TRACE_SWITCH,
            Property.CLUSTER,
        }
        return {k: v for k, v in self.properties.items() if k not in hidden}


_HOST_TEXT: dict[bytes, str] = {}


def _host_text(packed: bytes) -> str:
    """``ip:port`` for 8 packed host bytes; cached, since messages repeat the same few hosts."""
    text = _HOST_TEXT.get(packed)
    if text is None:
        host, port = decode_host(packed)
        text = _remember(_HOST_TEXT, packed, f"{host}:{port}")
    return text


def _remember(cache: dict[bytes, str], raw: bytes, text: str) -> str:
    """``text`` kept in ``cache`` under ``raw``; a cache that reached 4096 entries starts over."""
    if len(cache) >= 4096:
        cache.clear()
    cache[raw] = text
    return text


_TOPIC_TEXT: dict[bytes, str] = {}


def decode_messages(data: bytes | memoryview) -> list[MessageExt]:
    """Decode concatenated stored records (a pull, view or query body). The consumer's hot path: the
    few header fields every consumer needs, read in place (``librt.strings``, a native load each when
    compiled), a body slice, the topic from the previous record or a cache; the rest lazily.

    Raises:
        RecordFormatError: A record's sizes do not fit the data, or its compressed body does not inflate.
    """
    records: bytes = data if isinstance(data, bytes) else bytes(data)
    messages: list[MessageExt] = []
    end = len(records)
    position = 0
    last_raw, last_topic = b"", ""
    while position < end:
        if end - position < RECORD_OVERHEAD:
            raise RecordFormatError(position, f"{end - position} bytes left, less than a record")
        total: int = read_i32_be(records, position)  # declared, not i64(...): interpreted, that is a call
        body_length: int = read_i32_be(records, position + BODY_LENGTH_AT)
        if total < RECORD_OVERHEAD or total > end - position or not 0 <= body_length <= total - RECORD_OVERHEAD:
            raise RecordFormatError(position, f"size {total} and body length {body_length} in {end} bytes")
        body_at = position + HEAD_SIZE
        topic_at = body_at + body_length
        raw_topic = records[topic_at + 1 : topic_at + 1 + records[topic_at]]
        if raw_topic == last_raw:
            topic = last_topic  # the usual case: a pull's records share their topic
        else:
            last_raw = raw_topic
            topic = last_topic = _TOPIC_TEXT.get(raw_topic) or _remember(_TOPIC_TEXT, raw_topic, raw_topic.decode())
        sys_flag: int = read_i32_be(records, position + SYS_FLAG_AT)
        body = records[body_at:topic_at]
        if sys_flag & SysFlag.COMPRESSED:
            body = _inflate(body, position)
        messages.append(
            MessageExt(
                topic,
                body,
                read_i32_be(records, position + QUEUE_ID_AT),
                read_i64_be(records, position + QUEUE_OFFSET_AT),
                read_i64_be(records, position + PHYSICAL_OFFSET_AT),
                total,
                sys_flag,
                read_i32_be(records, position + FLAG_AT),
                records,
                position,
            )
        )
        position += total
    return messages


def _inflate(body: bytes, position: int) -> bytes:
    try:
        return zlib.decompress(body)
    except zlib.error as exc:
        raise RecordFormatError(position, f"compressed body does not inflate: {exc}") from exc


class SendStatus(enum.Enum):
    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


@dataclass(frozen=True, slots=True, init=False)
class SendResult:
    status: SendStatus
    msg_id: str  # the client's unique id (UNIQ_KEY); comma-joined for a batch
    offset_msg_id: str  # the broker's offset id(s)
    message_queue: MessageQueue
    queue_offset: int

    def __init__(  # see rocketq.native.modules
        self, status: SendStatus, msg_id: str, offset_msg_id: str, message_queue: MessageQueue, queue_offset: int
    ) -> None:
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "msg_id", msg_id)
        object.__setattr__(self, "offset_msg_id", offset_msg_id)
        object.__setattr__(self, "message_queue", message_queue)
        object.__setattr__(self, "queue_offset", queue_offset)
