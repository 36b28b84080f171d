"""The stored-message record: CommitLog entries, pull bodies, VIEW/QUERY_MESSAGE bodies.

Layout (docs/store-format.md#message-record; big-endian; IPv4 hosts only, see docs/protocol.md#rule-10-ipv4-hosts-only):

| offset | size | field                          |
|--------|------|--------------------------------|
| 0      | 4    | total_size (this field included) |
| 4      | 4    | magic_code: MESSAGE_MAGIC       |
| 8      | 4    | body_crc: crc32(body) & 0x7FFFFFFF |
| 12     | 4    | queue_id                       |
| 16     | 4    | flag (user flag)               |
| 20     | 8    | queue_offset                   |
| 28     | 8    | physical_offset                |
| 36     | 4    | sys_flag                       |
| 40     | 8    | born_timestamp (ms)            |
| 48     | 8    | born_host (ipv4 + int32 port)  |
| 56     | 8    | store_timestamp (ms)           |
| 64     | 8    | store_host                     |
| 72     | 4    | reconsume_times                |
| 76     | 8    | prepared_transaction_offset    |
| 84     | 4+n  | body_length, body              |
| 88+n   | 1+t  | topic_length (signed byte), topic |
| 89+n+t | 2+p  | properties_length (signed short), properties |

A record is ``RECORD_OVERHEAD + n + t + p`` bytes. At the end of a CommitLog file that cannot hold the
next record, a filler of ``int32 remaining_bytes, int32 BLANK_MAGIC`` marks the rest of the file unused.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Final

MESSAGE_MAGIC: Final = -626843481  # 0xDAA320A7 as int32
BLANK_MAGIC: Final = -875286124  # 0xCBD43194 as int32
RECORD_OVERHEAD: Final = 91
END_FILE_MIN_BLANK_LENGTH: Final = 8
MAX_TOPIC_LENGTH: Final = 127
MAX_PROPERTIES_LENGTH: Final = 32767

HEAD_FIELDS: Final = (
    ("total_size", "i"),
    ("magic_code", "i"),
    ("body_crc", "i"),
    ("queue_id", "i"),
    ("flag", "i"),
    ("queue_offset", "q"),
    ("physical_offset", "q"),
    ("sys_flag", "i"),
    ("born_timestamp", "q"),
    ("born_host", "8s"),
    ("store_timestamp", "q"),
    ("store_host", "8s"),
    ("reconsume_times", "i"),
    ("prepared_transaction_offset", "q"),
    ("body_length", "i"),
)
"""The fixed record header, field by field (big-endian struct codes); the variable parts follow it."""
HEAD: Final = struct.Struct(">" + "".join(code for _, code in HEAD_FIELDS))


def head_reader(*names: str) -> struct.Struct:
    """A Struct over the whole header that unpacks only ``names`` (in header order) and skips the rest:
    the hot paths read the few fields they need without building the others."""
    unknown = set(names) - {name for name, _ in HEAD_FIELDS}
    if unknown:
        raise ValueError(f"not record header fields: {sorted(unknown)}")
    codes = [code if name in names else f"{struct.calcsize('>' + code)}x" for name, code in HEAD_FIELDS]
    return struct.Struct(">" + "".join(codes))


HEAD_SIZE: Final = 88
assert HEAD.size == HEAD_SIZE

SIZE_AND_MAGIC: Final = struct.Struct(">ii")
BLANK: Final = SIZE_AND_MAGIC  # the end-of-file filler: remaining bytes, BLANK_MAGIC

# Field offsets used for in-place reads (tests/store/test_record.py checks them against HEAD_FIELDS).
QUEUE_ID_AT: Final = 12
FLAG_AT: Final = 16
QUEUE_OFFSET_AT: Final = 20
PHYSICAL_OFFSET_AT: Final = 28
SYS_FLAG_AT: Final = 36
BODY_LENGTH_AT: Final = 84
STORE_TIMESTAMP_AT: Final = 56
STORE_HOST_AT: Final = 64


class SysFlag:
    """Bits of the record's sys_flag (MessageSysFlag)."""

    COMPRESSED: Final = 0x1
    MULTI_TAGS: Final = 0x2
    TRANSACTION_NOT_TYPE: Final = 0x0
    TRANSACTION_PREPARED_TYPE: Final = 0x4
    TRANSACTION_COMMIT_TYPE: Final = 0x8
    TRANSACTION_ROLLBACK_TYPE: Final = 0xC
    TRANSACTION_MASK: Final = 0xC
    BORNHOST_V6: Final = 0x10
    STOREHOST_V6: Final = 0x20
    INNER_BATCH: Final = 0x80


