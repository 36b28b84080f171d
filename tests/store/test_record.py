"""Golden bytes for every on-disk format, built by hand from the field tables in docs/store-format.md."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from rocketq.common import record as rec
from rocketq.common.message_id import encode_host
from rocketq.store import MessageStore, MessageToStore
from rocketq.store.checkpoint import StoreCheckpoint
from rocketq.store.index_file import IndexFile, key_hash

from .conftest import small_config


def hand_built_record(
    *,
    body: bytes,
    topic: bytes,
    properties: bytes,
    queue_id: int,
    queue_offset: int,
    physical: int,
    born: bytes,
    store: bytes,
    born_ts: int,
    store_ts: int,
) -> bytes:
    """The §4.1 table, field by field, without using rocketq's own structs."""
    fields = [
        (4, 91 + len(body) + len(topic) + len(properties)),  # TOTALSIZE
        (4, 0xDAA320A7),  # MAGICCODE
        (4, zlib.crc32(body) & 0x7FFFFFFF),  # BODYCRC
        (4, queue_id),  # QUEUEID
        (4, 7),  # FLAG
        (8, queue_offset),  # QUEUEOFFSET
        (8, physical),  # PHYSICALOFFSET
        (4, 0),  # SYSFLAG
        (8, born_ts),  # BORNTIMESTAMP
    ]
    out = b"".join(value.to_bytes(size, "big") for size, value in fields)
    out += born + store_ts.to_bytes(8, "big") + store
    out += (3).to_bytes(4, "big") + (0).to_bytes(8, "big")  # RECONSUMETIMES, PREPARED_TRANSACTION_OFFSET
    out += len(body).to_bytes(4, "big") + body
    out += len(topic).to_bytes(1, "big") + topic
    out += len(properties).to_bytes(2, "big") + properties
    return out


def test_store_writes_the_documented_record_layout(tmp_path: Path) -> None:
    born, stored = encode_host("10.0.0.7", 51234), encode_host("127.0.0.1", 10911)
    properties = "TAGS\x01TagA\x02KEYS\x01k1\x02UNIQ_KEY\x01ABC"
    with MessageStore(small_config(tmp_path)) as store:
        store.put_message(MessageToStore(topic="T0", queue_id=0, body=b"first"))
        result = store.put_message(
            MessageToStore(
                topic="TopicA",
                queue_id=3,
                body=b"hello world",
                properties=properties,
                flag=7,
                born_timestamp=1_700_000_000_123,
                born_host=born,
                store_host=stored,
                reconsume_times=3,
            )
        )
        offset = result.physical_offsets[0]
        mapped = store.commit_log.pin(offset)
        assert mapped is not None
        size = result.sizes[0]
        written = bytes(mapped.buffer[offset : offset + size])
        mapped.release()
    expected = hand_built_record(
        body=b"hello world",
        topic=b"TopicA",
        properties=properties.encode(),
        queue_id=3,
        queue_offset=0,
        physical=offset,
        born=born,
        store=stored,
        born_ts=1_700_000_000_123,
        store_ts=result.store_timestamp,
    )
    assert written == expected
    decoded = rec.decode_record(written)
    assert (decoded.topic, decoded.body, decoded.properties, decoded.flag) == ("TopicA", b"hello world", properties, 7)
    assert rec.encode_record(decoded) == written


def test_filler_and_roll(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path)) as store:
        offsets = [
            store.put_message(MessageToStore(topic="T", queue_id=0, body=bytes(1000))).physical_offsets[0]
            for _ in range(5)
        ]
        # 1000 B body + 92 = 1092 B records: three fit in 4096 (3276 + 8), the fourth rolls.
        assert offsets == [0, 1092, 2184, 4096, 5188]
        first = store.commit_log.files.files[0]
        remaining, magic = struct.unpack_from(">ii", first.buffer, 3276)
        assert (remaining, magic & 0xFFFFFFFF) == (4096 - 3276, 0xCBD43194)
        assert (tmp_path / "commitlog" / "00000000000000004096").exists()


def test_consume_queue_entry_layout(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path)) as store:
        store.put_message(MessageToStore(topic="T", queue_id=1, body=b"a", properties="TAGS\x01TagA"))
        store.put_message(MessageToStore(topic="T", queue_id=1, body=b"b"))
        store.dispatch_now()
        store.flush_logics()
    raw = (tmp_path / "consumequeue" / "T" / "1" / "00000000000000000000").read_bytes()
    assert len(raw) == 320
    first_size = 91 + 1 + 1 + len("TAGS\x01TagA")
    assert raw[:20] == (0).to_bytes(8, "big") + first_size.to_bytes(4, "big") + (2598919).to_bytes(8, "big")
    assert raw[20:40] == first_size.to_bytes(8, "big") + (93).to_bytes(4, "big") + bytes(8)
    assert raw[40:] == bytes(280)


