"""The compiled dispatch against the Python one: byte-identical ConsumeQueues and IndexFiles for any
records, including the ones it leaves to Python (delay topic, non-ASCII names) and across file rolls."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.common.message import SCHEDULE_TOPIC
from rocketq.common.record import SysFlag
from rocketq.store import MessageStore, MessageToStore, compiled_dispatch
from rocketq.store.index_file import HEADER_SIZE, SLOT, SLOT_SIZE, IndexFile, key_hash

from .conftest import small_config

pytestmark = pytest.mark.skipif(compiled_dispatch.load() is None, reason="numba is not installed")

TOPICS = ["TopicA", "t", "主题", SCHEDULE_TOPIC, "%RETRY%group"]
VALUES = st.sampled_from(["", "a", "TagA", "k1 k2", "k1  k2", "标签", "x" * 40, "7F0000010001B4AAC2B13F0F7D000001"])
NAMES = st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "WAIT", "TAGSX", "XTAGS", "a"])

# A properties text as it may be on disk: duplicates, empty values, a trailing separator, a stray
# name without a value (separators are never inside names or values).
PROPERTY_TEXTS = st.builds(
    lambda pairs, trailing, stray: (
        "\x02".join([f"{name}\x01{value}" for name, value in pairs] + (["orphan"] if stray else []))
        + ("\x02" if trailing else "")
    ),
    st.lists(st.tuples(NAMES, VALUES), max_size=6),
    st.booleans(),
    st.booleans(),
)

PLAIN_VALUES = st.sampled_from(["TagA", "TagB", "k1 k2", "k3", "7F0000010001B4AAC2B13F0F7D000001", ""])
PLAIN_MESSAGES = st.lists(
    st.builds(
        lambda topic, queue_id, tags, keys, uniq, sys_flag: MessageToStore(
            topic=topic,
            queue_id=queue_id,
            body=b"plain",
            properties=f"TAGS\x01{tags}\x02KEYS\x01{keys}\x02UNIQ_KEY\x01{uniq}",
            sys_flag=sys_flag,
        ),
        st.sampled_from(["TopicA", "t", "%RETRY%group"]),
        st.integers(0, 3),
        PLAIN_VALUES,
        PLAIN_VALUES,
        PLAIN_VALUES,
        st.sampled_from([0, int(SysFlag.TRANSACTION_PREPARED_TYPE), int(SysFlag.TRANSACTION_ROLLBACK_TYPE)]),
    ),
    min_size=20,
    max_size=120,
)

MESSAGES = st.lists(
    st.builds(
        lambda topic, queue_id, body, properties, sys_flag: MessageToStore(
            topic=topic, queue_id=queue_id, body=body, properties=properties, sys_flag=sys_flag
        ),
        st.sampled_from(TOPICS),
        st.integers(0, 3),
        st.binary(min_size=1, max_size=300),
        PROPERTY_TEXTS,
        st.sampled_from([0, int(SysFlag.COMPRESSED), int(SysFlag.TRANSACTION_PREPARED_TYPE)]),
    ),
    min_size=1,
    max_size=60,
)


def test_the_compiled_scan_loads() -> None:
    assert compiled_dispatch.load() is not None


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative path (index files by position: their names are times)."""
    found = {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}
    return found


def assert_same_files(messages: list[MessageToStore], file_size: int) -> None:
    """Rebuilt through the compiled dispatch, ConsumeQueues and IndexFiles are byte for byte the ones
    the Python dispatch wrote while the messages were put."""
    with tempfile.TemporaryDirectory() as directory:
        python_root, compiled_root = Path(directory) / "python", Path(directory) / "compiled"
        python_config = small_config(python_root, compiled_dispatch=False, mapped_file_size_commit_log=file_size)
        with MessageStore(python_config) as store:
            for message in messages:
                assert store.put_message(message).ok
        shutil.copytree(python_root / "commitlog", compiled_root / "commitlog")
        compiled_config = small_config(
            compiled_root, dispatch_columnar_min_bytes=0, mapped_file_size_commit_log=file_size
        )
        with MessageStore(compiled_config) as store:  # start() rebuilds queues and index from the log
            assert store.stats().dispatched_offset == store.stats().commit_log_max_offset
        assert tree(compiled_root / "consumequeue") == tree(python_root / "consumequeue")
        assert sorted(tree(compiled_root / "index").values()) == sorted(tree(python_root / "index").values())


@settings(max_examples=40, deadline=None)
@given(messages=MESSAGES)
def test_any_records_rebuild_the_same_files(messages: list[MessageToStore]) -> None:
    """Records of every kind, many left to the Python scan (4 KiB CommitLog files: short batches,
    applied row by row)."""
    assert_same_files(messages, 4096)


@settings(max_examples=25, deadline=None)
@given(messages=PLAIN_MESSAGES)
def test_long_batches_rebuild_the_same_files(messages: list[MessageToStore]) -> None:
    """Plain records in one 64 KiB CommitLog file: batches long enough to be applied with numpy."""
    assert_same_files(messages, 64 * 1024)


@settings(max_examples=40, deadline=None)
@given(
    batch=st.lists(st.sampled_from(["T#a", "T#b", "T#c", "T#d", "U#a", "U#b"]), min_size=9, max_size=39),
    torn=st.lists(st.tuples(st.integers(0, 4), st.integers(-3, 60)), max_size=4),
)
def test_compiled_index_writes_the_same_file(batch: list[str], torn: list[tuple[int, int]]) -> None:
    """The compiled index writer writes the bytes the numpy path writes for the same call, also over
    slot values a torn write left behind (numbers past the file's entry count), and the bytes of one
    scalar put per entry."""
    writer = compiled_dispatch.index_writer()
    assert writer is not None
    hashes = [key_hash(k) for k in batch]
    offsets = list(range(100, 100 + len(batch)))
    stamps = [1_000_000 + 700 * o for o in offsets]
    with tempfile.TemporaryDirectory() as directory:
        files = [
            IndexFile(Path(directory) / f"2024010100000000{n}", slot_count=5, max_entries=40, create=True)
            for n in range(3)
        ]
        for index in files:
            for slot, value in torn:  # what a crash between an entry and the header update leaves
                SLOT.pack_into(index.mapped.buffer, HEADER_SIZE + slot * SLOT_SIZE, value)
        compiled, vectorised, scalar = files
        assert compiled.put_hashed(hashes, offsets, stamps, writer) == len(batch)
        assert vectorised.put_hashed(hashes, offsets, stamps) == len(batch)
        for i in range(len(batch)):
            assert scalar.put_hashed(hashes[i : i + 1], offsets[i : i + 1], stamps[i : i + 1]) == 1
        assert bytes(compiled.mapped.buffer) == bytes(vectorised.mapped.buffer)
        assert compiled.hash_slot_count == vectorised.hash_slot_count
        if not torn:  # one entry per call sees a torn value turn valid once that many entries exist
            assert bytes(compiled.mapped.buffer) == bytes(scalar.mapped.buffer)
        for index in files:
            index.close()
