"""ConsumeQueue: one per topic/queue, 20-byte entries (CommitLog offset, size, tag code).

Entry ``n`` (the queue offset) lives at byte ``n * 20`` of the queue's logical space, split into files
of ``mapped_file_size_consume_queue`` bytes under ``consumequeue/<topic>/<queueId>/<20-digit start>``
(docs/store-format.md#consumequeue). Padding entries are ``(0, 0x7FFFFFFF, 0)``. With a ConsumeQueueExt
(``ext``), an entry's tag code may instead be the address of its message's ext unit (``consume_queue_ext``).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

import numpy as np

from rocketq.store.consume_queue_ext import MAX_ADDR, ConsumeQueueExt, undecorate
from rocketq.store.mapped_file import MappedFile
from rocketq.store.mapped_file_queue import MappedFileQueue

log = logging.getLogger(__name__)

ENTRY: Final = struct.Struct(
    ">q"  # commit_log_offset
    "i"  # size
    "q"  # tags_code (delivery time for SCHEDULE_TOPIC_XXXX)
)
ENTRY_SIZE: Final = 20
assert ENTRY.size == ENTRY_SIZE
PADDING_SIZE: Final = 0x7FFFFFFF  # the size field of a padding entry
PADDING: Final = ENTRY.pack(0, PADDING_SIZE, 0)
ENTRY_DTYPE: Final = np.dtype([("offset", ">i8"), ("size", ">i4"), ("tag", ">i8")])
"""An entry as a numpy record (whole runs of entries are read as arrays)."""
assert ENTRY_DTYPE.itemsize == ENTRY_SIZE

Entry = tuple[int, int, int]  # commit_log_offset, size, tags_code


class ConsumeQueue:
    """Thread safety: one dispatcher thread writes; any thread reads entries below ``max_offset``."""

    def __init__(
        self, topic: str, queue_id: int, root: Path, file_size: int, ext: ConsumeQueueExt | None = None
    ) -> None:
        if file_size % ENTRY_SIZE:
            raise ValueError(f"consume queue file size {file_size} is not a multiple of {ENTRY_SIZE}")
        self.topic = topic
        self.queue_id = queue_id
        self.files = MappedFileQueue(root / topic / str(queue_id), file_size)
        self.ext = ext
        self.min_logical_offset = 0  # first live entry, in bytes
        self.max_physical_offset = -1  # end (offset + size) of the last entry's record

    # -- loading and recovery -------------------------------------------------------------------------

    def load(self) -> None:
        self.files.load()
        if self.ext is not None:
            self.ext.load()

    def recover(self) -> None:
        """Find the end of the entries (entries are written contiguously, zeros follow)."""
        files = self.files.files
        for mapped in files:
            mapped.wrote_position = mapped.flushed_position = self._valid_entries(mapped) * ENTRY_SIZE
        last_used = next((f for f in reversed(files) if f.wrote_position), None)
        if last_used is None:
            self.files.truncate(files[0].start_offset if files else 0)
            self.max_physical_offset = -1
        else:
            self.files.truncate(last_used.start_offset + last_used.wrote_position)
            offset, size, _ = ENTRY.unpack_from(last_used.buffer, last_used.wrote_position - ENTRY_SIZE)
            self.max_physical_offset = offset + size
        self._correct_min_offset_from_files()
        if self.ext is not None:
            last_address = self._ext_address(reverse=True)
            self.ext.recover(0 if last_address is None else undecorate(last_address) + 1)

    def _ext_address(self, *, reverse: bool) -> int | None:
        """The last (or first) ext address the entries hold, None when they hold none."""
        files = self.files.files
        for mapped in reversed(files) if reverse else files:
            entries = np.frombuffer(mapped.buffer[: mapped.wrote_position], dtype=ENTRY_DTYPE)
            addresses = np.flatnonzero(entries["tag"] <= MAX_ADDR)
            found = None
            if len(addresses):
                found = int(entries["tag"][addresses[-1] if reverse else addresses[0]])
            del entries
            if found is not None:
                return found
        return None

    @staticmethod
    def _valid_entries(mapped: MappedFile) -> int:
        """Entries before the first empty one (size 0), by binary search: sizes are never 0."""
        low, high = 0, mapped.file_size // ENTRY_SIZE
        buffer = mapped.buffer
        while low < high:
            middle = (low + high) // 2
            if int.from_bytes(buffer[middle * ENTRY_SIZE + 8 : middle * ENTRY_SIZE + 12], "big"):
                low = middle + 1
            else:
                high = middle
        return low

    def _correct_min_offset_from_files(self) -> None:
        first = self.files.first_file()
        self.min_logical_offset = first.start_offset if first else 0
        if first is not None:
            for index, (_, size, _) in enumerate(ENTRY.iter_unpack(first.buffer[: first.wrote_position])):
                if size != PADDING_SIZE:
                    self.min_logical_offset = first.start_offset + index * ENTRY_SIZE
                    break

    def truncate_dirty(self, commit_log_end: int) -> None:
        """Drop entries whose record ends past ``commit_log_end`` (the CommitLog was cut back)."""
        while self.max_physical_offset > commit_log_end:
            end = self.files.max_offset
            mapped = self.files.find(end - ENTRY_SIZE)
            if mapped is None:
                break
            position = end - ENTRY_SIZE - mapped.start_offset
            offset, size, _ = ENTRY.unpack_from(mapped.buffer, position)
            if offset + size <= commit_log_end:
                self.max_physical_offset = offset + size
                break
            self.files.truncate(end - ENTRY_SIZE)
            if end - ENTRY_SIZE <= self.min_logical_offset:
                self.max_physical_offset = -1
                self.min_logical_offset = end - ENTRY_SIZE
                break
            previous = self.files.find(end - 2 * ENTRY_SIZE)
            if previous is None:
                self.max_physical_offset = -1
                break
            prev_offset, prev_size, _ = ENTRY.unpack_from(previous.buffer, end - 2 * ENTRY_SIZE - previous.start_offset)
            self.max_physical_offset = prev_offset + prev_size

    # -- writing --------------------------------------------------------------------------------------

    def reserve(self, first_offset: int, end_offset: int) -> None:
        """Make the files that entries for queue offsets ``[first_offset, end_offset)`` will be written
        into, ahead of the dispatcher (the store calls this before it appends their records). Cheap when
        they exist. Raises DiskFullError when a file cannot be allocated."""
        end = end_offset * ENTRY_SIZE
        if end > self.files.reserved_end:
            position = first_offset * ENTRY_SIZE
            self.files.reserve(end, position - position % self.files.file_size)

    def put(self, queue_offset: int, entries: Sequence[Entry]) -> int:
        """Write entries for queue offsets ``queue_offset, queue_offset+1, ...``.

        Entries below the current max offset are already there (re-dispatch after recovery) and are
        skipped; a gap is filled with padding and logged. Returns how many entries were written.
        """
        last_offset, last_size, _ = entries[-1]
        return self.put_block(
            queue_offset, b"".join([ENTRY.pack(*entry) for entry in entries]), last_offset + last_size
        )

    def put_one(self, queue_offset: int, commit_log_offset: int, size: int, tags_code: int) -> int:
        """``put`` of a single entry."""
        return self.put_block(queue_offset, ENTRY.pack(commit_log_offset, size, tags_code), commit_log_offset + size)

    def put_block(self, queue_offset: int, block: bytes, end_physical_offset: int) -> int:
        """``put`` for entries already packed into ``block``; ``end_physical_offset`` is where the last
        one's record ends in the CommitLog."""
        count = len(block) // ENTRY_SIZE
        last = self.files.last_file()
        if last is not None:  # the common case: the next entries, with room for them in the last file
            position = last.wrote_position
            if (last.start_offset + position) // ENTRY_SIZE == queue_offset and len(block) <= last.file_size - position:
                last.write(block)
                self.max_physical_offset = end_physical_offset
                return count
        current = self.max_offset
        skip = current - queue_offset
        if skip >= count:
            return 0
        if skip > 0:
            block = block[skip * ENTRY_SIZE :]
            count -= skip
            queue_offset = current
        if queue_offset > current:
            if self.files.last_file() is None:
                self._start_at(queue_offset)
            else:
                log.warning(
                    "consume queue %s-%d: gap from %d to %d filled with padding",
                    self.topic,
                    self.queue_id,
                    current,
                    queue_offset,
                )
                self._write(PADDING * (queue_offset - current))
        self._write(block)
        self.max_physical_offset = end_physical_offset
        return count

    def _start_at(self, queue_offset: int) -> None:
        """First entry of an empty queue lands mid-way (older files deleted): pad the file's prefix."""
        position = queue_offset * ENTRY_SIZE
        start = position - position % self.files.file_size
        self.files.flushed_where = start
        self.files.last_file_for_write()  # the file reserve() made for it, or a new one
        self._write(PADDING * ((position - start) // ENTRY_SIZE))
        self.min_logical_offset = position

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            mapped = self.files.last_file_for_write()
            room = mapped.remaining
            mapped.write(view[:room])
            view = view[room:]

    # -- reading --------------------------------------------------------------------------------------

    @property
    def min_offset(self) -> int:
        return self.min_logical_offset // ENTRY_SIZE

    @property
    def max_offset(self) -> int:
        """One past the last entry's queue offset."""
        return self.files.max_offset // ENTRY_SIZE

    def entries(self, queue_offset: int, max_count: int) -> tuple[MappedFile, memoryview] | None:
        """Held file and a view of up to ``max_count`` entries from ``queue_offset`` within one file."""
        position = queue_offset * ENTRY_SIZE
        if position < self.min_logical_offset:
            return None
        mapped = self.files.find(position)
        if mapped is None or not mapped.hold():
            return None
        start = position - mapped.start_offset
        end = min(mapped.wrote_position, start + max_count * ENTRY_SIZE)
        if end <= start:
            mapped.release()
            return None
        return mapped, mapped.buffer[start:end]

    def entry(self, queue_offset: int) -> Entry | None:
        found = self.entries(queue_offset, 1)
        if found is None:
            return None
        mapped, view = found
        try:
            result: Entry = ENTRY.unpack(view)
            return result
        finally:
            view.release()
            mapped.release()

    def offset_for_timestamp(self, timestamp: int, store_time_of: Callable[[int], int | None]) -> int:
        """Binary search: the first queue offset whose record was stored at or after ``timestamp``
        (the max offset when none was). ``store_time_of`` reads a record's store time by its offset."""
        low, high = self.min_offset, self.max_offset - 1
        answer = self.max_offset
        while low <= high:
            middle = (low + high) // 2
            found = self.entry(middle)
            stored = store_time_of(found[0]) if found and found[1] != PADDING_SIZE else None
            if stored is None:  # record already deleted: search later entries
                low = middle + 1
                continue
            if stored >= timestamp:
                answer = middle
                high = middle - 1
            else:
                low = middle + 1
        return answer

    # -- maintenance ----------------------------------------------------------------------------------

    def flush(self, least_pages: int) -> None:
        if self.ext is not None:  # first: a flushed entry never points at a unit that was not
            self.ext.flush(least_pages)
        self.files.flush(least_pages)

    def delete_before(self, commit_log_min_offset: int) -> int:
        """Delete whole files whose last entry points below ``commit_log_min_offset``; fix min offset."""

        def obsolete(mapped: MappedFile) -> bool:
            if mapped.wrote_position < mapped.file_size:
                return False
            offset, _, _ = ENTRY.unpack_from(mapped.buffer, mapped.file_size - ENTRY_SIZE)
            return bool(offset < commit_log_min_offset)

        deleted = self.files.delete_files(obsolete)
        first = self.files.first_file()
        if first is not None:
            for index, (offset, size, _) in enumerate(ENTRY.iter_unpack(first.buffer[: first.wrote_position])):
                if offset >= commit_log_min_offset and size != PADDING_SIZE:
                    self.min_logical_offset = max(self.min_logical_offset, first.start_offset + index * ENTRY_SIZE)
                    break
        if deleted and self.ext is not None:
            first_address = self._ext_address(reverse=False)
            if first_address is not None:
                self.ext.delete_before(first_address)
        return deleted

    def destroy(self) -> None:
        """Delete every file of the queue (and of its ext)."""
        self.files.destroy_all()
        if self.ext is not None:
            self.ext.destroy()

    def close(self) -> None:
        self.files.close()
        if self.ext is not None:
            self.ext.close()
