"""An ordered run of equal-size MappedFiles forming one logical byte space (RocketMQ's MappedFileQueue).

File ``k`` covers offsets ``[start_k, start_k + file_size)`` and is named by ``start_k``. Offsets are
absolute across the queue, so after old files are deleted the first file may start far above 0.

Files may be made ahead of the writes that need them (``reserve``): the store makes the ConsumeQueue
file an entry will land in before it appends the entry's record, so a full disk refuses the put instead
of leaving an acknowledged message that no consumer can find. Such files wait beside the queue (empty,
invisible to readers) until the writer rolls into them.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections.abc import Callable
from pathlib import Path

from rocketq.store.errors import OTHER_FILE_SIZES, StoreError
from rocketq.store.mapped_file import MappedFile, file_name

log = logging.getLogger(__name__)


class MappedFileQueue:
    """Thread safety: the list of files is guarded by a lock; appends come from one writer at a time."""

    def __init__(self, directory: Path, file_size: int) -> None:
        self.directory = directory
        self.file_size = file_size
        self._files: list[MappedFile] = []
        self._starts: list[int] = []
        self._lock = threading.Lock()
        self._ahead: list[MappedFile] = []  # made by reserve(), not written yet (the writer rolls into them)
        self._grow_lock = threading.Lock()  # reserve() and the writer's rolls take turns
        self.reserved_end = 0  # where the last file, made or reserved, ends (0: no file yet)
        self.flushed_where = 0

    # -- loading --------------------------------------------------------------------------------------

    def load(self) -> None:
        """Map every existing file in the directory, oldest first. Sizes must match the configuration."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for leftover in self.directory.glob("*.creating"):
            log.warning("%s: removing %s, a file whose creation a crash interrupted", self.directory, leftover.name)
            leftover.unlink()
        names = sorted(p.name for p in self.directory.iterdir() if p.name.isdigit())
        for name in names:
            path = self.directory / name
            if path.stat().st_size != self.file_size:
                raise StoreError(
                    f"{path}: size {path.stat().st_size} is not the configured file size {self.file_size};"
                    f" {OTHER_FILE_SIZES}"
                )
            mapped = MappedFile(path, self.file_size, create=False)
            mapped.wrote_position = mapped.flushed_position = self.file_size
            self._append_file(mapped)
        for previous, following in zip(self._files, self._files[1:], strict=False):
            if following.start_offset != previous.end_offset:
                log.warning("%s: gap before %s", self.directory, following.path.name)

    def _append_file(self, mapped: MappedFile) -> None:
        self._files.append(mapped)
        self._starts.append(mapped.start_offset)
        self.reserved_end = max(self.reserved_end, mapped.end_offset)

    # -- access ---------------------------------------------------------------------------------------

    @property
    def files(self) -> list[MappedFile]:
        with self._lock:
            return list(self._files)

    def last_file(self) -> MappedFile | None:
        return self._files[-1] if self._files else None

    def first_file(self) -> MappedFile | None:
        return self._files[0] if self._files else None

    def create_file(self, start_offset: int) -> MappedFile:
        """Create and map the file starting at ``start_offset`` (raises DiskFullError when no space)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        mapped = MappedFile(self.directory / file_name(start_offset), self.file_size, create=True)
        with self._lock:
            self._append_file(mapped)
        return mapped

    def last_file_for_write(self) -> MappedFile:
        """The file to append to: the last one being written, or the next (the first) when it is full
        (there is none), taken from the files ``reserve`` made or else created now (DiskFullError when no
        space). Empty files after one that is not full were made by a put that reserved room for several
        appends at once (``CommitLog.reserve_files``): the file before them is written first."""
        files = self._files
        if files:
            index = len(files) - 1
            while index > 0 and files[index].wrote_position == 0 and not files[index - 1].is_full:
                index -= 1
            current = files[index]
            if not current.is_full:
                return current
            start = current.end_offset
        else:
            start = self.flushed_where
        with self._grow_lock:
            while self._ahead and self._ahead[0].start_offset < start:  # reserved for a start that never came
                self._ahead.pop(0).destroy()
            if self._ahead and self._ahead[0].start_offset == start:
                following = self._ahead.pop(0)
                with self._lock:
                    self._append_file(following)
                return following
            return self.create_file(start)

    def reserve(self, end_offset: int, first_start: int) -> None:
        """Make every file that writes up to ``end_offset`` will need now (``first_start``: where the
        first file starts when there is none yet). Cheap when they exist; called by another thread than
        the writer's (which takes them in ``last_file_for_write``).

        Raises:
            DiskFullError: A file could not be allocated (the ones made before it stay reserved).
        """
        if end_offset <= self.reserved_end:
            return
        with self._grow_lock:
            while self.reserved_end < end_offset:
                last = self._ahead[-1] if self._ahead else self.last_file()
                start = first_start if last is None else last.end_offset
                self.directory.mkdir(parents=True, exist_ok=True)
                made = MappedFile(self.directory / file_name(start), self.file_size, create=True)
                self._ahead.append(made)
                self.reserved_end = made.end_offset

    def find(self, offset: int) -> MappedFile | None:
        """The file holding absolute ``offset``, or None. The last file (the one written, where a pull
        that caught up reads) is seen without the lock: the list's last item is read in one step (the
        list may be emptied meanwhile, when its files are dropped from the front)."""
        try:
            last = self._files[-1]
        except IndexError:
            return None
        if last.start_offset <= offset < last.end_offset:
            return last
        with self._lock:
            index = bisect.bisect_right(self._starts, offset) - 1
            if index < 0:
                return None
            mapped = self._files[index]
        return mapped if offset < mapped.end_offset else None

    @property
    def min_offset(self) -> int:
        first = self.first_file()
        return first.start_offset if first else 0

    @property
    def max_offset(self) -> int:
        """One past the last written byte."""
        last = self.last_file()
        return last.start_offset + last.wrote_position if last else 0

    @property
    def flushed_offset(self) -> int:
        return self.flushed_where

    # -- flushing -------------------------------------------------------------------------------------

    def flush(self, least_pages: int = 0) -> int:
        """Flush the file holding ``flushed_where`` (and any full files before the write position).

        Returns the new flushed offset.
        """
        while True:
            mapped = self.find(self.flushed_where)
            if mapped is None:
                last = self.last_file()
                if last is not None and self.flushed_where < last.start_offset:
                    mapped = self.find(last.start_offset)
                if mapped is None:
                    return self.flushed_where
            position = mapped.flush(least_pages)
            new_where = mapped.start_offset + position
            self.flushed_where = max(self.flushed_where, new_where)
            if position < mapped.file_size:
                return self.flushed_where

    # -- recovery and deletion ------------------------------------------------------------------------

    def truncate(self, offset: int, *, zero_tail: bool = True) -> None:
        """Recovery: make ``offset`` the end of the data; zero the rest, delete files past it.

        ``zero_tail=False`` skips zeroing the last file past ``offset`` (a scan of up to a whole file):
        for a log closed cleanly, whose files were created zeroed and only ever written in order."""
        with self._lock:
            keep = [f for f in self._files if f.start_offset <= offset]
            drop = [f for f in self._files if f not in keep]
            self._files = keep
            self._starts = [f.start_offset for f in keep]
        for mapped in drop:
            log.warning("%s: deleting %s, past the recovered end %d", self.directory, mapped.path.name, offset)
            mapped.destroy()
        self._drop_ahead()
        last = self.last_file()
        if last is not None and offset < last.end_offset:
            if zero_tail:
                last.truncate_to(max(0, offset - last.start_offset))
            else:
                last.wrote_position = offset - last.start_offset
                last.flushed_position = min(last.flushed_position, last.wrote_position)
        self.flushed_where = offset

    def _drop_ahead(self) -> None:
        """Delete the reserved files (recovery, destruction) and reset ``reserved_end``."""
        with self._grow_lock:
            ahead, self._ahead = self._ahead, []
            last = self.last_file()
            self.reserved_end = last.end_offset if last is not None else 0
        for mapped in ahead:
            mapped.destroy()

    def drop_last(self, count: int) -> None:
        """Delete the newest ``count`` files (unused ones just created for a batch that cannot fit)."""
        if count <= 0:
            return
        with self._lock:
            dropped, self._files = self._files[-count:], self._files[:-count]
            self._starts = self._starts[:-count]
        for mapped in dropped:
            mapped.destroy()
        self._drop_ahead()

    def delete_files(self, should_delete: Callable[[MappedFile], bool], *, keep_last: bool = True) -> int:
        """Delete leading files while ``should_delete(file)`` holds; never the file being written."""
        deleted = 0
        while True:
            with self._lock:
                if not self._files or (keep_last and len(self._files) == 1):
                    return deleted
                first = self._files[0]
            if not should_delete(first):
                return deleted
            with self._lock:
                self._files.pop(0)
                self._starts.pop(0)
            first.destroy()
            deleted += 1

    def destroy_all(self) -> None:
        with self._lock:
            files, self._files, self._starts = self._files, [], []
        for mapped in files:
            mapped.destroy()
        self._drop_ahead()
        self.flushed_where = 0

    def close(self) -> None:
        with self._lock:
            files, self._files, self._starts = self._files, [], []
        with self._grow_lock:
            ahead, self._ahead = self._ahead, []
        for mapped in files + ahead:
            mapped.close()
