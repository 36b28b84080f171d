"""The HA connection's bytes, apart from any socket (RocketMQ's HAService/HAConnection wire format).

A slave opens a plain TCP connection to its master's HA port (no RemotingCommand framing) and writes
8-byte big-endian reports: the end of its CommitLog (how far it has the master's bytes). The master
writes frames: an 8-byte physical offset, a 4-byte body size and that many CommitLog bytes, to be
written at that offset; a frame with size 0 is a heartbeat saying where the master would go on.

Everything here is pure: the readers take bytes as they arrive, in any pieces, and hand back what
is complete; ``Silence`` keeps the time of the last sign of life by an injected clock.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

REPORT: Final = struct.Struct(">q")
"""A slave's report: the end of its CommitLog."""

HEADER: Final = struct.Struct(">qi")
"""A master's frame header: the physical offset of the body, and its size."""

TRANSFER_BATCH_SIZE: Final = 1024 * 1024
"""Bytes per frame at most (haTransferBatchSize). RocketMQ's default is 32 KiB; 1 MiB frames cost both
ends about a third less CPU per MB than 32 KiB ones in a catch-up (fewer appends, dispatches, reports and
loop turns; docs/replication.md#benchmark) and stay within the 4 MiB a RocketMQ slave reads at once."""

MAX_FRAME_BODY: Final = 64 * 1024 * 1024
"""A frame announcing more than this is taken for garbage: the connection is dropped."""


class ProtocolError(Exception):
    """The peer sent bytes that are no HA frame or report (the connection is dropped)."""


def encode_report(offset: int) -> bytes:
    return REPORT.pack(offset)


def encode_frame(offset: int, body: bytes = b"") -> bytes:
    """A frame of ``body`` (a heartbeat when empty) to be written at ``offset``."""
    return HEADER.pack(offset, len(body)) + body


def transfer_start(reported: int, master_end: int, file_size: int) -> int:
    """Where a master starts streaming to a slave that reported ``reported``: there, unless it has
    nothing (0), when it starts at the beginning of the master's last CommitLog file (a new slave
    does not copy the whole history, as in RocketMQ)."""
    if reported > 0:
        return reported
    return max(0, master_end - master_end % file_size)


def chunk_size(offset: int, master_end: int, file_size: int, batch_size: int = TRANSFER_BATCH_SIZE) -> int:
    """How many bytes the next frame from ``offset`` carries: at most ``batch_size``, never past what
    the master has written nor past the end of the file holding ``offset`` (a slave writes each frame
    into one file)."""
    file_end = offset - offset % file_size + file_size
    return max(0, min(batch_size, master_end - offset, file_end - offset))


class ReportReader:
    """The master's side: the newest offset among the complete reports fed so far."""

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, data: bytes) -> int | None:
        """Take ``data``; the newest complete report's offset, or None when none completed."""
        self._pending += data
        complete = len(self._pending) - len(self._pending) % REPORT.size
        if not complete:
            return None
        (offset,) = REPORT.unpack_from(self._pending, complete - REPORT.size)
        del self._pending[:complete]
        if offset < 0:
            raise ProtocolError(f"a slave reported offset {offset}")
        return int(offset)


@dataclass(frozen=True, slots=True)
class Frame:
    offset: int
    body: bytes

    @property
    def end(self) -> int:
        return self.offset + len(self.body)


class FrameReader:
    """The slave's side: the complete frames among the bytes fed so far, in order."""

    def __init__(self, max_body: int = MAX_FRAME_BODY) -> None:
        self._pending = bytearray()
        self._max_body = max_body

    def feed(self, data: bytes) -> list[Frame]:
        self._pending += data
        frames: list[Frame] = []
        at = 0
        pending = self._pending
        while len(pending) - at >= HEADER.size:
            offset, size = HEADER.unpack_from(pending, at)
            if offset < 0 or not 0 <= size <= self._max_body:
                raise ProtocolError(f"bad frame header: offset {offset}, size {size}")
            if len(pending) - at - HEADER.size < size:
                break
            start = at + HEADER.size
            with memoryview(pending) as view:  # one copy of the body (a bytearray slice would be two)
                frames.append(Frame(offset, bytes(view[start : start + size])))
            at = start + size
        del pending[:at]
        return frames


class Silence:
    """How long a peer has been silent, by ``clock`` (monotonic seconds): ``heard`` on every sign
    of life; ``over(limit_s)`` once the silence lasts ``limit_s`` (RocketMQ's haHousekeepingInterval
    for the master, the heartbeat interval for a slave's next report)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.last = clock()

    def heard(self) -> None:
        self.last = self._clock()

    def lasted(self) -> float:
        return self._clock() - self.last

    def over(self, limit_s: float) -> bool:
        return self.lasted() >= limit_s
