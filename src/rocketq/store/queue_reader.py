"""Reading a ConsumeQueue range out of the CommitLog without copying (the pull path)."""

from __future__ import annotations

from collections.abc import Collection
from typing import cast

from rocketq.common.offsets import PhysicalOffset, QueueOffset
from rocketq.store.commit_log import CommitLog
from rocketq.store.consume_queue import ENTRY, PADDING_SIZE, ConsumeQueue
from rocketq.store.mapped_file import MappedFile
from rocketq.store.results import GetMessageResult, GetStatus


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
    view. Entries whose tag code is not in ``tags_codes`` are skipped but still advance the offset."""
    found_any_entry = False
    removed = False
    current: MappedFile | None = None
    current_start = current_end = -1  # the CommitLog range of ``current``
    run_start = run_end = -1  # the pending run of adjacent records, as file positions
    buffers = result.buffers
    queue_offsets: list[int] = []  # plain ints in the loop: NewType calls cost a function call each
    physical_offsets: list[int] = []
    total = 0
    cursor = offset
    while len(queue_offsets) < max_count and total < max_bytes:
        found = queue.entries(cursor, max_count - len(queue_offsets))
        if found is None:
            break
        cq_file, view = found
        try:
            for commit_offset, size, tags_code in ENTRY.iter_unpack(view):
                found_any_entry = True
                if size == PADDING_SIZE or (tags_codes is not None and tags_code not in tags_codes):
                    cursor += 1
                    continue
                if total + size > max_bytes and queue_offsets:
                    break
                if not current_start <= commit_offset < current_end:
                    if current is not None and run_start >= 0:
                        buffers.append(current.buffer[run_start:run_end])
                    run_start = -1
                    current = commit_log.pin(commit_offset)
                    if current is None:
                        removed = True
                        current_start = current_end = -1
                        cursor += 1
                        continue
                    result._releases.append(current)
                    current_start, current_end = current.start_offset, current.end_offset
                position = commit_offset - current_start
                if position == run_end:
                    run_end += size
                else:
                    if run_start >= 0:
                        assert current is not None  # a run is only open inside a pinned file
                        buffers.append(current.buffer[run_start:run_end])
                    run_start, run_end = position, position + size
                queue_offsets.append(cursor)
                physical_offsets.append(commit_offset)
                total += size
                cursor += 1
            else:
                continue
            break
        finally:
            view.release()
            cq_file.release()
    if current is not None and run_start >= 0:
        buffers.append(current.buffer[run_start:run_end])
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
