"""One fixed-size memory-mapped file, named by the 20-digit offset of its first byte.

Files are allocated in full when created (``posix_fallocate``), so writing through the map can never
hit a full disk: ENOSPC surfaces once, at creation, as ``DiskFullError``, and not as a SIGBUS later.

Readers pin a file with ``hold()`` and unpin it with ``release()``. ``destroy()`` marks the file dead;
it is unmapped, closed and unlinked only when the last holder releases it. A ``memoryview`` of a live
``mmap`` keeps it from closing (``BufferError``): a view that outlives its reader's hold (a pull answer's
records, still being written to a slow client: ``GetMessageResult.take_buffers``) keeps its bytes
readable, and the file is then closed and unlinked at once but unmapped only when the last such view
is gone (the ``mmap`` object is freed with it).

Flushing uses ``os.fdatasync`` on the file descriptor: on Linux it writes back pages dirtied through
the shared mapping, and unlike ``mmap.flush`` it releases the GIL, so a flusher thread does not stall
the threads that append.

``write_at`` copies bytes into the file with ``pwrite`` instead of storing them through the map (the
CommitLog's SYNC_FLUSH appends; RocketMQ's ``transientStorePoolEnable`` also writes with the file
channel). Both go through the same page cache, so readers of the map see the bytes at once. Stores
through the map leave its pages mapped writable, and every ``fdatasync`` must then write-protect each
page it cleans, with a TLB shootdown (an interrupt of every core running the process), and the next
store into that page takes a fault: with SYNC_FLUSH that is every put, and it cost the group commit a
third of its rate.
"""

from __future__ import annotations

import errno
import logging
import mmap
import os
import threading
from pathlib import Path

from rocketq.store.errors import OTHER_FILE_SIZES, StoreError

log = logging.getLogger(__name__)

OS_PAGE_SIZE = 4096
FILE_NAME_DIGITS = 20


class DiskFullError(StoreError):
    """A new store file could not be allocated because the disk is full."""


def file_name(start_offset: int) -> str:
    return f"{start_offset:0{FILE_NAME_DIGITS}d}"


class MappedFile:
    """A fixed-size file mapped into memory, with write/flush positions and reference counting.

    Thread safety: one writer thread at a time appends (the owner's lock); any thread may read bytes
    below ``wrote_position``; ``flush`` may run on another thread concurrently with appends.
    """

    def __init__(self, path: Path, file_size: int, *, create: bool) -> None:
        self.path = path
        self.file_size = file_size
        self.start_offset = int(path.name)
        self.wrote_position = 0
        self.flushed_position = 0
        self._refs = 1  # the owner's own reference, dropped by destroy()
        self._alive = True
        self._lock = threading.Lock()
        # A new file is allocated under a temporary name and renamed into place, so a crash while
        # creating it never leaves a short file with a real name behind.
        creating = path.with_name(path.name + ".creating")
        self._fd = os.open(creating if create else path, os.O_RDWR | (os.O_CREAT | os.O_TRUNC if create else 0), 0o644)
        try:
            if create:
                self._allocate()
                os.rename(creating, path)
            elif os.fstat(self._fd).st_size != file_size:
                actual = os.fstat(self._fd).st_size
                raise StoreError(f"{path}: size {actual} is not the configured {file_size}; {OTHER_FILE_SIZES}")
            self.mm = mmap.mmap(self._fd, file_size, access=mmap.ACCESS_WRITE)
        except BaseException:
            os.close(self._fd)
            if create:
                creating.unlink(missing_ok=True)
            raise
        self.buffer = memoryview(self.mm)

    def _allocate(self) -> None:
        try:
            os.posix_fallocate(self._fd, 0, self.file_size)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise DiskFullError(f"no space to allocate {self.path} ({self.file_size} bytes)") from exc
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                raise
            os.ftruncate(self._fd, self.file_size)  # filesystems without fallocate

    @property
    def end_offset(self) -> int:
        return self.start_offset + self.file_size

    @property
    def remaining(self) -> int:
        return self.file_size - self.wrote_position

    @property
    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    def write_at(self, position: int, data: bytes | bytearray | memoryview) -> None:
        """Copy ``data`` into the file at ``position`` with ``pwrite`` (not through the map). Does not
        move ``wrote_position``: the caller publishes the bytes once they are all written.

        Raises:
            DiskFullError: The filesystem has no room (a file that could not be allocated up front).
            OSError: Any other write error (the bytes past ``wrote_position`` are then garbage, which
                the next append overwrites and recovery cuts off).
        """
        view = memoryview(data)
        done, size = 0, view.nbytes
        try:
            while done < size:
                done += os.pwrite(self._fd, view[done:], position + done)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise DiskFullError(f"{self.path}: {exc.strerror} writing {size} bytes at {position}") from exc
            raise
        finally:
            view.release()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Append raw bytes at the write position (the caller checked they fit)."""
        position = self.wrote_position
        self.buffer[position : position + len(data)] = data
        self.wrote_position = position + len(data)

    def dirty_pages(self) -> int:
        return (self.wrote_position // OS_PAGE_SIZE) - (self.flushed_position // OS_PAGE_SIZE)

    def flush(self, least_pages: int = 0) -> int:
        """fsync when at least ``least_pages`` dirty pages are pending (0: whenever anything is).

        Returns the flushed position. Safe to call concurrently with appends.
        """
        target = self.wrote_position
        if target <= self.flushed_position:
            return self.flushed_position
        if least_pages > 0 and not self.is_full and self.dirty_pages() < least_pages:
            return self.flushed_position
        if not self.hold():
            return self.flushed_position
        try:
            os.fdatasync(self._fd)
        finally:
            self.release()
        self.flushed_position = max(self.flushed_position, target)
        return self.flushed_position

    # -- reference counting -------------------------------------------------------------------------

    def hold(self) -> bool:
        """Pin the file for reading; False when it is already destroyed."""
        with self._lock:
            if not self._alive:
                return False
            self._refs += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._refs -= 1
            done = self._refs == 0
        if done:
            self._cleanup()

    def destroy(self) -> None:
        """Delete the file once no reader holds it (now, when nobody does)."""
        with self._lock:
            if not self._alive:
                return
            self._alive = False
        self.release()

    @property
    def is_alive(self) -> bool:
        return self._alive

    def close(self) -> None:
        """Unmap and close without deleting (clean store shutdown); a view still alive (see above) keeps
        the map until it is gone."""
        self.buffer.release()
        try:
            self.mm.close()
        except BufferError:
            log.info("%s: closed while views of it are still being written; unmapped when they are done", self.path)
        os.close(self._fd)
        self._fd = -1

    def _cleanup(self) -> None:
        if self._fd >= 0:
            self.close()
        self.path.unlink(missing_ok=True)
        log.info("deleted %s", self.path)

    def truncate_to(self, position: int) -> None:
        """Recovery: forget everything from ``position`` on and zero it, so old bytes never reappear."""
        chunk = 4 * 1024 * 1024
        zeros = bytes(chunk)
        for start in range(position, self.file_size, chunk):
            end = min(start + chunk, self.file_size)
            if self.buffer[start:end] != zeros[: end - start]:
                self.buffer[start:end] = zeros[: end - start]
        self.wrote_position = position
        self.flushed_position = min(self.flushed_position, position)

    def modified_time(self) -> float:
        """The file's mtime (seconds), used for retention by age."""
        return os.stat(self.path).st_mtime

    def __repr__(self) -> str:
        return f"MappedFile({self.path.name}, wrote={self.wrote_position}, flushed={self.flushed_position})"