def test_index_file_layout(tmp_path: Path) -> None:
    path = tmp_path / "20240101000000000"
    index = IndexFile(path, slot_count=8, max_entries=4, create=True)
    assert index.put("T#k", 4242, 1_000_000)
    assert index.put("T#k", 5000, 1_003_500)
    index.flush()
    index.close()
    raw = path.read_bytes()
    assert len(raw) == 40 + 8 * 4 + 4 * 20
    assert struct.unpack_from(">qqqqii", raw) == (1_000_000, 1_003_500, 4242, 5000, 1, 3)
    slot = key_hash("T#k") % 8
    assert struct.unpack_from(">i", raw, 40 + slot * 4) == (2,)
    assert struct.unpack_from(">iqii", raw, 40 + 32 + 20) == (key_hash("T#k"), 4242, 0, 0)
    assert struct.unpack_from(">iqii", raw, 40 + 32 + 40) == (key_hash("T#k"), 5000, 3, 1)
    reopened = IndexFile(path, slot_count=8, max_entries=4, create=False)
    found: list[int] = []
    reopened.lookup("T#k", 0, 2**62, 10, found)
    assert found == [5000, 4242]
    assert reopened.put("T#x", 6000, 1_004_000)
    assert not reopened.put("T#y", 7000, 1_004_000)  # full at max_entries (entry 0 unused)
    reopened.close()


def test_checkpoint_layout(tmp_path: Path) -> None:
    checkpoint = StoreCheckpoint(tmp_path / "checkpoint", 11, 22, 33)
    checkpoint.flush()
    raw = (tmp_path / "checkpoint").read_bytes()
    assert len(raw) == 4096
    assert struct.unpack_from(">qqq", raw) == (11, 22, 33)
    assert StoreCheckpoint.load(tmp_path / "checkpoint") == checkpoint


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda b: b.__setitem__(slice(4, 8), b"\0\0\0\1"), "bad magic"),
        (lambda b: b.__setitem__(slice(0, 4), (10**6).to_bytes(4, "big")), "bad total size"),
        (lambda b: b.__setitem__(90, b[90] ^ 0xFF), "body CRC mismatch"),
        (lambda b: b.__setitem__(slice(84, 88), (2**20).to_bytes(4, "big")), "bad body length"),
    ],
)
def test_check_record_names_the_failed_check(damage, reason) -> None:  # type: ignore[no-untyped-def]
    good = bytearray(
        hand_built_record(
            body=b"0123456789",
            topic=b"T",
            properties=b"",
            queue_id=0,
            queue_offset=0,
            physical=0,
            born=bytes(8),
            store=bytes(8),
            born_ts=0,
            store_ts=0,
        )
    )
    assert rec.check_record(good, 0, len(good), check_crc=True) == len(good)
    damage(good)
    with pytest.raises(rec.RecordFormatError, match=reason):
        rec.check_record(good, 0, len(good), check_crc=True)


@pytest.mark.parametrize(
    "names",
    [
        ("total_size", "queue_offset", "body_length"),
        ("born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times"),
        tuple(name for name, _ in rec.HEAD_FIELDS),
    ],
)
def test_head_readers_read_the_same_fields_as_the_full_header(names: tuple[str, ...]) -> None:
    record = rec.StoredRecord(
        0, 0, 0, 3, 7, 11, 4096, 0, 1_700_000_000_000, encode_host("10.0.0.1", 1), 1_700_000_000_001,
        encode_host("10.0.0.2", 10911), 2, 0, b"body", "T", "TAGS\x01a",
    )  # fmt: skip
    data = b"\0" * 5 + rec.encode_record(record)
    full = dict(zip([name for name, _ in rec.HEAD_FIELDS], rec.HEAD.unpack_from(data, 5), strict=True))
    reader = rec.head_reader(*names)
    assert reader.size == rec.HEAD_SIZE
    assert reader.unpack_from(data, 5) == tuple(full[name] for name in names)
    with pytest.raises(ValueError, match="not record header fields"):
        rec.head_reader("total_size", "colour")


def test_the_in_place_field_offsets_follow_the_header_table() -> None:
    """The ``*_AT`` constants the hot paths read at are where HEAD_FIELDS puts each field."""
    at, offsets = 0, {}
    for name, code in rec.HEAD_FIELDS:
        offsets[name] = at
        at += struct.calcsize(">" + code)
    constants = {
        "queue_id": rec.QUEUE_ID_AT,
        "flag": rec.FLAG_AT,
        "queue_offset": rec.QUEUE_OFFSET_AT,
        "physical_offset": rec.PHYSICAL_OFFSET_AT,
        "sys_flag": rec.SYS_FLAG_AT,
        "store_timestamp": rec.STORE_TIMESTAMP_AT,
        "store_host": rec.STORE_HOST_AT,
        "body_length": rec.BODY_LENGTH_AT,
    }
    for name, constant in constants.items():
        assert constant == offsets[name], name
