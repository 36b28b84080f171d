"""What a slave's store does to its CommitLog beside puts: append a master's bytes as they are
(``append_replica_bytes``, for ``MessageStore.append_replica``), and cut a log that diverged from its
master's back to an offset, crash safe (``MessageStore.truncate_to``).

A cut The cut is first recorded in the store
folder's ``truncate`` file (``record_cut``); the store then closes and starts again, and a start that
finds that file cuts the loaded files there (``cut_loaded_files``) before it recovers, and makes the
cut durable before it forgets it (``finish_cut``). A crash anywhere in between leaves a store that the
next start cuts back to the same place.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from rocketq.store.checkpoint import StoreCheckpoint
from rocketq.store.commit_log import CommitLog
from rocketq.store.config import StoreConfig
from rocketq.store.epochs import EpochFile, fsync_directory
from rocketq.store.index_service import IndexService
from rocketq.store.mapped_file_queue import MappedFileQueue
from rocketq.store.queue_table import QueueTable

log = logging.getLogger("rocketq.store.message_store")  # (the store's own log, as before the split)


def append_replica_bytes(files: MappedFileQueue, end: int, offset: int, data: bytes | memoryview) -> int:
    """Write a master's CommitLog bytes at ``offset`` of a log that ends at ``end`` (the put lock
    held); returns the new end. The checks and errors are ``MessageStore.append_replica``'s."""
    if files.last_file() is None:
        if offset % files.file_size:
            raise ValueError(f"an empty log starts at a file boundary, not at {offset}")
        files.flushed_where = end = offset  # (where the first file is made)
    if offset != end:
        raise ValueError(f"replica bytes at {offset}, but this log ends at {end}")
    if not data:
        return end
    mapped = files.last_file_for_write()
    position = offset - mapped.start_offset
    if position + len(data) > mapped.file_size:
        raise ValueError(f"replica bytes at {offset} cross the end of file {mapped.path.name}")
    mapped.write_at(position, data)
    mapped.wrote_position = position + len(data)
    return offset + len(data)


def pending_cut(path: Path) -> int | None:
    """The offset a ``truncate_to`` interrupted by a crash was cutting the log back to, if any."""
    try:
        return int(path.read_text(encoding="ascii").strip())
    except FileNotFoundError:
        return None


def record_cut(path: Path, offset: int) -> None:
    """Write ``offset`` to the ``truncate`` file durably (written aside, fsynced, renamed in place)."""
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(f"{offset}\n", encoding="ascii")
    with open(temp, "rb+") as file:
        os.fsync(file.fileno())
    os.replace(temp, path)
    fsync_directory(path.parent)


def cut_loaded_files(
    commit_log: CommitLog, table: QueueTable, index: IndexService | None, epochs: EpochFile, offset: int
) -> None:
    """Cut the loaded, not yet recovered files back to ``offset``: CommitLog, ConsumeQueues, index
    files indexing records past it, epoch entries starting past it."""
    files = commit_log.files
    if offset <= files.min_offset:  # nothing is kept: an empty log (it starts where a master says)
        files.destroy_all()
    else:
        files.truncate(offset, zero_tail=True)
    for queue in table.all():
        queue.recover()
        queue.truncate_dirty(offset)
    table.write_registry(force=True)  # (so the recovery does not take them for queues behind)
    if index is not None:
        index.discard_after(offset, 2**62)  # (the files indexing records past it)
    epochs.cut(offset)


def finish_cut(
    config: StoreConfig,
    commit_log: CommitLog,
    table: QueueTable,
    checkpoint: StoreCheckpoint,
    flush_logics: Callable[[], None],
    store_time_at: Callable[[int], int | None],
    offset: int,
) -> None:
    """Make the cut durable, then forget it: CommitLog, ConsumeQueues, index and a checkpoint that
    names the newest record kept are flushed before ``truncate`` is removed."""
    for mapped in commit_log.files.files:
        mapped.flush(0)
    stamp = newest_queued_timestamp(table, store_time_at)
    flush_logics()
    # (the times of records cut off would make a crash recovery start late)
    checkpoint.physic_msg_timestamp = checkpoint.logics_msg_timestamp = checkpoint.index_msg_timestamp = stamp
    checkpoint.flush()
    fsync_directory(config.commit_log_dir)
    config.truncate_path.unlink()
    fsync_directory(config.store_path_root_dir)
    log.warning(
        "store %s: commit log cut back to %d, ends at %d", config.store_path_root_dir, offset, commit_log.max_offset
    )


def newest_queued_timestamp(table: QueueTable, store_time_at: Callable[[int], int | None]) -> int:
    """Store time of the newest record a ConsumeQueue points at (0 when none)."""
    newest = 0
    for queue in table.all():
        entry = queue.entry(queue.max_offset - 1) if queue.max_offset > queue.min_offset else None
        stamp = store_time_at(entry[0]) if entry else None
        newest = max(newest, stamp or 0)
    return newest
