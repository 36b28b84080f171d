"""Reading a broker's store directory read-only, beside the broker that writes it, or offline.

``StoreReader`` lists the topics and queues of a store root (its ConsumeQueue directories), a queue's
offset range and ConsumeQueue files, and reads a queue's records out of the CommitLog straight into
Arrow-layout column buffers in one compiled pass (``read``, with ``rocketq.common.record_arrow``'s
``fill_columns``, the decode the network source uses too), then checks them against their entries
(``rocketq.store.readonly_entries``). It never writes: no lock, no recovery, no checkpoint; files are
opened ``O_RDONLY`` and mapped read-only; nothing is created, changed, truncated or deleted, so it can run
while a broker appends, rolls files and deletes old ones.

What it returns is complete, because it reads only where the broker has finished writing:

- The broker appends a record to the CommitLog before the dispatcher writes its ConsumeQueue entry,
  and entries are written in order, so the complete entries of a queue are those before its first
  zero one. ``offset_range`` counts them and checks the records of the last ``TAIL_CHECKED`` of them
  (an entry read while it was being written cannot point at a sound record): the range ends before
  the first one that fails.
- ``read`` checks every record it returns: the record itself (magic, sizes, lengths, UTF-8 text, body
  CRC unless ``check_crc=False``) and its size, topic, queue id and queue offset against its entry.
  Inside a planned range a failure is damage, and raises ``DamagedRecordError``.
- Retention deletes old CommitLog files first and the ConsumeQueue files that point into them later.
  ``offset_range`` starts at the first entry whose record still exists; entries whose data goes while
  a read runs raise ``DataAgedOutError``, or are skipped with ``skip_aged_out=True``.

Files rolling (a new CommitLog or ConsumeQueue file) are found by listing the directory again when an
offset is past the files known. Mapped files stay valid when the broker deletes them (the maps keep
them alive until closed).
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np

from rocketq.common.record import RecordFormatError
from rocketq.common.record_arrow import Allocate, FilledColumns, fill_columns, numpy_memory
from rocketq.store.consume_queue import ENTRY_SIZE, PADDING_SIZE
from rocketq.store.offset_files import OffsetFiles, StoreReadError
from rocketq.store.readonly_entries import Described, describe, first_mismatch

ENTRY_DTYPE: Final = np.dtype([("offset", ">i8"), ("size", ">i4"), ("tag", ">i8")])
assert ENTRY_DTYPE.itemsize == ENTRY_SIZE
TAIL_CHECKED: Final = 256
"""How many of a queue's last entries ``offset_range`` checks against their records."""
DEFAULT_MAX_RECORDS: Final = 16384
DEFAULT_MAX_BYTES: Final = 64 * 1024 * 1024
"""Bytes of records ``read`` puts in one chunk at most (its columns hold about as many)."""


class DataAgedOutError(StoreReadError):
    """Entries of a read range point at data that retention deleted (or the range's ConsumeQueue file
    itself is gone)."""


class DamagedRecordError(StoreReadError):
    """A ConsumeQueue entry in a read range is not written, or points at a record that does not check
    out; ``queue_offset`` is the entry's."""

    def __init__(self, topic: str, queue_id: int, queue_offset: int, reason: str) -> None:
        super().__init__(f"{topic}:{queue_id}: queue offset {queue_offset}: {reason}")
        self.queue_offset = queue_offset


@dataclass(frozen=True, slots=True)
class QueueFile:
    """One ConsumeQueue file: queue offsets ``[first_offset, first_offset + entries)``."""

    path: Path
    first_offset: int
    entries: int


@dataclass(frozen=True, slots=True)
class _Segment(Described):
    """Records of one CommitLog file: ``data`` is its map, which starts at CommitLog byte ``file_start``;
    positions are in it."""

    file_start: int


def _head(segment: _Segment, count: int) -> _Segment:
    """The segment's first ``count`` records."""
    return _Segment(
        segment.data,
        segment.positions[:count],
        segment.sizes[:count],
        segment.queue_offsets[:count],
        segment.file_start,
    )


