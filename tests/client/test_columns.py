"""The columnar decode (``rocketq.client.columns``, one pass of ``rocketq.common.record_arrow``'s kernel
per buffer): every column of ``message_batch`` and ``records_batch`` equals what ``decode_messages``
gives for the same records, whether they are read one after the other or at positions, in one buffer
or several; records addressed by position decode as the same records one after the other; malformed
buffers are refused with the position of the bad record."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.client.columns import arrow_message_schema, columns_batch, message_batch, records_batch
from rocketq.client.message import MessageExt, decode_messages
from rocketq.common.message import encode_properties
from rocketq.common.record import RecordFormatError, StoredRecord, SysFlag, encode_record
from rocketq.common.record_columns import scan_prefix, scan_records

BROKER = "broker-a"
text = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1, max_size=8)
hosts = st.builds(
    lambda address, port: bytes(address) + port.to_bytes(4, "big", signed=True),
    st.lists(st.integers(0, 255), min_size=4, max_size=4),
    st.integers(0, 65535),
)


@st.composite
def properties_text(draw: st.DrawFn) -> str:
    """A record's properties: TAGS, KEYS, UNIQ_KEY and user properties, sometimes with what other
    clients write (a trailing separator), repeated names and entries that do not count."""
    properties: dict[str, str] = {}
    if draw(st.booleans()):
        properties["TAGS"] = draw(text)
    if draw(st.booleans()):
        properties["KEYS"] = " ".join(draw(st.lists(text.filter(lambda k: " " not in k), min_size=1, max_size=3)))
    if draw(st.booleans()):
        properties["UNIQ_KEY"] = draw(st.text("0123456789ABCDEF", min_size=32, max_size=32))
    properties.update(draw(st.dictionaries(text, text, max_size=3)))
    encoded = encode_properties(properties)
    extra = draw(
        st.sampled_from(["", "\x02", "\x02TAGS\x01later", "\x02KEYS\x01", "\x02\x01v", "\x02lonely", "\x02x\x01a\x01b"])
    )
    return encoded + extra if encoded or not extra.startswith("\x02") else extra[1:]


@st.composite
def stored_records(draw: st.DrawFn) -> StoredRecord:
    body = draw(st.binary(max_size=300) | st.sampled_from([b"", b"\x00" * 5000]))
    compressed = draw(st.booleans())
    stamp = st.integers(0, 2**44)
    transaction = draw(st.sampled_from([0, SysFlag.TRANSACTION_COMMIT_TYPE]))
    return StoredRecord(
        total_size=0,
        magic_code=0,
        body_crc=0,
        queue_id=draw(st.integers(0, 2**31 - 1)),
        flag=draw(st.integers(-(2**31), 2**31 - 1)),
        queue_offset=draw(st.integers(0, 2**62)),
        physical_offset=draw(st.integers(0, 2**62)),
        sys_flag=transaction | (SysFlag.COMPRESSED if compressed else 0),
        born_timestamp=draw(stamp),
        born_host=draw(hosts),
        store_timestamp=draw(stamp),
        store_host=draw(hosts),
        reconsume_times=draw(st.integers(0, 16)),
        prepared_transaction_offset=0,
        body=zlib.compress(body) if compressed else body,
        topic=draw(st.sampled_from(["TopicTest", "%RETRY%group", "Ü-topic", "t" * 127])),
        properties=draw(properties_text()),
    )


def expected_rows(messages: list[MessageExt], include_properties: bool) -> dict[str, list[object]]:
    """The batch's columns as ``decode_messages`` sees the records (timestamps in µs)."""
    columns: dict[str, list[object]] = {
        "topic": [m.topic for m in messages],
        "brokerName": [BROKER] * len(messages),
        "queueId": [m.queue_id for m in messages],
        "queueOffset": [m.queue_offset for m in messages],
        "msgId": [m.msg_id for m in messages],
        "tags": [m.tags for m in messages],
        "keys": [m.properties.get("KEYS") for m in messages],
        "body": [m.body for m in messages],
        "bornTimestamp": [m.born_timestamp * 1000 for m in messages],
        "storeTimestamp": [m.store_timestamp * 1000 for m in messages],
        "reconsumeTimes": [m.reconsume_times for m in messages],
    }
    if include_properties:
        columns["properties"] = [list(m.properties.items()) for m in messages]
    return columns


