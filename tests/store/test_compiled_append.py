"""The compiled batch append against the per-message one: a wire batch the compiled path accepts is
stored byte for byte as the broker's decode-and-put path stores it, and every batch that path treats
specially or refuses is left to it."""

from __future__ import annotations

import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.broker.handlers.send import plain_stored_properties
from rocketq.common import record as rec
from rocketq.common.message import Property, find_property
from rocketq.protocol import BatchItem, RemoteProtocolError, decode_batch
from rocketq.protocol.batch import encode_batch
from rocketq.store import BatchToStore, FlushDiskType, MessageStore, MessageToStore, compiled_append

from .conftest import message, small_config

pytestmark = pytest.mark.skipif(compiled_append.load() is None, reason="numba is not installed")

SUFFIX = "MSG_REGION\x01DefaultRegion\x02TRACE_ON\x01true\x02CLUSTER\x01DefaultCluster"
PLAIN_NAMES = st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "WAIT", "XWAIT", "a"])
PLAIN_VALUES = st.sampled_from(["", "a", "true", "TRUE", "TrUe", "false", "1", "0", "k1 k2", "x" * 40])
SPECIAL_NAMES = st.sampled_from(["DELAY", "CLUSTER", "TRAN_MSG", "MSG_REGION", "TRACE_ON"])


