"""IndexFile: a hash index from ``topic#key`` to CommitLog offsets (docs/store-format.md#indexfile).

| part    | size                 | content                                                               |
|---------|----------------------|-----------------------------------------------------------------------|
| header  | 40                   | begin/end store time, begin/end phy offset (int64s), slots, count (int32s) |
| slots   | slot_count * 4       | per slot: number of the newest entry with that hash, or 0             |
| entries | max_entries * 20     | key hash (int32), phy offset (int64), time diff s (int32), previous (int32) |

``indexCount`` starts at 1 so that entry 0 means "none". A file is full at ``max_index_num`` entries.
Files are named by their creation time, ``yyyyMMddHHmmssSSS``, under ``index/``.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

import numpy as np

from rocketq.store.key_hash import key_hash
from rocketq.store.mapped_file import MappedFile

HEADER: Final = struct.Struct(
    ">q"  # begin_timestamp (ms)
    "q"  # end_timestamp (ms)
    "q"  # begin_phy_offset
    "q"  # end_phy_offset
    "i"  # hash_slot_count
    "i"  # index_count
)
HEADER_SIZE: Final = 40
assert HEADER.size == HEADER_SIZE
SLOT: Final = struct.Struct(">i")  # per slot: newest entry number
SLOT_SIZE: Final = 4
INDEX_ENTRY: Final = struct.Struct(
    ">i"  # key_hash
    "q"  # phy_offset
    "i"  # time_diff (seconds since begin_timestamp)
    "i"  # prev_index
)
INDEX_ENTRY_SIZE: Final = 20
assert INDEX_ENTRY.size == INDEX_ENTRY_SIZE
_ENTRY_DTYPE: Final = np.dtype([("hash", ">i4"), ("phy", ">i8"), ("diff", ">i4"), ("prev", ">i4")])
assert _ENTRY_DTYPE.itemsize == INDEX_ENTRY_SIZE
_INT64: Final = struct.Struct(">q")
_INT32: Final = struct.Struct(">i")
BEGIN_TIMESTAMP_AT, END_TIMESTAMP_AT, BEGIN_PHY_OFFSET_AT, END_PHY_OFFSET_AT = 0, 8, 16, 24
HASH_SLOT_COUNT_AT, INDEX_COUNT_AT = 32, 36
SCALAR_MAX_ENTRIES = 8


def index_file_size(slot_count: int, max_entries: int) -> int:
    return HEADER_SIZE + slot_count * SLOT_SIZE + max_entries * INDEX_ENTRY_SIZE


def index_file_name(timestamp_ms: int) -> str:
    seconds, millis = divmod(timestamp_ms, 1000)
    return time.strftime("%Y%m%d%H%M%S", time.localtime(seconds)) + f"{millis:03d}"


class IndexFile:
    """One index file. Writes come from the dispatcher thread; queries from any thread."""

    def __init__(self, path: Path, slot_count: int, max_entries: int, *, create: bool) -> None:
        self.slot_count = slot_count
        self.max_entries = max_entries
        self.mapped = MappedFile(path, index_file_size(slot_count, max_entries), create=create)
        buffer = self.mapped.buffer
        if create:
            HEADER.pack_into(buffer, 0, 0, 0, 0, 0, 0, 1)
        self.begin_timestamp: int
        self.end_timestamp: int
        self.begin_phy_offset: int
        self.end_phy_offset: int
        self.hash_slot_count: int
        self.index_count: int
        (
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
            self.index_count,
        ) = HEADER.unpack_from(buffer, 0)
        if self.index_count == 0:  # never written (torn creation): start empty
            self.index_count = 1
        self.mapped.wrote_position = self.mapped.file_size

    @property
    def path(self) -> Path:
        return self.mapped.path

    @property
    def is_full(self) -> bool:
        return self.index_count >= self.max_entries

    @property
    def is_empty(self) -> bool:
        return self.index_count <= 1

    def put(self, key: str, phy_offset: int, store_timestamp: int) -> bool:
        """Add one key; False when the file is full."""
        return self.put_hashed([key_hash(key)], [phy_offset], [store_timestamp]) == 1

    def put_hashed(
        self,
        hashes: list[int],
        phy_offsets: list[int],
        store_timestamps: list[int],
        compiled: Callable[..., int] | None = None,
    ) -> int:
        """Add keys given their hashes (``key_hash``); returns how many fit before the file filled.

        The header is written last, once per call; entries past a torn header's count are never reached because
        lookups stop at ``index_count``.
        """
        room = self.max_entries - self.index_count
        count = min(room, len(hashes))
        if count <= 0:
            return 0
        buffer = self.mapped.buffer
        if self.is_empty:
            self.begin_timestamp = store_timestamps[0]
            self.begin_phy_offset = phy_offsets[0]
            _INT64.pack_into(buffer, BEGIN_TIMESTAMP_AT, self.begin_timestamp)
            _INT64.pack_into(buffer, BEGIN_PHY_OFFSET_AT, self.begin_phy_offset)
        if count <= SCALAR_MAX_ENTRIES:
            self._put_scalar(hashes, phy_offsets, store_timestamps, count)
        elif compiled is not None:
            self._put_compiled(compiled, hashes, phy_offsets, store_timestamps, count)
        else:
            self._put_vectorised(hashes, phy_offsets, store_timestamps, count)
        self.end_timestamp = store_timestamps[count - 1]
        self.end_phy_offset = phy_offsets[count - 1]
        _INT64.pack_into(buffer, END_TIMESTAMP_AT, self.end_timestamp)
        _INT64.pack_into(buffer, END_PHY_OFFSET_AT, self.end_phy_offset)
        _INT32.pack_into(buffer, HASH_SLOT_COUNT_AT, self.hash_slot_count)
        _INT32.pack_into(buffer, INDEX_COUNT_AT, self.index_count)
        return count

    def _put_scalar(self, hashes: list[int], phy_offsets: list[int], store_timestamps: list[int], count: int) -> None:
        """A few entries, one at a time (numpy's per-call overhead would dominate)."""
        buffer = self.mapped.buffer
        slot_count, begin = self.slot_count, self.begin_timestamp
        slots_at = HEADER_SIZE
        entries_at = HEADER_SIZE + slot_count * SLOT_SIZE
        first = number = self.index_count
        new_slots = 0
        written: dict[int, int] = {}  # slot -> entry number written by this call
        for hashed, phy_offset, stamp in zip(hashes[:count], phy_offsets, store_timestamps, strict=False):
            slot = hashed % slot_count
            held = written.get(slot)
            if held is None:
                (held,) = SLOT.unpack_from(buffer, slots_at + slot * SLOT_SIZE)
                if held <= 0 or held >= first:  # empty, or left by a torn write past the header's count
                    held = 0
                    new_slots += 1
            diff = min(max((stamp - begin) // 1000, 0), 0x7FFFFFFF)
            INDEX_ENTRY.pack_into(buffer, entries_at + number * INDEX_ENTRY_SIZE, hashed, phy_offset, diff, held)
            SLOT.pack_into(buffer, slots_at + slot * SLOT_SIZE, number)
            written[slot] = number
            number += 1
        self.index_count = number
        self.hash_slot_count += new_slots

    def _put_compiled(
        self,
        compiled: Callable[..., int],
        hashes: list[int],
        phy_offsets: list[int],
        store_timestamps: list[int],
        count: int,
    ) -> None:
        """Many entries through ``compiled_dispatch``'s compiled writer (the scalar path's rules)."""
        data = np.frombuffer(self.mapped.buffer, dtype=np.uint8)
        try:
            new_slots = compiled(
                data,
                HEADER_SIZE,
                HEADER_SIZE + self.slot_count * SLOT_SIZE,
                self.slot_count,
                self.index_count,
                np.asarray(hashes[:count], dtype=np.int64),
                np.asarray(phy_offsets[:count], dtype=np.int64),
                np.asarray(store_timestamps[:count], dtype=np.int64),
                self.begin_timestamp,
            )
        finally:
            del data
        self.index_count += count
        self.hash_slot_count += int(new_slots)

    def _put_vectorised(
        self, hashes: list[int], phy_offsets: list[int], store_timestamps: list[int], count: int
    ) -> None:
        """Entries written as one block and the slots with one scatter."""
        buffer = self.mapped.buffer
        slot_count = self.slot_count
        first = self.index_count
        number = first + count
        hashed = np.asarray(hashes[:count], dtype=np.int64)
        slot_of = hashed % slot_count
        numbers = np.arange(first, number, dtype=np.int64)
        slots = np.frombuffer(buffer, dtype=">i4", count=slot_count, offset=HEADER_SIZE)
        # Chain each entry to the newest earlier entry of its slot: inside the batch when there is
        # one, else whatever the slot held before (0 when that is not a valid entry of this file).
        order = np.lexsort((numbers, slot_of))
        sorted_slots = slot_of[order]
        previous = np.empty(count, dtype=np.int64)
        same_as_before = np.zeros(count, dtype=bool)
        same_as_before[1:] = sorted_slots[1:] == sorted_slots[:-1]
        previous_sorted = np.where(same_as_before, np.concatenate(([0], numbers[order][:-1])), 0)
        held = slots[sorted_slots].astype(np.int64)
        held[(held <= 0) | (held >= first)] = 0
        previous_sorted = np.where(same_as_before, previous_sorted, held)
        previous[order] = previous_sorted
        new_slots = int(np.count_nonzero(~same_as_before & (held == 0)))
        entries = np.zeros(count, dtype=_ENTRY_DTYPE)
        entries["hash"] = hashed
        entries["phy"] = phy_offsets[:count]
        stamps = np.asarray(store_timestamps[:count], dtype=np.int64)
        entries["diff"] = np.clip((stamps - self.begin_timestamp) // 1000, 0, 0x7FFFFFFF)
        entries["prev"] = previous
        entries_at = HEADER_SIZE + slot_count * SLOT_SIZE + first * INDEX_ENTRY_SIZE
        buffer[entries_at : entries_at + count * INDEX_ENTRY_SIZE] = entries.tobytes()
        last_in_slot = np.ones(count, dtype=bool)
        last_in_slot[:-1] = sorted_slots[1:] != sorted_slots[:-1]
        writable = np.frombuffer(buffer, dtype=">i4", count=slot_count, offset=HEADER_SIZE)
        writable[sorted_slots[last_in_slot]] = numbers[order][last_in_slot]
        del slots, writable  # views of the map must not outlive this call
        self.index_count = number
        self.hash_slot_count += new_slots

    def lookup(
        self,
        key: str,
        begin_ms: int,
        end_ms: int,
        limit: int,
        out: list[int],
        accept: Callable[[int], bool] | None = None,
    ) -> None:
        """Append to ``out`` the offsets stored for ``key`` within [begin_ms, end_ms] (to the second),
        newest first, until ``out`` holds ``limit``. With ``accept``, only the offsets it accepts are
        appended (and counted): a query skips hash collisions before they use up its limit."""
        if not self.mapped.hold():
            return
        try:
            buffer = self.mapped.buffer
            hashed = key_hash(key)
            (number,) = SLOT.unpack_from(buffer, HEADER_SIZE + (hashed % self.slot_count) * SLOT_SIZE)
            entries_at = HEADER_SIZE + self.slot_count * SLOT_SIZE
            seen = 0
            while 0 < number < self.index_count and len(out) < limit and seen < self.index_count:
                seen += 1
                entry_hash, phy_offset, time_diff, previous = INDEX_ENTRY.unpack_from(
                    buffer, entries_at + number * INDEX_ENTRY_SIZE
                )
                stored_at = self.begin_timestamp + time_diff * 1000
                if (
                    entry_hash == hashed
                    and begin_ms - 999 <= stored_at <= end_ms
                    and (accept is None or accept(phy_offset))
                ):
                    out.append(phy_offset)
                if previous >= number or stored_at < begin_ms - 1000:
                    break
                number = previous
        finally:
            self.mapped.release()

    def overlaps(self, begin_ms: int, end_ms: int) -> bool:
        return not self.is_empty and self.begin_timestamp <= end_ms + 1000 and self.end_timestamp >= begin_ms - 1000

    def flush(self) -> None:
        self.mapped.flushed_position = 0
        self.mapped.flush()

    def close(self) -> None:
        self.mapped.close()

    def destroy(self) -> None:
        self.mapped.destroy()