def batch_rows(batch: pa.RecordBatch) -> dict[str, list[object]]:
    columns: dict[str, list[object]] = {}
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        if pa.types.is_timestamp(column.type):
            column = column.cast(pa.int64())
        columns[name] = column.to_pylist()
    return columns


@settings(max_examples=150, deadline=None)
@given(st.lists(stored_records(), max_size=12), st.booleans())
def test_every_column_equals_decode_messages(records: list[StoredRecord], include_properties: bool) -> None:
    data = b"".join(encode_record(record) for record in records)
    batch = message_batch(data, broker_name=BROKER, include_properties=include_properties)
    assert batch.schema.equals(arrow_message_schema(include_properties))
    batch.validate(full=True)
    assert batch_rows(batch) == expected_rows(decode_messages(data), include_properties)


@settings(max_examples=60, deadline=None)
@given(st.lists(stored_records(), min_size=1, max_size=10), st.randoms(use_true_random=False))
def test_records_at_positions_decode_as_the_same_records_in_a_row(
    records: list[StoredRecord], shuffle: random.Random
) -> None:
    encoded = [encode_record(record) for record in records]
    layout = bytearray(b"\xee" * 7)  # records with junk between them, as in a CommitLog with other queues
    starts = []
    for record in encoded:
        starts.append(len(layout))
        layout += record + b"\xee" * shuffle.randrange(0, 40)
    order = list(range(len(records)))
    shuffle.shuffle(order)
    by_position = message_batch(
        bytes(layout), broker_name=BROKER, include_properties=True, positions=np.array([starts[i] for i in order])
    )
    in_a_row = message_batch(b"".join(encoded[i] for i in order), broker_name=BROKER, include_properties=True)
    assert by_position.equals(in_a_row)


@settings(max_examples=80, deadline=None)
@given(st.lists(stored_records(), min_size=1, max_size=12), st.data(), st.booleans())
def test_records_of_several_buffers_make_the_batch_of_their_join(
    records: list[StoredRecord], data: st.DataObject, include_properties: bool
) -> None:
    """One batch of several scanned buffers (a Spark task's pulls) is the batch of the buffers joined."""
    encoded = [encode_record(record) for record in records]
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(encoded)), max_size=4))) | {len(encoded)})
    buffers, first = [], 0
    for cut in cuts:
        buffers.append(b"".join(encoded[first:cut]))
        first = cut
    parts = [scan_records(buffer) for buffer in buffers if buffer]
    joined = message_batch(b"".join(encoded), broker_name=BROKER, include_properties=include_properties)
    batch = columns_batch(parts, broker_name=BROKER, include_properties=include_properties)
    batch.validate(full=True)
    assert batch.equals(joined)


@settings(max_examples=80, deadline=None)
@given(st.lists(stored_records(), min_size=1, max_size=40), st.data(), st.booleans())
def test_parts_read_in_a_row_or_at_positions_equal_decode_messages(
    records: list[StoredRecord], data: st.DataObject, include_properties: bool
) -> None:
    """``records_batch`` over parts of both kinds (a pull's records in a row, records at positions in a
    buffer with other bytes between them, an empty part) gives every record as ``decode_messages`` does,
    across the parts' boundaries (rows past the first byte of the tags and keys bitmaps included)."""
    encoded = [encode_record(record) for record in records]
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(encoded)), max_size=5))) | {len(encoded)})
    parts: list[tuple[bytes, list[int] | None]] = []
    first = 0
    for cut in cuts:
        if data.draw(st.booleans()):
            parts.append((b"".join(encoded[first:cut]), None))
        else:
            layout, starts = bytearray(b"\xee" * data.draw(st.integers(0, 9))), []
            for record in encoded[first:cut]:
                starts.append(len(layout))
                layout += record + b"\xee" * data.draw(st.integers(0, 9))
            parts.append((bytes(layout), starts))
        first = cut
    batch = records_batch(parts, broker_name=BROKER, include_properties=include_properties)
    batch.validate(full=True)
    assert batch_rows(batch) == expected_rows(decode_messages(b"".join(encoded)), include_properties)


