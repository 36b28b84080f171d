"""A directory of fixed-size store files named by the offset of their first byte (the CommitLog's, or
one ConsumeQueue's), as a reader beside a live broker sees it: listed again on demand, since the
broker rolls new files in and retention deletes the oldest."""

from __future__ import annotations

import bisect
import os
from pathlib import Path

from rocketq.store.errors import StoreError


class StoreReadError(StoreError):
    """The store cannot be read as asked (no such directory, files of mixed sizes, damage)."""


class OffsetFiles:
    """A directory of fixed-size files named by the 20-digit offset of their first byte, listed again
    on demand (a file rolled in, or retention deleted the oldest)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.starts: list[int] = []
        self.size = 0
        self.refresh()

    def refresh(self) -> None:
        try:
            names = sorted(int(entry.name) for entry in os.scandir(self.directory) if entry.name.isdigit())
        except FileNotFoundError:
            names = []
        sizes = set()
        for start in names:
            try:
                sizes.add((self.directory / file_name(start)).stat().st_size)
            except FileNotFoundError:  # deleted since the listing: the next refresh drops it
                continue
        sizes.discard(0)
        if len(sizes) > 1:
            raise StoreReadError(f"{self.directory}: files of different sizes {sorted(sizes)}")
        self.starts = names
        self.size = sizes.pop() if sizes else 0

    def find(self, offset: int) -> int | None:
        """The start of the file holding byte ``offset``, listing again once when none does."""
        for attempt in range(2):
            index = bisect.bisect_right(self.starts, offset) - 1
            if index >= 0 and offset < self.starts[index] + self.size:
                return self.starts[index]
            if attempt == 0:
                self.refresh()
        return None

    @property
    def min_offset(self) -> int:
        return self.starts[0] if self.starts else 0

    def path(self, start: int) -> Path:
        return self.directory / file_name(start)


def file_name(start: int) -> str:
    """A CommitLog or ConsumeQueue file's name: the offset of its first byte, 20 digits."""
    return f"{start:020d}"
