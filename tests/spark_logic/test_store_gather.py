"""The store reader's read (the one decode, ``fill_columns``, then ``first_mismatch`` against the entries)
against the plain scan and decode (``scan_prefix`` + a per-record comparison with the entries written
here + ``columns_batch``): the same batch for any records, the same decision and the same first refused
record when a byte or an entry is damaged, and the kernels' CRC equal to ``zlib.crc32``."""

from __future__ import annotations

import zlib
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.client.columns import arrow_memory, arrow_message_schema, columns_batch, filled_batch
from rocketq.common import byte_kernels
from rocketq.common.record import RecordFormatError, StoredRecord, encode_record
from rocketq.common.record_arrow import FilledColumns, fill_columns
from rocketq.common.record_columns import QUEUE_ID as QUEUE_ID_FIELD
from rocketq.common.record_columns import QUEUE_OFFSET, TOPIC_AT, TOPIC_LENGTH, TOTAL_SIZE, scan_prefix
from rocketq.store.readonly_entries import Described, first_mismatch
from tests.client.test_columns import sample, stored_records

TOPIC = "TopicTest"
QUEUE_ID = 3


def one_queue(records: list[StoredRecord], first_offset: int) -> list[StoredRecord]:
    return [
        replace(record, topic=TOPIC, queue_id=QUEUE_ID, queue_offset=first_offset + index)
        for index, record in enumerate(records)
    ]


def layout(records: list[StoredRecord], gaps: list[int]) -> tuple[bytes, np.ndarray, np.ndarray]:
    """The records in a buffer with ``gaps`` bytes of filler before each; (buffer, positions, sizes)."""
    data, positions, sizes = b"", [], []
    for record, gap in zip(records, gaps, strict=False):
        encoded = encode_record(record)
        data += b"\x00" * gap
        positions.append(len(data))
        sizes.append(len(encoded))
        data += encoded
    return data, np.array(positions, dtype=np.int64), np.array(sizes, dtype=np.int64)


def decode(data: bytes, positions: np.ndarray, check_crc: bool) -> FilledColumns | None:
    """The rows the one decode makes of these records, or None when it refuses one."""
    try:
        return fill_columns(
            [(np.frombuffer(data, dtype=np.uint8), positions)], check_crc=check_crc, allocate=arrow_memory
        )
    except RecordFormatError:
        return None


def mismatch(
    filled: FilledColumns, data: bytes, positions: np.ndarray, sizes: np.ndarray, offsets: np.ndarray
) -> int | None:
    described = Described(np.frombuffer(data, dtype=np.uint8), positions, sizes, offsets)
    return first_mismatch(filled, [described], TOPIC, QUEUE_ID)


def gather(
    data: bytes, positions: np.ndarray, sizes: np.ndarray, offsets: np.ndarray, check_crc: bool
) -> FilledColumns | None:
    """The rows the store reader makes of these records, or None when it refuses them."""
    filled = decode(data, positions, check_crc)
    if filled is None or mismatch(filled, data, positions, sizes, offsets) is not None:
        return None
    return filled


def plain_accepted(data: bytes, positions: np.ndarray, sizes: np.ndarray, offsets: np.ndarray, check_crc: bool) -> int:
    """How many records the plain path accepts: the scan, then each record against its entry."""
    records, _ = scan_prefix(data, positions, check_crc=check_crc)
    fields, name = records.fields, TOPIC.encode()
    for i in range(len(records)):
        at, length = int(fields[TOPIC_AT, i]), int(fields[TOPIC_LENGTH, i])
        if (
            fields[TOTAL_SIZE, i] != sizes[i]
            or fields[QUEUE_OFFSET, i] != offsets[i]
            or fields[QUEUE_ID_FIELD, i] != QUEUE_ID
            or bytes(records.data[at : at + length]) != name
        ):
            return i
    return len(records)


gaps = st.lists(st.integers(0, 40), min_size=30, max_size=30)


