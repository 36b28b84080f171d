"""Live puts are dispatched from what the put knew (``CommitLog.descriptions``), everything else from a scan
of the log: the two must be the same dispatch. A master store takes puts; a second store takes the
master's bytes as a slave does (``append_replica``), which it can only dispatch by scanning them. After
every put both told their arrival listeners the same things, and in the end they hold byte-identical
ConsumeQueues, ext units and IndexFiles; a third store rebuilt from the log at start agrees too."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.common.message import HALF_TOPIC, OP_TOPIC, SCHEDULE_TOPIC
from rocketq.common.record import SysFlag
from rocketq.store import MessageStore, MessageToStore
from rocketq.store.ext_writer import BitMapOf

from .conftest import small_config

TOPICS = ["TopicA", "t", "主题", SCHEDULE_TOPIC, HALF_TOPIC, OP_TOPIC, "%RETRY%group"]
VALUES = st.sampled_from(["", "a", "TagA", "k1 k2", "k1  k2", "标签", "x" * 40, "7F0000010001B4AAC2B13F0F7D000001"])
NAMES = st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "WAIT", "TAGSX", "a"])
DELAYS = st.sampled_from(["", "DELAY\x011", "DELAY\x013", "DELAY\x0199", "DELAY\x01x"])
PROPERTY_TEXTS = st.builds(
    lambda pairs, delay, trailing: (
        "\x02".join([f"{name}\x01{value}" for name, value in pairs] + ([delay] if delay else []))
        + ("\x02" if trailing else "")
    ),
    st.lists(st.tuples(NAMES, VALUES), max_size=5),
    DELAYS,
    st.booleans(),
)
TRANSACTION_FLAGS = st.sampled_from(
    [
        0,
        int(SysFlag.COMPRESSED),
        int(SysFlag.TRANSACTION_PREPARED_TYPE),
        int(SysFlag.TRANSACTION_COMMIT_TYPE),
        int(SysFlag.TRANSACTION_ROLLBACK_TYPE),
    ]
)
MESSAGES = st.builds(
    lambda topic, queue_id, body, properties, sys_flag: MessageToStore(
        topic=topic, queue_id=queue_id, body=body, properties=properties, sys_flag=sys_flag
    ),
    st.sampled_from(TOPICS),
    st.integers(0, 3),
    st.binary(min_size=1, max_size=300),
    PROPERTY_TEXTS,
    TRANSACTION_FLAGS,
)
PUTS = st.lists(st.lists(MESSAGES, min_size=1, max_size=6), min_size=1, max_size=40)
"""Single puts and batches (``put_messages`` of several), in 4 KiB CommitLog files: many file rolls."""

Arrival = tuple[str, int, int, int]


class Bits:
    """A filter bit map for TopicA's records (so ext units are written), from their properties."""

    def for_batch(self, first_offset: int) -> Mapping[str, BitMapOf]:
        return {"TopicA": lambda properties: bytes([len(properties) % 256, len(properties.get("TAGS", ""))])}


def open_store(root: Path, arrivals: list[Arrival], **overrides: object) -> MessageStore:
    config = small_config(
        root,
        enable_consume_queue_ext=True,
        dispatch_interval_ms=3_600_000,  # every dispatch inline, so arrivals are seen put by put
        dispatch_inline_max_records=1_000,
        **overrides,
    )
    store = MessageStore(config)
    store.add_arrival_listener(lambda *arrival: arrivals.append(arrival[:4]))  # (the lone record aside)
    store.set_bit_map_calculator(Bits())
    return store.start()


def copy_new_bytes(source: MessageStore, target: MessageStore) -> None:
    """What a slave does: append the source's bytes from the target's end, one file at a time."""
    while data := source.read_commit_log(target.commit_log.max_offset, source.config.mapped_file_size_commit_log):
        target.append_replica(target.commit_log.max_offset, data)


def tree(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def logic_files(root: Path) -> tuple[dict[str, bytes], dict[str, bytes], list[bytes]]:
    """ConsumeQueues and ext units by path, IndexFiles by content (their names are creation times)."""
    return tree(root / "consumequeue"), tree(root / "consumequeue_ext"), sorted(tree(root / "index").values())


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(puts=PUTS)
def test_puts_dispatch_as_the_scan_of_their_bytes(puts: list[list[MessageToStore]]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        roots = [Path(scratch) / name for name in ("live", "scanned", "rebuilt")]
        live_arrivals: list[Arrival] = []
        scanned_arrivals: list[Arrival] = []
        live = open_store(roots[0], live_arrivals)
        scanned = open_store(roots[1], scanned_arrivals, compiled_dispatch=False)
        try:
            for messages in puts:
                result = live.put_messages(messages)
                assert result.ok
                live_seen = len(live_arrivals)
                copy_new_bytes(live, scanned)
                assert scanned.stats().dispatched_offset == live.stats().dispatched_offset == result.end_offset
                assert scanned_arrivals == live_arrivals[:live_seen]
                del live_arrivals[:], scanned_arrivals[:]
        finally:
            live.close()
            scanned.close()
        assert logic_files(roots[1]) == logic_files(roots[0])
        shutil.copytree(roots[0] / "commitlog", roots[2] / "commitlog")
        rebuilt = open_store(roots[2], [])  # start() dispatches the whole log by scanning it
        rebuilt.close()
        assert logic_files(roots[2]) == logic_files(roots[0])
