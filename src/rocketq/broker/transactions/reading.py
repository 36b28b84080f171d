"""Reading the transaction topics back from the store: half messages by half-queue offset, op messages
by op-queue offset, and the records a commit op was followed by. Blocking reads of mapped files (no
disk waits but page faults): called on the broker's loop for a few records, in a thread for many."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from rocketq.common.message import HALF_TOPIC, OP_TOPIC
from rocketq.common.record import StoredRecord, decode_record
from rocketq.store import GetStatus, MessageStore

from .half import HALF_QUEUE_ID, OP_QUEUE_ID

log = logging.getLogger(__name__)

READ_CHUNK = 1024  # messages per store read
_READ_MAX_BYTES = 256 * 1024 * 1024


def half_queue_bounds(store: MessageStore) -> tuple[int, int]:
    return store.get_min_offset_in_queue(HALF_TOPIC, HALF_QUEUE_ID), store.get_max_offset_in_queue(
        HALF_TOPIC, HALF_QUEUE_ID
    )


def op_queue_bounds(store: MessageStore) -> tuple[int, int]:
    return store.get_min_offset_in_queue(OP_TOPIC, OP_QUEUE_ID), store.get_max_offset_in_queue(OP_TOPIC, OP_QUEUE_ID)


def read_queue(store: MessageStore, topic: str, start: int, end: int) -> Iterator[tuple[int, StoredRecord]]:
    """(queue offset, record) of queue 0 of ``topic`` from ``start`` to ``end``, in order, read in
    chunks; records gone from the CommitLog (deleted files) are skipped."""
    offset = start
    while offset < end:
        result = store.get_messages(topic, 0, offset, min(READ_CHUNK, end - offset), max_bytes=_READ_MAX_BYTES)
        try:
            if result.status is not GetStatus.FOUND or not result.message_count:
                if result.next_begin_offset <= offset:
                    return
                offset = result.next_begin_offset
                continue
            offsets = iter(result.queue_offsets)
            for buffer in result.buffers:
                position = 0
                while position < len(buffer):
                    record = decode_record(buffer, position)
                    yield next(offsets), record
                    position += record.total_size
            offset = result.next_begin_offset
        finally:
            result.release()


def read_halves(store: MessageStore, start: int, end: int) -> list[StoredRecord]:
    """The half messages at half-queue offsets ``[start, end)``."""
    return [record for _, record in read_queue(store, HALF_TOPIC, start, end)]


def records_after(store: MessageStore, offset: int, count: int) -> list[StoredRecord]:
    """Up to ``count`` records that follow, in the CommitLog, the record at ``offset`` (an op and the
    messages stored with it in one put), skipping end-of-file fillers; fewer when the log ends first."""
    first = store.lookup_message(offset)
    if first is None:
        return []
    position = offset + first.total_size
    file_size = store.config.mapped_file_size_commit_log
    end = store.commit_log.max_offset
    found: list[StoredRecord] = []
    while len(found) < count and position < end:
        record = store.lookup_message(position)
        if record is None:  # an end-of-file filler: the put went on at the start of the next file
            following = (position // file_size + 1) * file_size
            if following >= end or position % file_size == 0:
                break
            position = following
            continue
        found.append(record)
        position += record.total_size
    return found
