"""A message put alone (``MessageStore.put_one``, the send handler's common case, and ``put_messages``
of one message, both through ``CommitLog.append_one``) is stored byte for byte as the general append
stores the same message inside a batch: the CommitLog records, the ConsumeQueue entries, the offsets."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.common import record as rec
from rocketq.common.message import KEY_SEPARATOR
from rocketq.store import FlushDiskType, MessageStore, MessageToStore, PutMessageResult

from .conftest import small_config

TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x3000, exclude_characters="\x01\x02 "), max_size=12)
PROPERTIES = st.builds(
    lambda pairs, trailing: "\x02".join(f"{name}\x01{value}" for name, value in pairs) + "\x02" * trailing,
    st.lists(st.tuples(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "a", "标签"]), TEXT), max_size=4),
    st.integers(0, 1),
)
MESSAGES = st.builds(
    MessageToStore,
    topic=st.sampled_from(["TopicA", "TopicB", "主题"]),
    queue_id=st.integers(0, 2),
    body=st.binary(max_size=700),
    properties=PROPERTIES,
    flag=st.integers(-(2**31), 2**31 - 1),
    sys_flag=st.sampled_from([0, 0, 0, 8, 4, 12]),  # plain, committed, a half and a rollback (no entry)
    born_timestamp=st.integers(0, 2**63 - 1),
    born_host=st.binary(min_size=8, max_size=8),
    store_host=st.binary(min_size=8, max_size=8),
    reconsume_times=st.integers(0, 2**31 - 1),
    prepared_transaction_offset=st.integers(0, 2**63 - 1),
)


def log_bytes(store: MessageStore) -> list[bytes]:
    """The CommitLog's files, every record's store timestamp zeroed (the stores put at different times)."""
    files = store.commit_log.files
    images = {mapped.start_offset: bytearray(mapped.buffer[: mapped.wrote_position]) for mapped in files.files}
    for offset, _ in store.commit_log.records(0):
        start = max(start for start in images if start <= offset)
        at = offset - start + rec.STORE_TIMESTAMP_AT
        images[start][at : at + 8] = bytes(8)
    return [bytes(images[start]) for start in sorted(images)]


def queue_files(root: Path) -> dict[str, bytes]:
    """Every ConsumeQueue file under ``root``'s store, by its path (entries hold no store time)."""
    directory = root / "consumequeue"
    files = sorted(path for path in directory.rglob("*") if path.is_file())
    return {str(path.relative_to(directory)): path.read_bytes() for path in files}


@pytest.mark.parametrize("flush", list(FlushDiskType), ids=lambda flush: flush.value)  # mapped / staged writes
@settings(max_examples=25, deadline=None)
@given(messages=st.lists(MESSAGES, min_size=1, max_size=12), fields=st.booleans())
def test_a_message_put_alone_is_stored_as_in_a_batch(
    flush: FlushDiskType, messages: list[MessageToStore], fields: bool
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        alone_root, batch_root = Path(directory) / "alone", Path(directory) / "batch"
        config = {"max_message_size": 2048, "flush_disk_type": flush}
        with (
            MessageStore(small_config(alone_root, **config)) as alone,
            MessageStore(small_config(batch_root, **config)) as batch,
        ):
            put = [put_alone(alone, m, fields) for m in messages]
            together = batch.put_messages(messages)
            assert together.ok and all(result.ok for result in put)
            assert [result.physical_offsets[0] for result in put] == together.physical_offsets
            assert [result.queue_offsets[0] for result in put] == together.queue_offsets
            assert [result.sizes[0] for result in put] == together.sizes
            assert log_bytes(alone) == log_bytes(batch)
            alone.dispatch_now()
            batch.dispatch_now()
            for one in (alone, batch):  # the put's description is the record's, as a scan reads it
                records = dict(one.commit_log.records(0))
                assert [record.body for record in records.values()] == [m.body for m in messages]
            keys = {key for m in messages for key in _keys(m.properties)}
            for key in keys:  # the index found the same records by their keys
                assert _found(alone, key) == _found(batch, key), key
        assert queue_files(alone_root) == queue_files(batch_root)


def put_alone(store: MessageStore, m: MessageToStore, fields: bool) -> PutMessageResult:
    """``m`` put alone: by its fields (``put_one``, as the send handler puts) or as a list of one."""
    if not fields:
        return store.put_messages([m])
    return store.put_one(
        m.topic, m.queue_id, m.body, m.properties, m.flag, m.sys_flag, m.born_timestamp, m.born_host, m.store_host,
        m.reconsume_times, m.prepared_transaction_offset, True,
    )  # fmt: skip


def _keys(properties: str) -> list[str]:
    """The KEYS and UNIQ_KEY values of a properties text."""
    keys: list[str] = []
    for pair in properties.split("\x02"):
        name, _, value = pair.partition("\x01")
        if name == "KEYS":
            keys += [key for key in value.split(KEY_SEPARATOR) if key]
        elif name == "UNIQ_KEY" and value:
            keys.append(value)
    return keys


def _found(store: MessageStore, key: str) -> list[int]:
    """CommitLog offsets of the records the index finds under ``key``, whichever topic."""
    found: list[int] = []
    for topic in ("TopicA", "TopicB", "主题"):
        found += [record.physical_offset for record in store.query_message(topic, key, 64)]
    return sorted(found)


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"body": bytes(3000)}, "MESSAGE_ILLEGAL"),  # over the maximum message size
        ({"properties": "a\x01" + "x" * 40_000}, "PROPERTIES_SIZE_EXCEEDED"),
        ({"topic": "T" * 128}, "MESSAGE_ILLEGAL"),  # a new topic: its name is checked on the general path
    ],
)
def test_a_message_put_alone_is_refused_as_in_a_batch(change: dict[str, Any], status: str) -> None:
    """What ``append_one`` hands to the general path is refused there, as in a batch: same status and
    remark, nothing written (the next message is stored at offset 0 in both)."""
    plain = MessageToStore(
        topic="TopicA", queue_id=0, body=b"ok", properties="", born_host=bytes(8), store_host=bytes(8)
    )
    refused = dataclasses.replace(plain, **change)
    with tempfile.TemporaryDirectory() as directory:
        config = {"max_message_size": 2048}
        with (
            MessageStore(small_config(Path(directory) / "alone", **config)) as alone,
            MessageStore(small_config(Path(directory) / "batch", **config)) as batch,
        ):
            one = put_alone(alone, refused, True)
            together = batch.put_messages([plain, refused])
            assert one.status.value == together.status.value == status
            assert one.remark == together.remark
            assert put_alone(alone, plain, True).physical_offsets == [0]
