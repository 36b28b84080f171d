"""How a SYNC_FLUSH append reaches the CommitLog's files: its records are built in a scratch buffer,
copied into each file they go to with ``MappedFile.write_at`` (``pwrite``), and only then published by
moving the files' write positions, so a failed write publishes nothing (``mapped_file`` says why not
through the map, ``CommitLog.staged`` why only with SYNC_FLUSH).

Appends run one at a time (the CommitLog's ``put_lock``), so one ``Staging`` buffer serves them all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rocketq.store.mapped_file import MappedFile
from rocketq.store.mapped_file_queue import MappedFileQueue

_INITIAL_BYTES = 64 * 1024


@dataclass(slots=True)
class Segment:
    """``stage[start:end]`` goes to ``mapped`` at file position ``position``; after the write the file's
    write position becomes ``publish`` (its size, when the segment ends with the filler)."""

    mapped: MappedFile
    position: int
    start: int
    end: int
    publish: int


class Staging:
    def __init__(self) -> None:
        self._allocate(_INITIAL_BYTES)

    def _allocate(self, size: int) -> None:
        data = bytearray(size)
        self._view = memoryview(data)
        self._array = np.frombuffer(data, dtype=np.uint8)

    def buffer(self, size: int) -> tuple[np.ndarray, memoryview]:
        """The scratch buffer, at least ``size`` bytes long (its contents are left over from before),
        as an array (for the compiled writers) and as a memoryview of the same bytes (for ``struct``)."""
        if len(self._view) < size:
            self._allocate(max(size, 2 * len(self._view)))
        return self._array, self._view


def write_and_publish(stage: memoryview | None, segments: list[Segment], files: MappedFileQueue) -> None:
    """Write every segment from ``stage`` (None: the records are in the files' maps already), then
    publish them in log order: readers and the dispatcher see the bytes from then on.

    Raises what ``write_at`` raises, with nothing published and the files the append rolled into (every
    segment's file but the first) dropped from ``files``: an empty file after one without its filler
    would otherwise become the write target, and recovery would cut the log at that gap."""
    if stage is not None:
        try:
            for segment in segments:
                segment.mapped.write_at(segment.position, stage[segment.start : segment.end])
        except BaseException:
            if len(segments) > 1:
                files.drop_last(len(segments) - 1)
            raise
    for segment in segments:
        segment.mapped.wrote_position = segment.publish
