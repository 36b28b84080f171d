"""Reading a queue through a ``MessageFilter`` that needs more than its tag codes (the pull path of
SQL92 subscriptions, and of tag subscriptions on queues whose entries point into a ConsumeQueueExt).

Per run of ConsumeQueue entries, in order: padding is dropped; entries holding an ext address get
their real tag code (and bit map) from the ConsumeQueueExt; the tag filter applies; the bit map rules
out messages a registered subscription cannot match (``BitMapFilter``): these array steps touch no
message. The entries left are then read from the CommitLog one by one, in queue order, and their
properties given to the filter's predicate, until ``max_count`` messages or ``max_bytes`` are kept.

As RocketMQ does, one read examines at most ``max(FILTER_SCAN_ENTRIES, max_count)`` entries: a
selector that matches little answers "nothing matched, go on from here" rather than holding the
broker's loop for the whole queue.
"""

from __future__ import annotations

import numpy as np

from rocketq.common.message import decode_properties
from rocketq.store.commit_log import CommitLog
from rocketq.store.consume_queue import ENTRY_DTYPE, PADDING_SIZE, ConsumeQueue
from rocketq.store.consume_queue_ext import MAX_ADDR
from rocketq.store.message_filter import BitMapFilter, MessageFilter
from rocketq.store.record_views import PropertiesReader, add_views
from rocketq.store.results import GetMessageResult

FILTER_SCAN_ENTRIES = 800
"""Entries one filtered read examines at most (RocketMQ: 16,000 bytes of ConsumeQueue)."""
FIRST_CHUNK_ENTRIES = 64
"""Entries of the first run a read takes (at least 4 per wanted message), doubling after: array work on
entries past the last one a read keeps is wasted."""


def read_filtered(
    commit_log: CommitLog,
    queue: ConsumeQueue,
    offset: int,
    max_count: int,
    message_filter: MessageFilter,
    max_bytes: int,
    result: GetMessageResult,
) -> None:
    """``read_queue`` (``rocketq.store.queue_reader``) through ``message_filter``: fill ``result`` with
    up to ``max_count`` matching records (at most ``max_bytes``, but at least one) from ``offset``."""
    limit = max(FILTER_SCAN_ENTRIES, max_count)
    wanted = None
    if message_filter.tags_codes is not None:
        wanted = np.fromiter(message_filter.tags_codes, dtype=np.int64, count=len(message_filter.tags_codes))
    properties = PropertiesReader(commit_log) if message_filter.reads_records else None
    queue_offsets: list[int] = []
    positions_kept: list[int] = []
    sizes_kept: list[int] = []
    total = scanned = 0
    found_any_entry = removed = full = False
    cursor = offset
    chunk = max(FIRST_CHUNK_ENTRIES, 4 * max_count)
    try:
        while not full and scanned < limit:
            found = queue.entries(cursor, min(chunk, limit - scanned))
            chunk *= 2  # a selector that matches little: read on in larger runs
            if found is None:
                break
            cq_file, view = found
            try:
                entries = np.frombuffer(view, dtype=ENTRY_DTYPE)
                positions = entries["offset"].astype(np.int64)
                sizes = entries["size"].astype(np.int64)
                tags = entries["tag"].astype(np.int64)
                del entries
            finally:
                view.release()
                cq_file.release()
            found_any_entry = True
            candidates = _candidates(commit_log, queue, positions, sizes, tags, wanted, message_filter.bit_map)
            removed |= candidates.removed
            consumed = len(sizes)
            for index in candidates.indexes.tolist():
                position, size = int(positions[index]), int(sizes[index])
                if properties is not None:
                    text = properties.read(position)
                    if text is None:  # retention deleted its file meanwhile
                        removed = True
                        continue
                    assert message_filter.properties_match is not None
                    if not message_filter.properties_match(decode_properties(text)):
                        continue
                if queue_offsets and total + size > max_bytes:
                    consumed, full = index, True  # out of budget: the next read starts here
                    break
                queue_offsets.append(cursor + index)
                positions_kept.append(position)
                sizes_kept.append(size)
                total += size
                if len(queue_offsets) == max_count or total >= max_bytes:
                    consumed, full = index + 1, True
                    break
            cursor += consumed
            scanned += consumed
    finally:
        if properties is not None:
            properties.close()
    missing = add_views(
        commit_log, np.array(positions_kept, dtype=np.int64), np.array(sizes_kept, dtype=np.int64), result
    )
    if missing is not None:  # a file deleted since the filter read it: keep what came before it
        removed = True
        cursor = queue_offsets[missing] + 1
        del queue_offsets[missing:], positions_kept[missing:], sizes_kept[missing:]
        total = sum(sizes_kept)
    result.settle(queue_offsets, positions_kept, total, cursor, removed=removed, found_any_entry=found_any_entry)


class _Candidates:
    __slots__ = ("indexes", "removed")

    def __init__(self, indexes: np.ndarray, removed: bool) -> None:
        self.indexes = indexes
        self.removed = removed


def _candidates(
    commit_log: CommitLog,
    queue: ConsumeQueue,
    positions: np.ndarray,
    sizes: np.ndarray,
    tags: np.ndarray,
    wanted: np.ndarray | None,
    bit_map: BitMapFilter | None,
) -> _Candidates:
    """The entries (indexes into the run) that the tag codes and bit maps leave, in order."""
    keep = sizes != PADDING_SIZE
    extended = tags <= MAX_ADDR
    ext = queue.ext
    if ext is not None and extended.any():
        picked = np.flatnonzero(extended)
        bit_map_bytes = bit_map.bit_map_bytes if bit_map is not None else 0
        byte_masks = bit_map.byte_masks if bit_map is not None else ()
        map_bytes = [index for index, _ in byte_masks]
        found, real_tags, bytes_ = ext.units(tags[picked], bit_map_bytes, map_bytes, tags=wanted is not None)
        if wanted is not None:  # a unit that cannot be read hides the tag: the client filters by text
            keep[picked] &= ~found | np.isin(real_tags, wanted)
        if bit_map is not None:
            # only a message dispatched since the subscription was registered has its bits for sure
            live = found & (positions[picked] >= bit_map.born_offset)
            hit = np.ones(len(picked), dtype=bool)
            for column, (_, mask) in enumerate(byte_masks):
                hit &= (bytes_[:, column] & mask) != 0
            keep[picked] &= ~live | hit
        if wanted is not None:
            keep &= extended | np.isin(tags, wanted)
    elif wanted is not None:
        keep &= np.isin(tags, wanted)
    gone = keep & (positions < commit_log.min_offset)  # retention deleted their files
    removed = bool(gone.any())
    if removed:
        keep &= ~gone
    return _Candidates(np.flatnonzero(keep), removed)