@settings(max_examples=80, deadline=None)
@given(st.lists(stored_records(), max_size=12), gaps, st.integers(0, 2**40), st.booleans())
def test_the_gathered_batch_is_the_plain_decode(
    records: list[StoredRecord], gaps: list[int], first_offset: int, check_crc: bool
) -> None:
    records = one_queue(records, first_offset)
    data, positions, sizes = layout(records, gaps)
    offsets = np.arange(first_offset, first_offset + len(records), dtype=np.int64)
    filled = gather(data, positions, sizes, offsets, check_crc)
    assert filled is not None and filled.count == len(records)
    batch = filled_batch(filled, broker_name="broker-a")
    batch.validate(full=True)
    records_scanned, error = scan_prefix(data, positions, check_crc=check_crc)
    assert error is None
    assert batch.equals(columns_batch(records_scanned, broker_name="broker-a"))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(stored_records(), min_size=1, max_size=6),
    gaps,
    st.integers(0, 10**6),
    st.integers(0, 255),
    st.booleans(),
    st.sampled_from(["none", "size", "offset"]),
)
def test_a_damaged_byte_or_entry_is_refused_by_both_or_neither(
    records: list[StoredRecord], gaps: list[int], where: int, value: int, check_crc: bool, entry: str
) -> None:
    records = one_queue(records, 100)
    data, positions, sizes = layout(records, gaps)
    damaged = bytearray(data)
    damaged[where % len(damaged)] = value
    offsets = np.arange(100, 100 + len(records), dtype=np.int64)
    victim = where % len(records)
    if entry == "size":
        sizes[victim] += 1
    elif entry == "offset":
        offsets[victim] += 1
    accepted = plain_accepted(bytes(damaged), positions, sizes, offsets, check_crc)
    decoded = decode(bytes(damaged), positions, check_crc)
    if decoded is not None:  # every record sound: the first not its entry's is the plain path's
        found = mismatch(decoded, bytes(damaged), positions, sizes, offsets)
        assert found == (None if accepted == len(records) else accepted)
    filled = gather(bytes(damaged), positions, sizes, offsets, check_crc)
    assert (filled is not None) == (accepted == len(records))
    if filled is None:
        return
    plain, _ = scan_prefix(bytes(damaged), positions, check_crc=check_crc)
    try:
        want = columns_batch(plain, broker_name="b")
    except RecordFormatError:  # a damaged compressed body: both refuse it when they make the batch
        with pytest.raises(RecordFormatError, match="does not inflate"):
            filled_batch(filled, broker_name="b")
        return
    assert filled_batch(filled, broker_name="b").equals(want)


def test_a_record_of_another_topic_or_queue_is_refused() -> None:
    record = one_queue([sample(0)], 0)[0]
    for other in (replace(record, topic="TopicTesT"), replace(record, topic="TopicTest2"), replace(record, queue_id=0)):
        data, positions, sizes = layout([record, replace(other, queue_offset=1)], [0, 0])
        entries = np.array([0, 1], dtype=np.int64)
        assert plain_accepted(data, positions, sizes, entries, True) == 1
        decoded = decode(data, positions, True)
        assert decoded is not None and mismatch(decoded, data, positions, sizes, entries) == 1
        assert gather(data, positions, sizes, entries, True) is None
        assert gather(data, positions[:1], sizes[:1], entries[:1], True) is not None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_the_kernels_crc_is_zlibs(data: bytes) -> None:
    """(Compiled, the same function checks bodies in the tests above that pass ``check_crc``.)"""
    array = np.frombuffer(data, dtype=np.uint8)
    assert int(byte_kernels.crc32(array, 0, len(array))) & 0xFFFFFFFF == zlib.crc32(data)


def test_an_empty_gather_is_an_empty_batch() -> None:
    filled = gather(b"", np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), True)
    assert filled is not None
    batch = filled_batch(filled, broker_name="b")
    assert batch.num_rows == 0 and batch.schema.equals(arrow_message_schema(False))