NOT_QUEUED_TRANSACTIONS: Final = (SysFlag.TRANSACTION_PREPARED_TYPE, SysFlag.TRANSACTION_ROLLBACK_TYPE)
"""``sys_flag & TRANSACTION_MASK`` of the records that get queue offset 0 and no ConsumeQueue entry:
prepared and rolled-back transaction messages (only a commit makes a transaction consumable)."""


def body_crc(body: bytes | memoryview) -> int:
    """The record's BODYCRC: crc32 of the stored body, masked to a non-negative int32."""
    return zlib.crc32(body) & 0x7FFFFFFF


def record_size(body_length: int, topic_length: int, properties_length: int) -> int:
    return RECORD_OVERHEAD + body_length + topic_length + properties_length


RECORD_STRUCTS: dict[int, struct.Struct] = {}
"""Whole-record Structs by ``record_struct_key``; read directly on the append hot path."""


def record_struct_key(body_length: int, topic_length: int, properties_length: int) -> int:
    """The key of a record's Struct in ``RECORD_STRUCTS``: the three lengths in one int (a topic is
    at most 127 bytes, properties at most 32,767: each has its own bits), so a put looks its Struct up
    without making a tuple."""
    return body_length << 24 | topic_length << 16 | properties_length


def record_struct(body_length: int, topic_length: int, properties_length: int) -> struct.Struct:
    """One precompiled Struct for a whole record of these lengths, cached: a put is one pack_into."""
    key = record_struct_key(body_length, topic_length, properties_length)
    packer = RECORD_STRUCTS.get(key)
    if packer is None:
        packer = struct.Struct(f">iiiiiqqiq8sq8siqi{body_length}sb{topic_length}sh{properties_length}s")
        if topic_length <= MAX_TOPIC_LENGTH and properties_length <= MAX_PROPERTIES_LENGTH:  # (else no key)
            if len(RECORD_STRUCTS) >= 4096:
                RECORD_STRUCTS.clear()
            RECORD_STRUCTS[key] = packer
    return packer


@dataclass(frozen=True, slots=True, init=False)
class StoredRecord:
    """A decoded record. ``body`` is as stored (still compressed when sys_flag says so)."""

    total_size: int
    magic_code: int
    body_crc: int
    queue_id: int
    flag: int
    queue_offset: int
    physical_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: bytes
    store_timestamp: int
    store_host: bytes
    reconsume_times: int
    prepared_transaction_offset: int
    body: bytes
    topic: str
    properties: str

    def __init__(  # written out: see rocketq.native.modules (a transaction's commit decodes its half message)
        self,
        total_size: int,
        magic_code: int,
        body_crc: int,
        queue_id: int,
        flag: int,
        queue_offset: int,
        physical_offset: int,
        sys_flag: int,
        born_timestamp: int,
        born_host: bytes,
        store_timestamp: int,
        store_host: bytes,
        reconsume_times: int,
        prepared_transaction_offset: int,
        body: bytes,
        topic: str,
        properties: str,
    ) -> None:
        object.__setattr__(self, "total_size", total_size)
        object.__setattr__(self, "magic_code", magic_code)
        object.__setattr__(self, "body_crc", body_crc)
        object.__setattr__(self, "queue_id", queue_id)
        object.__setattr__(self, "flag", flag)
        object.__setattr__(self, "queue_offset", queue_offset)
        object.__setattr__(self, "physical_offset", physical_offset)
        object.__setattr__(self, "sys_flag", sys_flag)
        object.__setattr__(self, "born_timestamp", born_timestamp)
        object.__setattr__(self, "born_host", born_host)
        object.__setattr__(self, "store_timestamp", store_timestamp)
        object.__setattr__(self, "store_host", store_host)
        object.__setattr__(self, "reconsume_times", reconsume_times)
        object.__setattr__(self, "prepared_transaction_offset", prepared_transaction_offset)
        object.__setattr__(self, "body", body)
        object.__setattr__(self, "topic", topic)
        object.__setattr__(self, "properties", properties)


