"""The checkpoint file: store times of the newest flushed CommitLog, ConsumeQueue and index data.

One 4096-byte page (docs/store-format.md#checkpoint): int64 physicMsgTimestamp at 0, int64 logicsMsgTimestamp at 8,
int64 indexMsgTimestamp at 16. After a crash, recovery re-scans the CommitLog from the file that was
being written when the oldest of these was flushed.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Final

CHECKPOINT: Final = struct.Struct(
    ">q"  # physic_msg_timestamp: store time of the newest flushed CommitLog record (ms)
    "q"  # logics_msg_timestamp: ... of the newest flushed ConsumeQueue entry
    "q"  # index_msg_timestamp: ... of the newest flushed index entry
)
PAGE_SIZE: Final = 4096


@dataclass(slots=True)
class StoreCheckpoint:
    path: Path
    physic_msg_timestamp: int = 0
    logics_msg_timestamp: int = 0
    index_msg_timestamp: int = 0

    @classmethod
    def load(cls, path: Path) -> StoreCheckpoint:
        checkpoint = cls(path)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return checkpoint
        if len(data) >= CHECKPOINT.size:
            fields = CHECKPOINT.unpack_from(data)
            (
                checkpoint.physic_msg_timestamp,
                checkpoint.logics_msg_timestamp,
                checkpoint.index_msg_timestamp,
            ) = fields
        return checkpoint

    def min_timestamp(self, *, with_index: bool) -> int:
        """The older of the CommitLog and ConsumeQueue times (and the index's when it is enabled),
        less 3 s of slack, as RocketMQ's ``getMinTimestamp``/``getMinTimestampIndex``."""
        oldest = min(self.physic_msg_timestamp, self.logics_msg_timestamp)
        if with_index:
            oldest = min(oldest, self.index_msg_timestamp)
        return max(0, oldest - 3000)

    def flush(self) -> None:
        """Write the page in place and fsync it (called from flusher threads, never a loop thread)."""
        page = bytearray(PAGE_SIZE)
        CHECKPOINT.pack_into(page, 0, self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, page, 0)
            os.fdatasync(fd)
        finally:
            os.close(fd)
