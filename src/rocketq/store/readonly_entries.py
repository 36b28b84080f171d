"""Whether records read out of the CommitLog are the records their ConsumeQueue entries describe (size,
topic, queue id, queue offset): for records scanned (``first_mismatch``, which also says how they
differ) and for rows decoded into Arrow buffers (``rows_match_entries``, column by column). Used by
``rocketq.store.readonly``; a record that is sound but not its entry's is damage to a reader."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rocketq.common.record_arrow import NARROW, TOPIC, WIDE, FilledColumns
from rocketq.common.record_columns import (
    QUEUE_ID,
    QUEUE_OFFSET,
    TOPIC_AT,
    TOPIC_LENGTH,
    TOTAL_SIZE,
    RecordColumns,
    first_unexpected,
)


def first_mismatch(
    records: RecordColumns, topic: str, queue_id: int, sizes: np.ndarray, queue_offsets: np.ndarray
) -> tuple[int, str] | None:
    """The first record that is not the one its entry describes, and why (None when all are)."""
    index = first_unexpected(records, topic, queue_id, queue_offsets, sizes)
    if index is None:
        return None
    fields = records.fields
    at, length = int(fields[TOPIC_AT, index]), int(fields[TOPIC_LENGTH, index])
    found = bytes(records.data[at : at + length]).decode(errors="replace")
    return index, (
        f"it is topic {found!r}, queue {int(fields[QUEUE_ID, index])}, offset {int(fields[QUEUE_OFFSET, index])}, "
        f"{int(fields[TOTAL_SIZE, index])} bytes; its entry says {topic!r}, {queue_id}, {int(queue_offsets[index])}, "
        f"{int(sizes[index])} bytes"
    )


def rows_match_entries(
    filled: FilledColumns,
    parts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    topic: str,
    queue_id: int,
) -> bool:
    """Whether the rows ``fill_columns`` decoded from ``parts`` (data, positions, and the entries' sizes
    and queue offsets) are the records those entries describe: their total sizes (read at the
    positions), topic, queue id and queue offsets, compared column-wise (no loop per record)."""
    queue_offsets = np.concatenate([part[3] for part in parts]) if parts else np.zeros(0, dtype=np.int64)
    if filled.count != len(queue_offsets):
        return False
    for data, at, sizes, _ in parts:
        total = (
            (data[at].astype(np.int64) << 24)
            | (data[at + 1].astype(np.int64) << 16)
            | (data[at + 2].astype(np.int64) << 8)
            | data[at + 3].astype(np.int64)
        )
        if not np.array_equal(total, sizes):
            return False
    name = np.frombuffer(topic.encode(), dtype=np.uint8)
    topics, count = filled.values[TOPIC], filled.count
    return bool(
        np.array_equal(filled.wide[WIDE.index("queueOffset")], queue_offsets)
        and np.all(filled.narrow[NARROW.index("queueId")] == queue_id)
        and len(topics) == len(name) * count
        and np.array_equal(np.diff(filled.offsets[TOPIC]), np.full(count, len(name)))
        and np.array_equal(topics.reshape(count, len(name)), np.broadcast_to(name, (count, len(name))))
    )