def test_many_records_with_and_without_tags_keys_and_unique_keys() -> None:
    """Thousands of rows in one batch, every combination of TAGS, KEYS and UNIQ_KEY present or absent,
    some compressed: the bitmaps, offsets and values line up over the whole batch."""
    chooser = random.Random(7)
    records = []
    for index in range(3000):
        properties: dict[str, str] = {}
        if index % 2:
            properties["TAGS"] = f"tag{index % 5}"
        if index % 3:
            properties["KEYS"] = f"k{index} j{index}"
        if index % 5:
            properties["UNIQ_KEY"] = f"{index:032X}"
        body = bytes(chooser.randrange(256) for _ in range(chooser.randrange(0, 40)))
        compressed = index % 97 == 0
        flag = SysFlag.COMPRESSED if compressed else 0
        stored = zlib.compress(body) if compressed else body
        records.append(sample(index, properties=encode_properties(properties), sys_flag=flag, body=stored))
    data = b"".join(encode_record(record) for record in records)
    half = len(b"".join(encode_record(record) for record in records[:1500]))
    for include_properties in (False, True):
        batch = records_batch(
            [(data[:half], None), (data[half:], None)], broker_name=BROKER, include_properties=include_properties
        )
        batch.validate(full=True)
        assert batch_rows(batch) == expected_rows(decode_messages(data), include_properties)


def test_body_crc_is_checked_by_records_batch_when_asked() -> None:
    data = bytearray(encode_record(sample(0)) + encode_record(sample(1)))
    second = len(data) // 2
    data[second + 88] ^= 1
    assert records_batch([(bytes(data), None)], broker_name=BROKER).num_rows == 2  # not asked
    with pytest.raises(RecordFormatError, match="CRC") as caught:
        records_batch([(bytes(data), [0, second])], broker_name=BROKER, check_crc=True)
    assert caught.value.position == second


def test_an_empty_buffer_gives_an_empty_batch_of_the_schema() -> None:
    for include_properties in (False, True):
        batch = message_batch(b"", broker_name=BROKER, include_properties=include_properties)
        assert batch.num_rows == 0 and batch.schema.equals(arrow_message_schema(include_properties))
        at_no_positions = message_batch(b"x", broker_name=BROKER, positions=np.zeros(0, dtype=np.int64))
        assert at_no_positions.num_rows == 0


def test_no_parts_give_an_empty_batch_of_the_schema() -> None:
    for include_properties in (False, True):
        batch = records_batch([], broker_name=BROKER, include_properties=include_properties)
        assert batch.num_rows == 0 and batch.schema.equals(arrow_message_schema(include_properties))
        batch.validate(full=True)


def test_the_batch_owns_its_bytes() -> None:
    record = StoredRecord(0, 0, 0, 1, 0, 5, 9, 0, 1, bytes(8), 2, bytes(8), 0, 0, b"body", "T", "TAGS\x01a")
    data = bytearray(encode_record(record))
    batch = message_batch(data, broker_name=BROKER)
    data[:] = bytes(len(data))
    assert batch.column("body").to_pylist() == [b"body"] and batch.column("tags").to_pylist() == ["a"]


def sample(index: int, **changes: object) -> StoredRecord:
    record = StoredRecord(
        0, 0, 0, 0, 0, index, 1000 + index, 0, 1, bytes(8), 2, bytes(8), 0, 0, b"x" * 10, "T", "KEYS\x01k"
    )
    return replace(record, **changes)  # type: ignore[arg-type]


def three_records(middle: bytes) -> tuple[bytes, int]:
    first = encode_record(sample(0))
    return first + middle + encode_record(sample(2)), len(first)


