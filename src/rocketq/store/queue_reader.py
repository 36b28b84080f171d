"""Reading a ConsumeQueue range out of the CommitLog without copying (the pull path).

Each run of ConsumeQueue entries is parsed with numpy: the padding and tag filter, the byte budget and
the grouping of adjacent records are array operations, so the only per-record Python work left is one
view slice per run of adjacent records (one per record when queues interleave in the log).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import cast

import numpy as np

from rocketq.common.offsets import PhysicalOffset, QueueOffset
from rocketq.store.commit_log import CommitLog
from rocketq.store.consume_queue import PADDING_SIZE, ConsumeQueue
from rocketq.store.results import GetMessageResult, GetStatus

_ENTRY_DTYPE = np.dtype([("offset", ">i8"), ("size", ">i4"), ("tag", ">i8")])
assert _ENTRY_DTYPE.itemsize == 20


def read_queue(
    commit_log: CommitLog,
    queue: ConsumeQueue,
    offset: int,
    max_count: int,
    tags_codes: Collection[int] | None,
    max_bytes: int,
    result: GetMessageResult,
) -> None:
    """Fill ``result`` with up to ``max_count`` records of ``queue`` from ``offset`` (at most ``max_bytes``,
    but always at least one), as views into the CommitLog's mapped files: adjacent records become one
    view. Entries whose tag code is not in ``tags_codes`` are skipped but still advance the offset, as
    do entries whose CommitLog file was already deleted."""
    wanted = None if tags_codes is None else np.fromiter(tags_codes, dtype=np.int64, count=len(tags_codes))
    found_any_entry = removed = False
    queue_offsets: list[int] = []
    physical_offsets: list[int] = []
    total = 0
    cursor = offset
    while len(queue_offsets) < max_count and total < max_bytes:
        found = queue.entries(cursor, max_count - len(queue_offsets))
        if found is None:
            break
        cq_file, view = found
        try:
            entries = np.frombuffer(view, dtype=_ENTRY_DTYPE)
            positions = entries["offset"].astype(np.int64)  # copies: the views must go before the release
            sizes = entries["size"].astype(np.int64)
            keep = sizes != PADDING_SIZE
            if wanted is not None:
                keep &= np.isin(entries["tag"], wanted)
            del entries
        finally:
            view.release()
            cq_file.release()
        found_any_entry = True
        chunk_length = len(sizes)
        gone = keep & (positions < commit_log.min_offset)  # retention deleted their files
        if gone.any():
            removed = True
            keep &= ~gone
        taken = np.flatnonzero(keep)
        spent = total + np.cumsum(sizes[taken])
        over = spent > max_bytes
        if not queue_offsets and len(over):
            over[0] = False  # one record is always returned, however large
        stop = int(np.argmax(over)) if over.any() else len(taken)
        if stop < len(taken):  # out of budget: the entry that does not fit is where the next read starts
            consumed = int(taken[stop])
            taken = taken[:stop]
        else:
            consumed = chunk_length
        missing = _add_views(commit_log, positions[taken], sizes[taken], result)
        if missing is not None:  # a file deleted since min_offset was read: keep what came before it
            removed = True
            consumed, taken = int(taken[missing]) + 1, taken[:missing]
        queue_offsets.extend((taken + cursor).tolist())
        physical_offsets.extend(positions[taken].tolist())
        total += int(sizes[taken].sum())
        cursor += consumed
        if consumed < chunk_length:
            break
    result.queue_offsets.extend(cast(list[QueueOffset], queue_offsets))
    result.physical_offsets.extend(cast(list[PhysicalOffset], physical_offsets))
    result.message_count = len(queue_offsets)
    result.total_bytes = total
    result.next_begin_offset = QueueOffset(cursor)
    if queue_offsets:
        result.status = GetStatus.FOUND
    elif removed:
        result.status = GetStatus.MESSAGE_WAS_REMOVING
    elif not found_any_entry:
        result.status = GetStatus.OFFSET_FOUND_NULL


def _add_views(commit_log: CommitLog, positions: np.ndarray, sizes: np.ndarray, result: GetMessageResult) -> int | None:
    """Append views of the records at ``positions`` (CommitLog offsets, in log order) to ``result``, one per
    run of adjacent records within a file; returns the index of the first record whose file could not be
    pinned (None when all were added; the records before it are in ``result``)."""
    count = len(positions)
    first = 0
    while first < count:
        mapped = commit_log.pin(int(positions[first]))
        if mapped is None:
            return first
        result._releases.append(mapped)
        rest = positions[first:]
        inside = (rest >= mapped.start_offset) & (rest < mapped.end_offset)
        end = count if inside.all() else first + int(np.argmin(inside))  # the records in this file
        local = positions[first:end] - mapped.start_offset
        ends = local + sizes[first:end]
        starts_run = np.flatnonzero(local[1:] != ends[:-1]) + 1  # a record not right after the previous
        run_starts = [0, *starts_run.tolist()]
        run_ends = [*starts_run.tolist(), end - first]
        buffer = mapped.buffer
        local_starts, local_ends = local.tolist(), ends.tolist()
        result.buffers.extend(
            [buffer[local_starts[a] : local_ends[b - 1]] for a, b in zip(run_starts, run_ends, strict=True)]
        )
        first = end
    return None
