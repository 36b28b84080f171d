"""Reading stored records in place: views for a read result (adjacent records in one file become one
view), and records' properties text (for filters)."""

from __future__ import annotations

import struct

import numpy as np

from rocketq.common.record import BODY_LENGTH_AT, HEAD_SIZE
from rocketq.store.commit_log import CommitLog
from rocketq.store.mapped_file import MappedFile
from rocketq.store.results import GetMessageResult

_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")


def add_views(commit_log: CommitLog, positions: np.ndarray, sizes: np.ndarray, result: GetMessageResult) -> int | None:
    """Append views of the records at ``positions`` (CommitLog offsets, in log order) to ``result``, one per
    run of adjacent records within a file; returns the index of the first record whose file could not be
    pinned (None when all were added; the records before it are in ``result``)."""
    count = len(positions)
    first = 0
    while first < count:
        mapped = commit_log.pin(int(positions[first]))
        if mapped is None:
            return first
        result._releases.append(mapped)
        rest = positions[first:]
        inside = (rest >= mapped.start_offset) & (rest < mapped.end_offset)
        end = count if inside.all() else first + int(np.argmin(inside))  # the records in this file
        local = positions[first:end] - mapped.start_offset
        ends = local + sizes[first:end]
        starts_run = np.flatnonzero(local[1:] != ends[:-1]) + 1  # a record not right after the previous
        run_starts = [0, *starts_run.tolist()]
        run_ends = [*starts_run.tolist(), end - first]
        buffer = mapped.buffer
        local_starts, local_ends = local.tolist(), ends.tolist()
        result.buffers.extend(
            [buffer[local_starts[a] : local_ends[b - 1]] for a, b in zip(run_starts, run_ends, strict=True)]
        )
        first = end
    return None


class PropertiesReader:
    """Reads records' properties text from the CommitLog, keeping the last file pinned until ``close``."""

    def __init__(self, commit_log: CommitLog) -> None:
        self._commit_log = commit_log
        self._mapped: MappedFile | None = None

    def read(self, position: int) -> str | None:
        mapped = self._mapped
        if mapped is None or not mapped.start_offset <= position < mapped.end_offset:
            self.close()
            mapped = self._mapped = self._commit_log.pin(position)
            if mapped is None:
                return None
        buffer = mapped.buffer
        at = position - mapped.start_offset
        (body_length,) = _INT32.unpack_from(buffer, at + BODY_LENGTH_AT)
        topic_at = at + HEAD_SIZE + body_length
        properties_at = topic_at + 1 + buffer[topic_at] + 2
        (length,) = _INT16.unpack_from(buffer, properties_at - 2)
        return bytes(buffer[properties_at : properties_at + length]).decode("utf-8", "replace")

    def close(self) -> None:
        if self._mapped is not None:
            self._mapped.release()
            self._mapped = None