@pytest.mark.parametrize(
    ("middle", "reason"),
    [
        (b"\x00\x00\x00\x5b" + b"\x00" * 87, "bad magic 0x00000000"),
        (encode_record(sample(1, sys_flag=SysFlag.STOREHOST_V6)), "IPv6"),
        (encode_record(sample(1, sys_flag=SysFlag.COMPRESSED)), "does not inflate"),
    ],
)
def test_a_bad_record_is_refused_with_its_position(middle: bytes, reason: str) -> None:
    data, bad_at = three_records(middle)
    with pytest.raises(RecordFormatError, match=reason) as caught:
        message_batch(data, broker_name=BROKER)
    assert caught.value.position == bad_at


@pytest.mark.parametrize("kept", [1, 50, 90, 100])
def test_a_cut_record_is_refused_with_its_position(kept: int) -> None:
    first = encode_record(sample(0))
    with pytest.raises(RecordFormatError, match=r"truncated|bad total size") as caught:
        message_batch(first + encode_record(sample(1))[:kept], broker_name=BROKER)
    assert caught.value.position == len(first)


def test_text_that_is_not_utf8_is_refused() -> None:
    record = bytearray(encode_record(sample(1, topic="TT", properties="KEYS\x01kk")))
    topic_at = 88 + 10 + 1
    for at, reason in ((topic_at + 1, "topic is not UTF-8"), (topic_at + 2 + 2 + 6, "properties are not UTF-8")):
        broken = bytearray(record)
        broken[at] = 0xFF
        with pytest.raises(RecordFormatError, match=reason):
            message_batch(bytes(broken), broker_name=BROKER)


def test_a_position_outside_the_buffer_is_refused() -> None:
    data = encode_record(sample(0))
    for position in (-1, len(data) - 10, len(data) + 100):
        with pytest.raises(RecordFormatError, match=r"truncated|outside") as caught:
            message_batch(data, broker_name=BROKER, positions=np.array([0, position]))
        assert caught.value.position == position


def test_body_crc_is_checked_when_asked() -> None:
    data = bytearray(encode_record(sample(0)) + encode_record(sample(1)))
    second = len(data) // 2
    data[second + 88] ^= 1  # a body byte of the second record
    assert len(scan_records(bytes(data))) == 2  # not asked
    columns, error = scan_prefix(bytes(data), check_crc=True)
    assert len(columns) == 1 and error is not None
    assert error.position == second and "CRC" in error.reason


PLAIN_DECODE = """
import sys
import numpy as np
import pyarrow as pa
from rocketq.client.columns import message_batch
directory = sys.argv[1]
data = open(directory + "/records", "rb").read()
positions = np.load(directory + "/positions.npy")
batches = [
    message_batch(data, broker_name="b", include_properties=True),
    message_batch(data, broker_name="b", positions=positions),
]
for number, batch in enumerate(batches):
    with pa.OSFile(f"{directory}/out-{number}", "wb") as sink, pa.ipc.new_stream(sink, batch.schema) as out:
        out.write_batch(batch)
"""


@settings(max_examples=3, deadline=None)
@given(st.lists(stored_records(), min_size=1, max_size=30))
def test_the_plain_python_kernels_decode_as_the_compiled_ones(records: list[StoredRecord]) -> None:
    """Without numba the same kernels run interpreted (ROCKETQ_COMPILED_COLUMNS=0 forces it)."""
    encoded = [encode_record(record) for record in records]
    data = b"".join(encoded)
    positions = np.cumsum([0] + [len(r) for r in encoded[:-1]])[::-1].copy()
    with tempfile.TemporaryDirectory() as directory:
        Path(directory, "records").write_bytes(data)
        np.save(Path(directory, "positions.npy"), positions)
        env = {**os.environ, "ROCKETQ_COMPILED_COLUMNS": "0"}
        subprocess.run([sys.executable, "-c", PLAIN_DECODE, directory], env=env, check=True, timeout=120)
        plain = []
        for number in range(2):
            with pa.ipc.open_stream(pa.OSFile(f"{directory}/out-{number}")) as stream:
                plain.append(stream.read_next_batch())
    assert plain[0].equals(message_batch(data, broker_name="b", include_properties=True))
    assert plain[1].equals(message_batch(data, broker_name="b", positions=positions))