class StoreReader:
    """Read-only access to the store under ``root`` (the broker's ``storePathRootDir``).

    Not thread safe; cheap to make (it lists directories lazily). Close it (or use it as a context
    manager) to unmap the files; chunks read from it are valid until then.
    """

    def __init__(self, root: Path | str, *, check_crc: bool = True) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise StoreReadError(f"{self.root}: not a directory")
        self.check_crc = check_crc
        self._commit_log = OffsetFiles(self.root / "commitlog")
        self._queues: dict[tuple[str, int], OffsetFiles] = {}
        self._maps: dict[Path, mmap.mmap] = {}

    def __enter__(self) -> StoreReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Unmap every file; a map still viewed by a chunk is unmapped when the last view goes."""
        maps, self._maps = self._maps, {}
        for mapped in maps.values():
            with contextlib.suppress(BufferError):  # views are alive: it closes when they and it are collected
                mapped.close()

    # -- listing --------------------------------------------------------------------------------------

    def topics(self) -> list[str]:
        """Topics that have ConsumeQueue directories, sorted."""
        directory = self.root / "consumequeue"
        try:
            return sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
        except FileNotFoundError:
            return []

    def queue_ids(self, topic: str) -> list[int]:
        """The topic's queues that have ConsumeQueue directories, sorted (none for an unknown topic)."""
        try:
            entries = os.scandir(self.root / "consumequeue" / topic)
        except (FileNotFoundError, NotADirectoryError):
            return []
        with entries:
            return sorted(int(entry.name) for entry in entries if entry.name.isdigit() and entry.is_dir())

    def queue_files(self, topic: str, queue_id: int) -> list[QueueFile]:
        """The queue's ConsumeQueue files, oldest first (as listed now)."""
        files = self._queue(topic, queue_id, refresh=True)
        entries = files.size // ENTRY_SIZE
        return [QueueFile(files.path(start), start // ENTRY_SIZE, entries) for start in files.starts]

    def offset_range(self, topic: str, queue_id: int) -> tuple[int, int]:
        """(min, max): the queue's first entry whose record still exists, and one past its last
        complete entry; (0, 0) for a queue without entries, min == max when none is readable."""
        files = self._queue(topic, queue_id, refresh=True)
        if not files.starts:
            return 0, 0
        high = self._end_of_entries(files)
        low = min(self._first_live_entry(files, high), high)
        return low, self._check_tail(topic, queue_id, low, high)

    # -- reading --------------------------------------------------------------------------------------

    def read(
        self,
        topic: str,
        queue_id: int,
        start: int,
        end: int,
        *,
        max_records: int = DEFAULT_MAX_RECORDS,
        max_bytes: int = DEFAULT_MAX_BYTES,
        skip_aged_out: bool = False,
        include_properties: bool = False,
        allocate: Allocate = numpy_memory,
    ) -> Iterator[FilledColumns]:
        """The records of queue offsets ``[start, end)`` (inside ``offset_range``), padding entries left
        out, written straight into Arrow-layout column buffers by the one decode of stored records
        (``rocketq.common.record_arrow.fill_columns``, memory from ``allocate``), in chunks of at most
        ``max_records`` rows and (but for a single record) ``max_bytes`` bytes of records. Every record
        is checked by the decode and then against its entry.

        Raises:
            DataAgedOutError: Part of the range was deleted by retention (unless ``skip_aged_out``).
            DamagedRecordError: An entry in the range is not written, or its record does not check out.
        """
        entries = self._entries_of(topic, queue_id, start, end, max_records, skip_aged_out, max_bytes)
        for positions, sizes, queue_offsets in entries:
            segments: list[_Segment] = []
            try:
                segments.extend(self._segments(topic, queue_id, positions, sizes, queue_offsets, skip_aged_out))
            except StoreReadError:
                if segments:  # damage before the missing data is said first
                    self._checked(topic, queue_id, segments, False, numpy_memory)
                raise
            if segments:
                yield self._checked(topic, queue_id, segments, include_properties, allocate)

    # -- internals ------------------------------------------------------------------------------------

    def _queue(self, topic: str, queue_id: int, *, refresh: bool) -> OffsetFiles:
        files = self._queues.get((topic, queue_id))
        if files is None:
            files = self._queues[topic, queue_id] = OffsetFiles(self.root / "consumequeue" / topic / str(queue_id))
        elif refresh:
            files.refresh()
        return files

    def _map(self, path: Path) -> mmap.mmap | None:
        """``path`` mapped read-only (None when it is gone or empty)."""
        mapped = self._maps.get(path)
        if mapped is None:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                return None
            try:
                if os.fstat(fd).st_size == 0:
                    return None
                mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            finally:
                os.close(fd)
            self._maps[path] = mapped
        return mapped

    def _entries(self, files: OffsetFiles, start: int) -> np.ndarray:
        """The entries of the ConsumeQueue file starting at byte ``start`` (empty when it is gone)."""
        mapped = self._map(files.path(start))
        if mapped is None:
            return np.zeros(0, dtype=ENTRY_DTYPE)
        return np.frombuffer(mapped, dtype=ENTRY_DTYPE, count=len(mapped) // ENTRY_SIZE)

    def _end_of_entries(self, files: OffsetFiles) -> int:
        """One past the last non-zero entry: the last file with any, binary searched (entries are
        written in order, so zeros follow the last one)."""
        for start in reversed(files.starts):
            sizes = self._entries(files, start)["size"]
            low, high = 0, len(sizes)
            while low < high:
                middle = (low + high) // 2
                if sizes[middle] != 0:
                    low = middle + 1
                else:
                    high = middle
            if low:
                return start // ENTRY_SIZE + low
        return files.starts[0] // ENTRY_SIZE

    def _first_live_entry(self, files: OffsetFiles, high: int) -> int:
        """The first entry that is not padding and whose record is still in the CommitLog (physical
        offsets grow along a queue, so a binary search finds it)."""
        commit_log_min = self._commit_log_min()
        for start in files.starts:
            entries = self._entries(files, start)
            count = min(len(entries), high - start // ENTRY_SIZE)
            if count <= 0:
                break
            live = (entries["size"][:count] != PADDING_SIZE) & (entries["offset"][:count] >= commit_log_min)
            found = np.flatnonzero(live)
            if len(found):
                return start // ENTRY_SIZE + int(found[0])
        return high

    def _commit_log_min(self) -> int:
        self._commit_log.refresh()
        return self._commit_log.min_offset

    def _check_tail(self, topic: str, queue_id: int, low: int, high: int) -> int:
        """Where the sound entries end: ``high``, or the first of the run of failing entries that ends
        the queue (looked for among its last ``TAIL_CHECKED``): entries being written as we read. A
        failing entry with sound ones after it is damage, left for ``read`` to report."""
        run_start = None
        last_failure = -2
        cursor = max(low, high - TAIL_CHECKED)
        while cursor < high:
            try:
                for _ in self.read(topic, queue_id, cursor, high, skip_aged_out=True):
                    pass
                return high  # [cursor, high) is sound: no failing run at the end
            except DamagedRecordError as exc:
                if run_start is None or exc.queue_offset != last_failure + 1:
                    run_start = exc.queue_offset
                last_failure = exc.queue_offset
                cursor = last_failure + 1
        return high if run_start is None else run_start

    def _entries_of(
        self,
        topic: str,
        queue_id: int,
        start: int,
        end: int,
        max_records: int,
        skip_aged_out: bool,
        max_bytes: int | None = None,
    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The entries of queue offsets ``[start, end)``, at most ``max_records`` at a time (and entries of
        at most ``max_bytes`` of records, but for one) and within one ConsumeQueue file, padding left
        out: (CommitLog positions, sizes, queue offsets), int64."""
        if max_records < 1:
            raise ValueError(f"max_records must be at least 1, not {max_records}")
        files = self._queue(topic, queue_id, refresh=False)
        cursor = start
        while cursor < end:
            file_start = files.find(cursor * ENTRY_SIZE)
            if file_start is None:
                following = [s for s in files.starts if s > cursor * ENTRY_SIZE]
                resume = min(end, following[0] // ENTRY_SIZE) if following else end
                self._aged_out(topic, queue_id, cursor, resume, "its ConsumeQueue file is gone", skip_aged_out)
                cursor = resume
                continue
            queue_map = self._map(files.path(file_start))
            if queue_map is None:  # deleted since it was listed
                files.refresh()
                resume = min(end, (file_start + files.size) // ENTRY_SIZE)
                self._aged_out(topic, queue_id, cursor, resume, "its ConsumeQueue file is gone", skip_aged_out)
                cursor = resume
                continue
            file_end = (file_start + len(queue_map)) // ENTRY_SIZE
            stop = min(end, file_end, cursor + max_records)
            at = cursor * ENTRY_SIZE - file_start
            entries = np.frombuffer(queue_map, dtype=ENTRY_DTYPE, count=stop - cursor, offset=at)
            positions = entries["offset"].astype(np.int64)
            sizes = entries["size"].astype(np.int64)
            del entries
            unwritten = np.flatnonzero(sizes == 0)
            if len(unwritten):
                raise DamagedRecordError(topic, queue_id, cursor + int(unwritten[0]), "the entry is not written")
            if max_bytes is not None and len(sizes) > 1:
                fits = max(
                    1,
                    int(np.searchsorted(np.cumsum(np.where(sizes == PADDING_SIZE, 0, sizes)), max_bytes, side="right")),
                )
                if fits < len(sizes):
                    stop = cursor + fits
                    positions, sizes = positions[:fits], sizes[:fits]
            queue_offsets = np.arange(cursor, stop, dtype=np.int64)
            keep = sizes != PADDING_SIZE
            if keep.all():
                yield positions, sizes, queue_offsets
            else:
                yield positions[keep], sizes[keep], queue_offsets[keep]
            cursor = stop

    def _segments(
        self,
        topic: str,
        queue_id: int,
        positions: np.ndarray,
        sizes: np.ndarray,
        queue_offsets: np.ndarray,
        skip_aged_out: bool,
    ) -> Iterator[_Segment]:
        """Where the records at CommitLog ``positions`` are: one segment per CommitLog file they are in."""
        first = 0
        count = len(positions)
        while first < count:
            position = int(positions[first])
            file_start = self._commit_log.find(position)
            mapped = None if file_start is None else self._map(self._commit_log.path(file_start))
            if file_start is None or mapped is None:
                self._commit_log.refresh()
                present = self._commit_log.min_offset if self._commit_log.starts else None
                if present is not None and position >= present:
                    raise DamagedRecordError(
                        topic, queue_id, int(queue_offsets[first]), f"no CommitLog file holds byte {position}"
                    )
                gone = count if present is None else first + int(np.searchsorted(positions[first:], present))
                why = f"its CommitLog data (from byte {position}) is gone"
                self._aged_out(
                    topic, queue_id, int(queue_offsets[first]), int(queue_offsets[gone - 1]) + 1, why, skip_aged_out
                )
                first = gone
                continue
            last = first + int(np.searchsorted(positions[first:], file_start + len(mapped)))
            yield _Segment(
                data=np.frombuffer(mapped, dtype=np.uint8),
                positions=positions[first:last] - file_start,
                sizes=sizes[first:last],
                queue_offsets=queue_offsets[first:last],
                file_start=file_start,
            )
            first = last

    def _checked(
        self, topic: str, queue_id: int, segments: list[_Segment], include_properties: bool, allocate: Allocate
    ) -> FilledColumns:
        """The segments' records decoded (``fill_columns``) and checked against their entries.

        Raises:
            DamagedRecordError: One is not sound, or not the record its entry describes: the first.
        """
        parts = [(segment.data, segment.positions) for segment in segments]
        refused: RecordFormatError | None = None
        try:
            filled = fill_columns(
                parts, check_crc=self.check_crc, include_properties=include_properties, allocate=allocate
            )
        except RecordFormatError as exc:
            refused = exc  # which record, and whether one before it is not its entry's: said below
        else:
            if first_mismatch(filled, segments, topic, queue_id) is None:
                return filled
        for segment in segments:
            self._check_segment(topic, queue_id, segment)
        # no single record is at fault: the chunk as a whole was refused (columns over 2 GiB)
        raise StoreReadError(
            f"{topic}:{queue_id}: queue offsets from {int(segments[0].queue_offsets[0])}: {refused or 'not read'}"
        )

    def _check_segment(self, topic: str, queue_id: int, segment: _Segment) -> None:
        """Raise ``DamagedRecordError`` for the segment's first record that does not check out (the
        decode refuses it, or it is not its entry's record), if any: the error path of ``_checked``."""
        sound, reason = len(segment.positions), ""
        try:
            filled = fill_columns([(segment.data, segment.positions)], check_crc=self.check_crc)
        except RecordFormatError as exc:  # the records before the refused one may not be their entries'
            refused = np.flatnonzero(segment.positions == exc.position)
            sound, reason = (int(refused[0]) if len(refused) else 0), exc.reason
            filled = fill_columns([(segment.data, segment.positions[:sound])], check_crc=self.check_crc)
        head = _head(segment, sound)
        row = first_mismatch(filled, [head], topic, queue_id)
        if row is not None:
            sound, reason = row, describe(filled, head, row, topic, queue_id)
        if sound < len(segment.positions):
            byte = int(segment.positions[sound]) + segment.file_start
            raise DamagedRecordError(
                topic,
                queue_id,
                int(segment.queue_offsets[sound]),
                f"its record (CommitLog byte {byte}) does not check out: {reason}",
            )

    @staticmethod
    def _aged_out(topic: str, queue_id: int, start: int, end: int, why: str, skip: bool) -> None:
        if not skip:
            raise DataAgedOutError(
                f"{topic}:{queue_id}: queue offsets [{start}, {end}) were deleted by retention ({why})"
            )
