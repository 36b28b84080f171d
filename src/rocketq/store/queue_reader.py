"""Reading a ConsumeQueue range out of the CommitLog without copying (the pull path).

A long run of ConsumeQueue entries is parsed with numpy: the padding and tag filter, the byte budget and
the grouping of adjacent records are array operations, so the only per-record Python work left is one
view slice per run of adjacent records (one per record when queues interleave in the log). A short run
(``SCALAR_MAX_ENTRIES``: a caught-up consumer's one or two messages, or a default pull of 32) is
parsed entry by entry with the same rules, because numpy's fixed cost per call would be most of the
read.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from rocketq.common.offsets import QueueOffset
from rocketq.store.commit_log import CommitLog
from rocketq.store.consume_queue import ENTRY, ENTRY_DTYPE, PADDING_SIZE, ConsumeQueue
from rocketq.store.filtered_read import read_filtered
from rocketq.store.message_filter import MessageFilter
from rocketq.store.record_views import add_views
from rocketq.store.results import GetMessageResult, GetStatus

SCALAR_MAX_ENTRIES = 32
"""Runs of at most this many entries are read entry by entry instead of with numpy: RocketMQ's default
pull of 32 adjacent records took 25-27 us this way against 37-49 us with numpy; the two meet at about
64 (``docs/benchmark-rounds.md#reads-of-32-entries-without-numpy``)."""


def get_from_queue(
    commit_log: CommitLog,
    queue: ConsumeQueue,
    offset: int,
    max_count: int,
    tags_codes: Collection[int] | None,
    max_bytes: int,
    message_filter: MessageFilter | None = None,
) -> GetMessageResult:
    """``MessageStore.get_messages`` for an existing queue: the status of ``offset`` against the queue's
    bounds (and where the next read should start), then the records when it is inside them. A
    ``message_filter`` (SQL92), or a tag filter on a queue with a ConsumeQueueExt (whose entries may
    hold ext addresses for tag codes), reads through ``rocketq.store.filtered_read``."""
    low, high = queue.min_offset, queue.max_offset
    status = None
    next_offset = offset
    if high == 0:
        status, next_offset = GetStatus.NO_MESSAGE_IN_QUEUE, 0
    elif offset < low:
        status, next_offset = GetStatus.OFFSET_TOO_SMALL, low
    elif offset == high:
        status = GetStatus.OFFSET_OVERFLOW_ONE
    elif offset > high:
        status, next_offset = GetStatus.OFFSET_OVERFLOW_BADLY, high
    result = GetMessageResult(
        status=status or GetStatus.NO_MATCHED_MESSAGE,
        next_begin_offset=QueueOffset(next_offset),
        min_offset=QueueOffset(low),
        max_offset=QueueOffset(high),
    )
    if status is None:
        count = min(max_count, high - offset)
        if message_filter is None and tags_codes is not None and queue.ext is not None:
            message_filter = MessageFilter(tags_codes=frozenset(tags_codes))
        if message_filter is not None:
            read_filtered(commit_log, queue, offset, count, message_filter, max_bytes, result)
        else:
            read_queue(commit_log, queue, offset, count, tags_codes, max_bytes, result)
    return result


def read_arrived(
    commit_log: CommitLog, queue: ConsumeQueue, queue_offset: int, physical_offset: int, size: int
) -> tuple[memoryview, int, int] | None:
    """What ``get_from_queue`` finds at ``queue_offset`` when that is ``queue``'s last entry and the
    record its entry points at is the one at ``physical_offset`` (``size`` bytes: a lone put's record,
    as its dispatch just wrote the entry): the record's view and the queue's min and max offsets, for
    a reader without a tag filter or one the record passes. None in any other state (more entries after
    it, a queue with a ConsumeQueueExt, the record's file gone): ``get_from_queue`` reads it then.
    ``tests/store/test_read_arrived.py`` holds it equal to ``get_from_queue`` (hypothesis)."""
    low, high = queue.min_offset, queue.max_offset
    if high != queue_offset + 1 or queue_offset < low or queue.ext is not None:
        return None
    if physical_offset < commit_log.min_offset:  # retention deleted its file
        return None
    mapped = commit_log.pin(physical_offset)
    if mapped is None:
        return None
    start = physical_offset - mapped.start_offset
    # (a view keeps its part of the map readable once the file is released: see take_buffers)
    view = mapped.buffer[start : start + size] if physical_offset + size <= mapped.end_offset else None
    mapped.release()
    return None if view is None else (view, low, high)


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
    wanted_set = None if tags_codes is None else frozenset(tags_codes)
    wanted = None  # the numpy form of ``wanted_set``, made when a long run needs it
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
        if len(view) <= SCALAR_MAX_ENTRIES * ENTRY_DTYPE.itemsize:
            try:
                entries_list = list(ENTRY.iter_unpack(view))
            finally:
                view.release()
                cq_file.release()
            found_any_entry = True
            chunk = _ScalarChunk(commit_log, entries_list, wanted_set, max_bytes - total, not queue_offsets)
            removed |= chunk.removed
            kept, consumed = len(chunk.indexes), chunk.consumed
            missing = _add_views_scalar(commit_log, chunk.positions, chunk.sizes, result)
            if missing is not None:  # a file deleted since min_offset was read: keep what came before it
                removed = True
                kept, consumed = missing, chunk.indexes[missing] + 1
            queue_offsets.extend([cursor + index for index in chunk.indexes[:kept]])
            physical_offsets.extend(chunk.positions[:kept])
            total += sum(chunk.sizes[:kept])
            cursor += consumed
            if consumed < len(entries_list):
                break
            continue
        try:
            entries = np.frombuffer(view, dtype=ENTRY_DTYPE)
            positions = entries["offset"].astype(np.int64)  # copies: the views must go before the release
            sizes = entries["size"].astype(np.int64)
            keep = sizes != PADDING_SIZE
            if wanted_set is not None:
                if wanted is None:
                    wanted = np.fromiter(wanted_set, dtype=np.int64, count=len(wanted_set))
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
        missing = add_views(commit_log, positions[taken], sizes[taken], result)
        if missing is not None:  # a file deleted since min_offset was read: keep what came before it
            removed = True
            consumed, taken = int(taken[missing]) + 1, taken[:missing]
        queue_offsets.extend((taken + cursor).tolist())
        physical_offsets.extend(positions[taken].tolist())
        total += int(sizes[taken].sum())
        cursor += consumed
        if consumed < chunk_length:
            break
    result.settle(queue_offsets, physical_offsets, total, cursor, removed=removed, found_any_entry=found_any_entry)


class _ScalarChunk:
    """A short run of ConsumeQueue entries filtered and cut to the byte budget, one entry at a time
    (the same rules as the numpy path)."""

    __slots__ = ("consumed", "indexes", "positions", "removed", "sizes")

    def __init__(
        self,
        commit_log: CommitLog,
        entries: list[tuple[int, int, int]],
        wanted: frozenset[int] | None,
        budget: int,
        first_read: bool,
    ) -> None:
        self.indexes: list[int] = []
        self.positions: list[int] = []
        self.sizes: list[int] = []
        self.removed = False
        self.consumed = len(entries)
        min_offset = commit_log.min_offset
        spent = 0
        for index, (position, size, tag) in enumerate(entries):
            if size == PADDING_SIZE or (wanted is not None and tag not in wanted):
                continue
            if position < min_offset:  # retention deleted its file
                self.removed = True
                continue
            if spent + size > budget and not (first_read and not self.indexes):
                self.consumed = index  # out of budget: the next read starts at this entry
                break
            self.indexes.append(index)
            self.positions.append(position)
            self.sizes.append(size)
            spent += size


def _add_views_scalar(
    commit_log: CommitLog, positions: list[int], sizes: list[int], result: GetMessageResult
) -> int | None:
    """``add_views`` for a few records, one at a time."""
    mapped = None
    run_start = run_end = 0
    for index, (position, size) in enumerate(zip(positions, sizes, strict=True)):
        if mapped is not None and position == mapped.start_offset + run_end and position + size <= mapped.end_offset:
            run_end += size  # right after the previous record in the same file: same view
            continue
        if mapped is not None:
            result.buffers.append(mapped.buffer[run_start:run_end])
        if mapped is None or not mapped.start_offset <= position < mapped.end_offset:
            mapped = commit_log.pin(position)
            if mapped is None:
                return index
            result._releases.append(mapped)
        run_start = position - mapped.start_offset
        run_end = run_start + size
    if mapped is not None:
        result.buffers.append(mapped.buffer[run_start:run_end])
    return None
