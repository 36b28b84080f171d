"""Start-up recovery of the CommitLog (mirrors ``CommitLog.recoverNormally``/``recoverAbnormally``).

After a clean close (no ``abort`` file) the last three files are walked by size and magic only. After a
crash the walk starts at the file being written when the checkpoint's oldest flush happened, and every
record's sizes and body CRC are checked. The first record that fails is where the log ends: it and
everything after it (a torn write, garbage, zeros) are cut off, and the damage is reported with the
file and byte offset.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from rocketq.common import record as rec
from rocketq.store.commit_log import CommitLog
from rocketq.store.index_service import IndexService
from rocketq.store.mapped_file import MappedFile
from rocketq.store.queue_table import QueueTable

log = logging.getLogger(__name__)

# how fast a crash recovery checks the CommitLog and re-dispatches it (measured interpreted on a busy 2-core
# machine: 55 MB in 2.3 s), for the estimate its first log line gives
CHECKED_BYTES_PER_S = 25 * 1024 * 1024


@dataclass(slots=True)
class RecoveryReport:
    clean_shutdown: bool
    commit_log_end: int = 0
    scan_start: int = 0
    records_checked: int = 0
    damage: list[str] = field(default_factory=list)
    rebuilt: list[str] = field(default_factory=list)


def recover_commit_log(
    commit_log: CommitLog, *, clean_shutdown: bool, checkpoint_min_timestamp: int, check_crc: bool
) -> RecoveryReport:
    report = RecoveryReport(clean_shutdown=clean_shutdown)
    files = commit_log.files.files
    if not files:
        return report
    if clean_shutdown:
        start_index = max(0, len(files) - 3)
        check_crc = False
    else:
        start_index = _file_written_at(files, checkpoint_min_timestamp)
        _announce(commit_log, files[start_index:])
    report.scan_start = files[start_index].start_offset
    end = files[start_index].start_offset
    for mapped in files[start_index:]:
        position, checked, problem = _walk(mapped, check_crc)
        report.records_checked += checked
        end = mapped.start_offset + position
        mapped.wrote_position = mapped.flushed_position = position
        if problem is not None:
            report.damage.append(f"{mapped.path} at offset {end} (file position {position}): {problem}")
            log.warning("commit log %s damaged at offset %d: %s; truncating there", mapped.path, end, problem)
            break
        if position < mapped.file_size:
            break
    # After a clean close nothing was ever written past the end: no need to zero (scan) the tail.
    commit_log.files.truncate(end, zero_tail=not clean_shutdown or bool(report.damage))
    report.commit_log_end = end
    return report


def _announce(commit_log: CommitLog, files: list[MappedFile]) -> None:
    """Say at start that a crash recovery runs, what it checks and roughly how long it takes."""
    at_most = files[-1].start_offset + files[-1].file_size - files[0].start_offset
    log.warning(
        "the store in %s was not shut down cleanly: recovering. Checking every record of %d CommitLog file(s)"
        " from offset %d (up to %d MB: at most about %d s), then rebuilding the consume queues and index from them",
        commit_log.files.directory.parent,
        len(files),
        files[0].start_offset,
        at_most // (1024 * 1024),
        max(1, at_most // CHECKED_BYTES_PER_S),
    )


def recover_logics(
    report: RecoveryReport,
    commit_log: CommitLog,
    queues: QueueTable,
    index: IndexService | None,
    index_timestamp: int,
) -> int:
    """Cut the ConsumeQueues and the index back to the recovered CommitLog (``index_timestamp``: the
    checkpoint's); returns where dispatching must start to rebuild what they lack: the recovered end
    after a clean close, else the scan start, or earlier for an index behind or a queue missing."""
    end = report.commit_log_end
    for queue in queues.all():
        queue.recover()
        queue.truncate_dirty(end)
    dispatch_from = end if report.clean_shutdown else report.scan_start
    if index is not None:
        index.discard_after(end, 2**62 if report.clean_shutdown else index_timestamp)
        indexed_to = index.end_phy_offset
        dispatch_from = min(dispatch_from, indexed_to if indexed_to >= 0 else commit_log.min_offset)
    missing = queues.behind_registry()
    if missing:
        report.rebuilt.extend(missing)
        log.warning("consume queues missing or behind, rebuilding from the commit log: %s", missing)
        dispatch_from = commit_log.min_offset
    return max(dispatch_from, commit_log.min_offset)


def _file_written_at(files: list[MappedFile], timestamp: int) -> int:
    """Index of the newest file whose first record was stored at or before ``timestamp``."""
    for index in range(len(files) - 1, -1, -1):
        buffer = files[index].buffer
        _, magic = rec.SIZE_AND_MAGIC.unpack_from(buffer, 0)
        if magic != rec.MESSAGE_MAGIC:
            continue
        stored = int.from_bytes(buffer[rec.STORE_TIMESTAMP_AT : rec.STORE_TIMESTAMP_AT + 8], "big")
        if stored <= timestamp:
            return index
    return 0


def _walk(mapped: MappedFile, check_crc: bool) -> tuple[int, int, str | None]:
    """Walk one file's records; return (end position, records seen, damage or None for a clean end)."""
    buffer = mapped.buffer
    file_size = mapped.file_size
    position = 0
    checked = 0
    while position + rec.END_FILE_MIN_BLANK_LENGTH <= file_size:
        size, magic = rec.SIZE_AND_MAGIC.unpack_from(buffer, position)
        if magic == rec.BLANK_MAGIC:
            if size == file_size - position:
                return file_size, checked, None
            return (
                position,
                checked,
                f"end-of-file filler of {size} bytes where {file_size - position} remain",
            )
        if magic == 0 and size == 0:
            return position, checked, _garbage_after(buffer, position, file_size)
        try:
            position += rec.check_record(buffer, position, file_size, check_crc=check_crc)
        except rec.RecordFormatError as exc:
            return position, checked, exc.reason
        checked += 1
    if position < file_size and any(buffer[position:file_size]):
        return position, checked, "garbage in the last bytes of the file"
    return file_size if position >= file_size else position, checked, None


def _garbage_after(buffer: memoryview, position: int, file_size: int) -> str | None:
    """A zero header is a clean end only when the next bytes are zero too (else: a zeroed record)."""
    window = buffer[position : min(file_size, position + 4096)]
    return None if not any(window) else "zeroed bytes followed by data"