def property_texts(names: st.SearchStrategy[str], values: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.builds(
        lambda pairs, trailing: "\x02".join(f"{name}\x01{value}" for name, value in pairs) + "\x02" * trailing,
        st.lists(st.tuples(names, values), max_size=5),
        st.integers(0, 2),
    )


PROPERTY_TEXTS = st.one_of(  # mostly plain messages; sometimes one the per-message path must handle
    property_texts(PLAIN_NAMES, PLAIN_VALUES),
    property_texts(PLAIN_NAMES, PLAIN_VALUES),
    property_texts(PLAIN_NAMES, PLAIN_VALUES),
    property_texts(PLAIN_NAMES, PLAIN_VALUES),
    property_texts(st.one_of(PLAIN_NAMES, SPECIAL_NAMES), st.one_of(PLAIN_VALUES, st.just("标签"))),
)
ITEMS = st.lists(
    st.builds(BatchItem, st.binary(max_size=300), PROPERTY_TEXTS, st.integers(-(2**31), 2**31 - 1)),
    min_size=1,
    max_size=8,
)


def as_messages(batch: BatchToStore, max_body: int) -> tuple[list[MessageToStore], bool] | None:
    """What the broker's per-message path stores for a plain batch (and whether it waits), or None
    when that path would not treat it as plain: a bad body, a body too large, special properties."""
    try:
        items = decode_batch(batch.items)
    except RemoteProtocolError:
        return None
    messages: list[MessageToStore] = []
    waits = False
    for body, text, flag in items:
        stored = plain_stored_properties(text, batch.properties_suffix)
        if stored is None or len(body) > max_body or not text.isascii():
            return None
        wait = find_property(text, Property.WAIT_STORE_MSG_OK)
        waits = waits or wait is None or wait.lower() in ("true", "1")
        messages.append(
            MessageToStore(
                topic=batch.topic,
                queue_id=batch.queue_id,
                body=body,
                properties=stored,
                flag=flag,
                sys_flag=batch.sys_flag,
                born_timestamp=batch.born_timestamp,
                born_host=batch.born_host,
                store_host=batch.store_host,
                reconsume_times=batch.reconsume_times,
                prepared_transaction_offset=batch.prepared_transaction_offset,
            )
        )
    return messages, waits


def log_bytes(store: MessageStore) -> list[bytes]:
    """The CommitLog's files, with every record's store timestamp zeroed (the two stores put at
    different times)."""
    files = store.commit_log.files
    images = {mapped.start_offset: bytearray(mapped.buffer[: mapped.wrote_position]) for mapped in files.files}
    for offset, _ in store.commit_log.records(0):
        start = max(start for start in images if start <= offset)
        at = offset - start + rec.STORE_TIMESTAMP_AT
        images[start][at : at + 8] = bytes(8)
    return [bytes(images[start]) for start in sorted(images)]


@pytest.mark.parametrize("flush", list(FlushDiskType), ids=lambda flush: flush.value)  # mapped / staged writes
@settings(max_examples=60, deadline=None)
@given(batches=st.lists(ITEMS, min_size=1, max_size=4), max_body=st.sampled_from([50, 4096]))
def test_accepted_batches_are_stored_as_the_message_path_stores_them(
    flush: FlushDiskType, batches: list[list[BatchItem]], max_body: int
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        wire_config = small_config(Path(directory) / "wire", max_message_size=2048, flush_disk_type=flush)
        # the reference writes the other way (through the map / staged): all four paths give the same bytes
        other = FlushDiskType.ASYNC_FLUSH if flush is FlushDiskType.SYNC_FLUSH else FlushDiskType.SYNC_FLUSH
        objects_config = small_config(Path(directory) / "objects", max_message_size=2048, flush_disk_type=other)
        with MessageStore(wire_config) as wire, MessageStore(objects_config) as objects:
            for number, items in enumerate(batches):
                batch = BatchToStore(
                    topic="TopicA", queue_id=number % 2, items=encode_batch(items), properties_suffix=SUFFIX,
                    sys_flag=8 * (number % 2), born_timestamp=1_700_000_000_000 + number,  # odd ones: committed
                    born_host=bytes([127, 0, 0, 1, 0, 0, 4, 1]), store_host=bytes([10, 0, 0, 2, 0, 0, 42, 155]),
                    reconsume_times=number, prepared_transaction_offset=(number % 2) * (1 << 40) + number,
                )  # fmt: skip
                measured = wire.measure_batch(batch, max_body_size=max_body)
                expected = as_messages(batch, max_body)
                if expected is None:
                    assert measured is None
                    continue
                messages, waits = expected
                reference = objects.put_messages(messages)
                if measured is None:  # only records the per-message path refuses are left to it
                    assert not reference.ok
                    continue
                assert measured.wait_for_flush == waits
                assert measured.sizes.tolist() == reference.sizes
                result = wire.put_batch(measured)
                assert result.ok
                assert (result.physical_offsets, result.queue_offsets) == (
                    reference.physical_offsets,
                    reference.queue_offsets,
                )
            assert log_bytes(wire) == log_bytes(objects)


@pytest.mark.parametrize(
    ("texts", "waits"),
    [
        (["WAIT\x01false", "WAIT\x010"], False),
        (["WAIT\x01false", "TAGS\x01a"], True),  # no WAIT: the producer waits
        (["WAIT\x01FALSE\x02WAIT\x01", "WAIT\x01no"], False),  # an empty value does not count
        (["WAIT\x01true\x02WAIT\x01false"], False),  # the last value counts
        (["WAIT\x011"], True),
        (["WAIT\x01TRUE"], True),
        (["XWAIT\x01false"], True),  # not the WAIT property
        (["a\x01WAIT\x01false"], True),  # inside a value, not a name
    ],
)
def test_wait_flag(tmp_path: Path, texts: list[str], waits: bool) -> None:
    items = encode_batch([BatchItem(b"body", text) for text in texts])
    with MessageStore(small_config(tmp_path)) as store:
        measured = store.measure_batch(BatchToStore(topic="TopicA", queue_id=0, items=items, properties_suffix=SUFFIX))
        assert measured is not None
        assert measured.wait_for_flush is waits


def test_malformed_batches_are_left_to_the_decoder(tmp_path: Path) -> None:
    """Every cut of a good body is refused by the compiled measure when the decoder refuses it."""
    body = encode_batch([BatchItem(b"one", "TAGS\x01a"), BatchItem(b"two" * 20, "KEYS\x01k")])
    with MessageStore(small_config(tmp_path)) as store:
        for cut in range(1, len(body)):
            batch = BatchToStore(topic="TopicA", queue_id=0, items=body[:cut], properties_suffix=SUFFIX)
            try:
                decode_batch(body[:cut])
            except RemoteProtocolError:
                assert store.measure_batch(batch) is None
        corrupt = bytearray(body)
        corrupt[3] ^= 1  # the first item's total size no longer adds up
        assert (
            store.measure_batch(
                BatchToStore(topic="TopicA", queue_id=0, items=bytes(corrupt), properties_suffix=SUFFIX)
            )
            is None
        )


@settings(deadline=None)
@given(data=st.binary(max_size=2000), start=st.integers(0, 40))
def test_body_crc_matches_zlib(data: bytes, start: int) -> None:
    kernels = compiled_append.load()
    assert kernels is not None
    crc = compiled_append.crc32
    assert crc is not None
    array = np.frombuffer(data, dtype=np.uint8)
    start = min(start, len(data))
    assert crc(array, start, len(data)) == zlib.crc32(data[start:])


@pytest.mark.parametrize("flush", list(FlushDiskType), ids=lambda flush: flush.value)  # mapped / staged writes
def test_batches_rolling_across_files_are_stored_and_recovered(tmp_path: Path, flush: FlushDiskType) -> None:
    """A wire batch and a message batch, each larger than a CommitLog file, roll into the next files
    with an end-of-file filler, whichever way the records are written (through the map, or staged)."""
    config = small_config(tmp_path, flush_disk_type=flush, max_message_size=2048)
    bodies = [bytes([number]) * 300 for number in range(20)]  # about 7 KB: 4 KB files roll twice
    with MessageStore(config) as store:
        items = encode_batch([BatchItem(body, "TAGS\x01t") for body in bodies])
        measured = store.measure_batch(BatchToStore(topic="TopicA", queue_id=0, items=items, properties_suffix=""))
        assert measured is not None
        wire = store.put_batch(measured)
        plain = store.put_messages([message(body=body) for body in bodies])
        assert wire.ok and plain.ok
        offsets = wire.physical_offsets + plain.physical_offsets
        assert len({offset // config.mapped_file_size_commit_log for offset in offsets}) >= 4
        store.wait_flushed(plain)
    config.abort_path.touch()  # reopen through the crash path: every record and filler is checked
    with MessageStore(config) as store:
        assert store.recovery is not None and not store.recovery.damage
        store.dispatch_now()
        assert store.get_max_offset_in_queue("TopicA", 0) == 40
        stored = [store.lookup_message(offset) for offset in offsets]
        assert [record.body if record else None for record in stored] == bodies * 2


@pytest.mark.parametrize("flush", list(FlushDiskType), ids=lambda flush: flush.value)
def test_a_put_together_rolls_over_files_in_order(tmp_path: Path, flush: FlushDiskType) -> None:
    """``put_together`` makes the files its parts need before writing any: every part still starts in the
    file being written (a lone message of a known topic too, which takes the one-message append), each
    file ends with its filler, and the dispatcher and a restart find every record."""
    config = small_config(tmp_path / "store", max_message_size=2048, flush_disk_type=flush)
    items = encode_batch([BatchItem(bytes(600), "TAGS\x01t") for _ in range(12)])  # about two files
    with MessageStore(config) as store:
        for _ in range(2):  # the topic is known now, and the first file mostly full
            assert store.put_message(message(topic="Ops", body=bytes(1500))).ok
        batch = BatchToStore(topic="TopicB", queue_id=0, items=items, properties_suffix=SUFFIX)
        measured = store.measure_batch(batch)
        assert measured is not None
        result = store.put_together([message(topic="Ops", body=b"op")], [measured, measured])
        assert result.ok and len(result.physical_offsets) == 25
        assert result.physical_offsets[0] < 4096  # the lone message went into the file being written
        assert result.physical_offsets == sorted(result.physical_offsets)
        store.dispatch_now()
        assert (store.get_max_offset_in_queue("Ops", 0), store.get_max_offset_in_queue("TopicB", 0)) == (3, 24)
    with MessageStore(config) as store:
        found = [store.lookup_message(offset) for offset in result.physical_offsets]
        assert [record.topic for record in found if record] == ["Ops", *["TopicB"] * 24]
