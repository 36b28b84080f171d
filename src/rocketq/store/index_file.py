"""IndexFile: a hash index from ``topic#key`` to CommitLog offsets (protocol-4x.md §4.6).

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
from pathlib import Path
from typing import Final

from rocketq.common.message import java_string_hash
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
_INT64: Final = struct.Struct(">q")
_INT32: Final = struct.Struct(">i")
BEGIN_TIMESTAMP_AT, END_TIMESTAMP_AT, BEGIN_PHY_OFFSET_AT, END_PHY_OFFSET_AT = 0, 8, 16, 24
HASH_SLOT_COUNT_AT, INDEX_COUNT_AT = 32, 36


def key_hash(key: str) -> int:
    """abs(Java hashCode), with Integer.MIN_VALUE mapped to 0."""
    h = java_string_hash(key)
    return 0 if h == -(2**31) else abs(h)


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
        if self.index_count >= self.max_entries:
            return False
        buffer = self.mapped.buffer
        hashed = key_hash(key)
        slot_at = HEADER_SIZE + (hashed % self.slot_count) * SLOT_SIZE
        (previous,) = SLOT.unpack_from(buffer, slot_at)
        if previous <= 0 or previous > self.index_count:
            previous = 0
            self.hash_slot_count += 1  # a slot used for the first time
            _INT32.pack_into(buffer, HASH_SLOT_COUNT_AT, self.hash_slot_count)
        if self.is_empty:
            self.begin_timestamp = store_timestamp
            self.begin_phy_offset = phy_offset
            _INT64.pack_into(buffer, BEGIN_TIMESTAMP_AT, store_timestamp)
            _INT64.pack_into(buffer, BEGIN_PHY_OFFSET_AT, phy_offset)
        time_diff = max(0, (store_timestamp - self.begin_timestamp) // 1000)
        time_diff = min(time_diff, 0x7FFFFFFF)
        entry_at = HEADER_SIZE + self.slot_count * SLOT_SIZE + self.index_count * INDEX_ENTRY_SIZE
        INDEX_ENTRY.pack_into(buffer, entry_at, hashed, phy_offset, time_diff, previous)
        SLOT.pack_into(buffer, slot_at, self.index_count)
        self.index_count += 1
        self.end_timestamp = store_timestamp
        self.end_phy_offset = phy_offset
        _INT64.pack_into(buffer, END_TIMESTAMP_AT, store_timestamp)
        _INT64.pack_into(buffer, END_PHY_OFFSET_AT, phy_offset)
        _INT32.pack_into(buffer, INDEX_COUNT_AT, self.index_count)
        return True

    def lookup(self, key: str, begin_ms: int, end_ms: int, limit: int, out: list[int]) -> None:
        """Append to ``out`` the offsets stored for ``key`` within [begin_ms, end_ms], newest first."""
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
                if entry_hash == hashed and begin_ms - 999 <= stored_at <= end_ms:
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
