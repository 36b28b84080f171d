"""ConsumeQueueExt: what a ConsumeQueue entry has no room for, in files beside it (RocketMQ's layout).

``consumequeue_ext/<topic>/<queueId>/<20-digit start offset>`` holds units, one per message that has
one, appended in queue order (big-endian)::

    int16 size       (20 + bitMapSize)
    int64 tagsCode   (the message's real tag code)
    int64 msgStoreTime
    int16 bitMapSize
    bytes filterBitMap  (the bloom bits of the SQL92 subscriptions the message may match)

A unit never spans two files: when one does not fit in the rest of a file (4 bytes at the end are
always left), ``-1`` as an int16 marks the rest unused and the unit goes into the next file. The
ConsumeQueue entry of a message that has a unit holds the unit's *address* in place of its tag code:
the unit's offset plus ``Long.MIN_VALUE``, so every address is below ``Integer.MIN_VALUE`` and cannot
be mistaken for a tag code (``is_ext_addr``). Entries of messages without a unit keep their tag code,
so the ConsumeQueue files stay byte-compatible with RocketMQ's either way.

Addresses only grow: a unit is never written where a live entry could still point (``recover`` goes
past any address the queue references but the files lost; see ``ConsumeQueue.recover``).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import numpy as np

from rocketq.store.mapped_file_queue import MappedFileQueue

log = logging.getLogger(__name__)

UNIT_HEAD: Final = struct.Struct(">hqqh")  # size, tagsCode, msgStoreTime, bitMapSize
MIN_UNIT_SIZE: Final = UNIT_HEAD.size
assert MIN_UNIT_SIZE == 20
END_BLANK_DATA_LENGTH: Final = 4
END_MARK: Final = struct.pack(">h", -1)
LONG_MIN: Final = -(2**63)
MAX_ADDR: Final = -(2**31) - 1
"""Every ext address is at most this (below any 32-bit tag code)."""
TAGS_AT: Final = 2
BIT_MAP_SIZE_AT: Final = 18
BIT_MAP_AT: Final = 20


def open_ext(root: Path, topic: str, queue_id: int, file_size: int, *, enabled: bool) -> ConsumeQueueExt | None:
    """The ext of a queue when units are written (``enabled``) or were before (its folder exists)."""
    if enabled or (root / topic / str(queue_id)).is_dir():
        return ConsumeQueueExt(topic, queue_id, root, file_size)
    return None


def is_ext_addr(tags_code: int) -> bool:
    return tags_code <= MAX_ADDR


def decorate(offset: int) -> int:
    """The address of the unit at ``offset`` (as a ConsumeQueue entry holds it)."""
    return offset + LONG_MIN


def undecorate(address: int) -> int:
    return address - LONG_MIN


class ConsumeQueueExt:
    """Thread safety: the dispatcher thread appends; any thread reads units below the write position."""

    def __init__(self, topic: str, queue_id: int, root: Path, file_size: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.files = MappedFileQueue(root / topic / str(queue_id), file_size)

    def load(self) -> None:
        self.files.load()

    @property
    def end_offset(self) -> int:
        """One past the last written byte (an offset, not an address)."""
        return self.files.max_offset

    def put(self, tags_code: int, store_timestamp: int, bit_map: bytes) -> int:
        """Append a unit; returns its address."""
        unit = UNIT_HEAD.pack(MIN_UNIT_SIZE + len(bit_map), tags_code, store_timestamp, len(bit_map)) + bit_map
        mapped = self.files.last_file_for_write()
        if len(unit) > mapped.remaining - END_BLANK_DATA_LENGTH:
            mapped.write(END_MARK)  # the rest of this file is unused
            mapped.wrote_position = mapped.file_size
            mapped = self.files.last_file_for_write()
        address = decorate(mapped.start_offset + mapped.wrote_position)
        mapped.write(unit)
        return address

    def read(self, address: int) -> tuple[int, int, bytes] | None:
        """(tags code, store time, bit map) of the unit at ``address``; None when there is none."""
        offset = undecorate(address)
        mapped = self.files.find(offset)
        if mapped is None or not mapped.hold():
            return None
        try:
            position = offset - mapped.start_offset
            if position + MIN_UNIT_SIZE > mapped.wrote_position:
                return None
            size, tags_code, stamp, bit_map_size = UNIT_HEAD.unpack_from(mapped.buffer, position)
            if size != MIN_UNIT_SIZE + bit_map_size or bit_map_size < 0 or position + size > mapped.wrote_position:
                return None
            return tags_code, stamp, bytes(mapped.buffer[position + BIT_MAP_AT : position + size])
        finally:
            mapped.release()

    def units(
        self, addresses: np.ndarray, bit_map_bytes: int, map_bytes: Sequence[int] = (), *, tags: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each address: whether a unit with a ``bit_map_bytes``-byte bit map is there, its tag code
        (zeros unless ``tags``), and the bytes of its bit map at the indexes ``map_bytes`` (an
        ``(n, len(map_bytes))`` uint8 array, zeros where there is no such unit). Vectorised: per file
        the addresses fall in (usually one: a queue's recent units), one gather of the bytes needed."""
        count = len(addresses)
        found = np.zeros(count, dtype=bool)
        codes = np.zeros(count, dtype=np.int64)
        picked_bytes = np.zeros((count, len(map_bytes)), dtype=np.uint8)
        offsets = addresses.astype(np.int64) - np.int64(LONG_MIN)  # wraps around to the offset
        file_size = self.files.file_size
        files = offsets // file_size  # files start at multiples of the file size
        one_file = count == 0 or not (files != files[0]).any()
        unit_size = MIN_UNIT_SIZE + bit_map_bytes
        tag_columns = list(range(TAGS_AT, TAGS_AT + 8)) if tags else []
        columns = np.array(
            [0, 1, BIT_MAP_SIZE_AT, BIT_MAP_SIZE_AT + 1, *tag_columns, *(BIT_MAP_AT + b for b in map_bytes)]
        )
        for number in [int(files[0])] if one_file and count else np.unique(files).tolist():
            start = number * file_size
            mapped = self.files.find(start)
            if mapped is None or not mapped.hold():
                continue  # deleted or lost: no units there
            try:
                picked = np.arange(count) if one_file else np.flatnonzero(files == number)
                local = offsets[picked] - start
                fits = local + unit_size <= mapped.wrote_position
                if not fits.all():
                    picked, local = picked[fits], local[fits]
                buffer = np.frombuffer(mapped.buffer, dtype=np.uint8)
                block = buffer[local[:, None] + columns]
                del buffer
            finally:
                mapped.release()
            head = block[:, :4].astype(np.int64)
            good = ((head[:, 0] << 8 | head[:, 1]) == unit_size) & ((head[:, 2] << 8 | head[:, 3]) == bit_map_bytes)
            found[picked] = good
            if tags:
                codes[picked] = np.ascontiguousarray(block[:, 4:12]).view(">i8").ravel()
            if map_bytes:
                picked_bytes[picked] = block[:, 4 + len(tag_columns) :] * good[:, None]
        return found, codes, picked_bytes

    # -- recovery and maintenance ---------------------------------------------------------------------

    def recover(self, referenced_end: int) -> None:
        """Find where the units end by walking them; then make sure the next unit goes past
        ``referenced_end`` (one past the last unit the ConsumeQueue points at), so that an entry
        pointing at a unit the files lost never points at a new unit of another message."""
        end = 0
        for mapped in self.files.files:
            position = 0
            buffer = mapped.buffer
            while position + 2 <= mapped.file_size:
                (size,) = struct.unpack_from(">h", buffer, position)
                if size <= 0:
                    break
                position += size
            position = mapped.file_size if size == -1 else min(position, mapped.file_size)
            mapped.wrote_position = mapped.flushed_position = position
            end = mapped.start_offset + mapped.wrote_position
            if size != -1:
                break
        self.files.truncate(end, zero_tail=False)  # (units are found by walking them, not by zeros)
        if referenced_end <= end:
            return
        log.warning(
            "consume queue ext %s-%d: units up to %d are referenced but were lost; new ones start past them",
            self.topic,
            self.queue_id,
            referenced_end,
        )
        file_size = self.files.file_size
        last = self.files.last_file()
        if last is not None:
            if last.remaining >= len(END_MARK):
                last.write(END_MARK)
            last.wrote_position = last.file_size
        next_start = -(-referenced_end // file_size) * file_size
        if last is None:
            self.files.flushed_where = next_start  # the first unit creates the file there
        elif next_start > last.end_offset:
            self.files.create_file(next_start)

    def delete_before(self, address: int) -> int:
        """Delete whole files whose units all lie before the unit at ``address``."""
        offset = undecorate(address)
        return self.files.delete_files(lambda mapped: mapped.end_offset <= offset)

    def flush(self, least_pages: int) -> None:
        self.files.flush(least_pages)

    def destroy(self) -> None:
        self.files.destroy_all()

    def close(self) -> None:
        self.files.close()