class RecordFormatError(ValueError):
    """Bytes that are not a well-formed record; ``reason`` says which check failed."""

    def __init__(self, position: int, reason: str) -> None:
        self.position = position
        self.reason = reason
        super().__init__(f"bad record at {position}: {reason}")


_CHECKED_FIELDS: Final = head_reader("total_size", "magic_code", "body_crc", "body_length")
_PROPERTIES_LENGTH: Final = struct.Struct(">h")


def check_record(buffer: bytes | bytearray | memoryview, position: int, limit: int, *, check_crc: bool) -> int:
    """Validate the record at ``position`` (which must end by ``limit``); return its total size.

    Raises:
        RecordFormatError: magic, sizes or body CRC are wrong.
    """
    if limit - position < HEAD_SIZE:
        raise RecordFormatError(position, "truncated header")
    total, magic, crc, body_length = _CHECKED_FIELDS.unpack_from(buffer, position)
    if magic != MESSAGE_MAGIC:
        raise RecordFormatError(position, f"bad magic {magic & 0xFFFFFFFF:#010x}")
    if total < RECORD_OVERHEAD or position + total > limit:
        raise RecordFormatError(position, f"bad total size {total}")
    if body_length < 0 or HEAD_SIZE + body_length + 3 > total:
        raise RecordFormatError(position, f"bad body length {body_length}")
    topic_at = position + HEAD_SIZE + body_length
    topic_length = buffer[topic_at]
    if topic_length > MAX_TOPIC_LENGTH or topic_length == 0:
        raise RecordFormatError(position, f"bad topic length {topic_length}")
    (properties_length,) = _PROPERTIES_LENGTH.unpack_from(buffer, topic_at + 1 + topic_length)
    if properties_length < 0 or RECORD_OVERHEAD + body_length + topic_length + properties_length != total:
        raise RecordFormatError(position, "lengths do not add up to the total size")
    if check_crc:
        body_at = position + HEAD_SIZE
        if body_crc(memoryview(buffer)[body_at : body_at + body_length]) != crc:
            raise RecordFormatError(position, "body CRC mismatch")
    return int(total)


def decode_record(buffer: bytes | bytearray | memoryview, position: int = 0) -> StoredRecord:
    """Decode one record (no validation beyond what slicing enforces; see ``check_record``)."""
    fields = HEAD.unpack_from(buffer, position)
    body_length = fields[14]
    body_at = position + HEAD_SIZE
    topic_at = body_at + body_length
    view = memoryview(buffer)
    topic_length = view[topic_at]
    properties_at = topic_at + 1 + topic_length
    properties_length = int.from_bytes(view[properties_at : properties_at + 2], "big", signed=True)
    props_start = properties_at + 2
    (
        total,
        magic,
        crc,
        queue_id,
        flag,
        queue_offset,
        physical,
        sys_flag,
        born,
        born_host,
        stored,
        store_host,
        reconsume,
        prepared,
    ) = fields[:14]
    return StoredRecord(
        total,
        magic,
        crc,
        queue_id,
        flag,
        queue_offset,
        physical,
        sys_flag,
        born,
        born_host,
        stored,
        store_host,
        reconsume,
        prepared,
        body=bytes(view[body_at:topic_at]),
        topic=str(view[topic_at + 1 : properties_at], "utf-8"),
        properties=str(view[props_start : props_start + properties_length], "utf-8"),
    )


def encode_record(record: StoredRecord) -> bytes:
    """Encode a complete record (total size and CRC are recomputed from the contents)."""
    topic = record.topic.encode()
    properties = record.properties.encode()
    size = record_size(len(record.body), len(topic), len(properties))
    return record_struct(len(record.body), len(topic), len(properties)).pack(
        size,
        MESSAGE_MAGIC,
        body_crc(record.body),
        record.queue_id,
        record.flag,
        record.queue_offset,
        record.physical_offset,
        record.sys_flag,
        record.born_timestamp,
        record.born_host,
        record.store_timestamp,
        record.store_host,
        record.reconsume_times,
        record.prepared_transaction_offset,
        len(record.body),
        record.body,
        len(topic),
        topic,
        len(properties),
        properties,
    )
