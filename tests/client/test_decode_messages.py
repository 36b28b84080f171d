"""decode_messages: stored records in, MessageExt out; a cut or corrupt body is an error, never a hang."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.client.errors import MQClientError
from rocketq.client.message import decode_messages
from rocketq.client.pull import PullStatus, pull_result
from rocketq.common.record import RECORD_OVERHEAD, RecordFormatError, StoredRecord, SysFlag, encode_record
from rocketq.protocol import RemotingCommand, ResponseCode

records = st.builds(
    lambda topic, body, compressed, queue_id, queue_offset, physical, flag, properties: (
        StoredRecord(
            0,
            0,
            0,
            queue_id,
            flag,
            queue_offset,
            physical,
            SysFlag.COMPRESSED if compressed else 0,
            1_700_000_000_000,
            bytes(8),
            1_700_000_000_001,
            bytes(8),
            0,
            0,
            zlib.compress(body) if compressed else body,
            topic,
            properties,
        ),
        body,
    ),
    st.sampled_from(["T", "TopicB", "%RETRY%g", "Ü"]),
    st.binary(max_size=300),
    st.booleans(),
    st.integers(0, 2**31 - 1),
    st.integers(0, 2**63 - 1),
    st.integers(0, 2**63 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.sampled_from(["", "TAGS\x01a\x02KEYS\x01k1 k2\x02"]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(records, max_size=8))
def test_every_field_of_every_record_comes_back(batch: list[tuple[StoredRecord, bytes]]) -> None:
    data = b"".join(encode_record(record) for record, _ in batch)
    messages = decode_messages(data)
    assert len(messages) == len(batch)
    position = 0
    for message, (record, body) in zip(messages, batch, strict=True):
        assert (message.topic, message.body, message.queue_id, message.flag) == (
            record.topic,
            body,
            record.queue_id,
            record.flag,
        )
        assert (message.queue_offset, message.commit_log_offset, message.sys_flag) == (
            record.queue_offset,
            record.physical_offset,
            record.sys_flag,
        )
        assert message.properties_text == record.properties
        assert message.store_size == len(encode_record(record))
        assert message.store_timestamp == record.store_timestamp
        position += message.store_size
    assert position == len(data)
    assert [m.queue_offset for m in decode_messages(memoryview(data))] == [m.queue_offset for m in messages]


@settings(max_examples=200, deadline=None)
@given(st.lists(records, min_size=1, max_size=4), st.data())
def test_a_cut_body_is_an_error_unless_cut_between_records(
    batch: list[tuple[StoredRecord, bytes]], data: st.DataObject
) -> None:
    encoded = [encode_record(record) for record, _ in batch]
    whole = b"".join(encoded)
    cut = data.draw(st.integers(0, len(whole) - 1))
    boundaries = {sum(len(e) for e in encoded[:n]) for n in range(len(encoded))}
    if cut in boundaries:
        assert len(decode_messages(whole[:cut])) == sorted(boundaries).index(cut)
    else:
        with pytest.raises(RecordFormatError):
            decode_messages(whole[:cut])


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_garbage_decodes_or_fails_cleanly(garbage: bytes) -> None:
    try:
        messages = decode_messages(garbage)
    except (RecordFormatError, UnicodeDecodeError):
        return
    assert sum(message.store_size for message in messages) == len(garbage)


def test_a_zero_size_record_does_not_loop_forever() -> None:
    with pytest.raises(RecordFormatError, match="size 0"):
        decode_messages(bytes(RECORD_OVERHEAD + 10))


def test_a_compressed_body_that_does_not_inflate_is_an_error() -> None:
    record = StoredRecord(
        0, 0, 0, 1, 0, 5, 100, SysFlag.COMPRESSED, 0, bytes(8), 0, bytes(8), 0, 0, b"not zlib", "T", ""
    )
    with pytest.raises(RecordFormatError, match="inflate"):
        decode_messages(encode_record(record))


def test_a_pull_response_with_a_corrupt_body_is_a_client_error() -> None:
    response = RemotingCommand(
        code=ResponseCode.SUCCESS,
        opaque=1,
        flag=1,
        ext_fields={"nextBeginOffset": "3", "minOffset": "0", "maxOffset": "3"},
        body=bytes(200),
    )
    with pytest.raises(MQClientError, match="malformed pull response from 127"):
        pull_result(response, frozenset(), "127.0.0.1:1")
    good = RemotingCommand(
        code=ResponseCode.SUCCESS,
        opaque=1,
        flag=1,
        ext_fields={"nextBeginOffset": "3", "minOffset": "0", "maxOffset": "3"},
        body=b"",
    )
    result = pull_result(good, frozenset(), "127.0.0.1:1")
    assert (result.status, result.next_begin_offset, result.messages) == (PullStatus.FOUND, 3, [])
