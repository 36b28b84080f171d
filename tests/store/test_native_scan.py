"""The compiled CommitLog scan against the pure-Python one: the same DispatchRequests for any records,
including the ones it leaves to Python (delay topic, non-ASCII tags) and across file rolls."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.common.message import SCHEDULE_TOPIC
from rocketq.common.record import SysFlag
from rocketq.store import MessageStore, MessageToStore, native_columns, native_scan
from rocketq.store.commit_log import CommitLog
from rocketq.store.results import DispatchRequest

from .conftest import small_config

pytestmark = pytest.mark.skipif(native_scan.load() is None, reason="numba is not installed")

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
    max_size=40,
)


def scan_all(commit_log: CommitLog, max_records: int) -> list[DispatchRequest]:
    found: list[DispatchRequest] = []
    offset = commit_log.min_offset
    while True:
        batch, after = commit_log.scan(offset, max_records)
        found.extend(batch)
        if after == offset:
            return found
        offset = after


@settings(max_examples=60, deadline=None)
@given(messages=MESSAGES, max_records=st.integers(1, 50))
def test_compiled_and_python_scans_agree(messages: list[MessageToStore], max_records: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        with MessageStore(small_config(root)) as store:  # 4 KiB CommitLog files: records roll over files
            for message in messages:
                assert store.put_message(message).ok
        compiled = CommitLog(small_config(root))
        python = CommitLog(small_config(root, native_scan=False))
        try:
            compiled.files.load()
            python.files.load()
            expected = scan_all(python, max_records)
            assert len(expected) == len(messages)
            assert scan_all(compiled, max_records) == expected
        finally:
            compiled.close()
            python.close()


def test_both_compiled_scans_load() -> None:
    assert native_scan.load() is not None and native_columns.load() is not None


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative path (index files by position: their names are times)."""
    found = {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}
    return found


@settings(max_examples=40, deadline=None)
@given(messages=MESSAGES)
def test_columnar_dispatch_writes_the_same_queues_and_index(messages: list[MessageToStore]) -> None:
    """Rebuilt through the compiled columnar dispatch, ConsumeQueues and IndexFiles are byte for byte
    the ones the Python dispatch wrote while the messages were put."""
    with tempfile.TemporaryDirectory() as directory:
        python_root, columnar_root = Path(directory) / "python", Path(directory) / "columnar"
        with MessageStore(small_config(python_root, native_scan=False)) as store:
            for message in messages:
                assert store.put_message(message).ok
        shutil.copytree(python_root / "commitlog", columnar_root / "commitlog")
        columnar_config = small_config(columnar_root, dispatch_columnar_min_bytes=0)
        with MessageStore(columnar_config) as store:  # start() rebuilds queues and index from the log
            assert store.stats().dispatched_offset == store.stats().commit_log_max_offset
        assert tree(columnar_root / "consumequeue") == tree(python_root / "consumequeue")
        python_index = sorted(tree(python_root / "index").values())
        columnar_index = sorted(tree(columnar_root / "index").values())
        assert columnar_index == python_index
