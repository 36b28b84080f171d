"""The compiled CommitLog scan against the pure-Python one: the same DispatchRequests for any records,
including the ones it leaves to Python (delay topic, non-ASCII tags) and across file rolls."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.common.message import SCHEDULE_TOPIC
from rocketq.common.record import SysFlag
from rocketq.store import MessageStore, MessageToStore, native_scan
from rocketq.store.commit_log import CommitLog
from rocketq.store.results import DispatchRequest

from .conftest import small_config

pytestmark = pytest.mark.skipif(native_scan.scan_records is None, reason="numba is not installed")

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


def test_warm_up_compiles_the_scan() -> None:
    assert native_scan.warm_up() is True
