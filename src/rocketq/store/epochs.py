"""Leader epochs of a CommitLog (as RocketMQ 5's controller mode keeps them): which master wrote which
stretch of the log.

Every time a broker becomes master it starts a new epoch at the end of its log: an entry
``(epoch, start_offset)``. The bytes from one entry's start to the next entry's start (or to the log's
end for the last one) were written by the master of that epoch. A slave copies its master's entries
along with its bytes, so two brokers whose entry lists hold the same ``(epoch, start_offset)`` hold the
same bytes in that epoch, up to where the shorter of the two stretches ends; past that point their
logs may differ (``common_offset``). A former master that rejoins as a slave cuts its log back there
before it appends its new master's bytes.

The entries live in ``<storePathRootDir>/epochs``, one ``epoch start_offset`` line each, written
atomically (``config_file.write_json_atomically``'s temp file, fsync and rename). Pure apart from
``EpochFile.load``/``save``; thread safe for one writer (the broker's loop) and any readers.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

FILE_NAME = "epochs"


@dataclass(frozen=True, slots=True, order=True)
class EpochEntry:
    epoch: int
    start_offset: int


def parse_entries(text: str) -> list[EpochEntry]:
    """The entries of an ``epochs`` file's text (blank lines and ``#`` comments skipped).

    Raises:
        ValueError: A line is not two integers, or the entries do not grow in both epoch and offset.
    """
    entries: list[EpochEntry] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"line {number}: expected 'epoch start_offset', got {line!r}")
        entries.append(EpochEntry(int(parts[0]), int(parts[1])))
    check_entries(entries)
    return entries


def check_entries(entries: Sequence[EpochEntry]) -> None:
    """Raises ValueError unless epochs strictly grow and start offsets never shrink (and are >= 0)."""
    for previous, entry in itertools.pairwise(entries):
        if entry.epoch <= previous.epoch or entry.start_offset < previous.start_offset:
            raise ValueError(f"epoch entry {entry} does not follow {previous}")
    if entries and (entries[0].epoch < 0 or entries[0].start_offset < 0):
        raise ValueError(f"epoch entry {entries[0]} is negative")


def epoch_end(entries: Sequence[EpochEntry], index: int, log_end: int) -> int:
    """Where the stretch of ``entries[index]`` ends: the next entry's start, else ``log_end``."""
    return entries[index + 1].start_offset if index + 1 < len(entries) else log_end


def common_offset(
    local: Sequence[EpochEntry], local_end: int, remote: Sequence[EpochEntry], remote_end: int
) -> int | None:
    """How far a log (``local``, ending at ``local_end``) is known to hold the same bytes as another
    (``remote``, ending at ``remote_end``): the end of the shorter stretch of their newest shared entry
    (same epoch, same start). 0 when they share no entry but both have some (nothing is known to be
    shared); None when ``local`` has no entries (a log from before epochs were kept, or empty: nothing
    can be said, and nothing is cut)."""
    if not local:
        return None
    remote_index = {entry: index for index, entry in enumerate(remote)}
    for index in range(len(local) - 1, -1, -1):
        found = remote_index.get(local[index])
        if found is not None:
            return min(epoch_end(local, index, local_end), epoch_end(remote, found, remote_end))
    return 0


def entries_up_to(entries: Iterable[EpochEntry], end: int) -> list[EpochEntry]:
    """The entries that start at or before ``end`` (a log cut back to ``end`` keeps these)."""
    return [entry for entry in entries if entry.start_offset <= end]


def with_new_epoch(entries: Sequence[EpochEntry], epoch: int, start_offset: int) -> list[EpochEntry]:
    """``entries`` cut to ``start_offset`` and followed by ``(epoch, start_offset)``; an entry that
    starts there already (an epoch in which nothing was written) is replaced.

    Raises:
        ValueError: ``epoch`` is not above every kept entry's.
    """
    kept = [entry for entry in entries if entry.start_offset < start_offset]
    if kept and epoch <= kept[-1].epoch:
        raise ValueError(f"epoch {epoch} is not above the last one, {kept[-1].epoch}")
    return [*kept, EpochEntry(epoch, start_offset)]


class EpochFile:
    """The store's epoch entries and their file. ``entries`` is replaced whole on each change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[EpochEntry] = []

    @classmethod
    def load(cls, path: Path) -> EpochFile:
        """Read ``path`` (no entries when it does not exist).

        Raises:
            ValueError: The file is damaged (it is never left half written: a damaged one was edited).
        """
        epochs = cls(path)
        try:
            text = path.read_text(encoding="ascii")
        except FileNotFoundError:
            return epochs
        try:
            epochs.entries = parse_entries(text)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
        return epochs

    @property
    def last(self) -> EpochEntry | None:
        return self.entries[-1] if self.entries else None

    @property
    def last_epoch(self) -> int:
        return self.entries[-1].epoch if self.entries else 0

    def replace(self, entries: Sequence[EpochEntry]) -> None:
        """Make ``entries`` the file's, durably (temp file, fsync, rename, fsync of the folder)."""
        check_entries(entries)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(f"{entry.epoch} {entry.start_offset}\n" for entry in entries)
        temp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, text.encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, self.path)
        fsync_directory(self.path.parent)
        self.entries = list(entries)

    def begin(self, epoch: int, start_offset: int) -> None:
        """Start ``epoch`` at ``start_offset`` (this broker becomes its master)."""
        self.replace(with_new_epoch(self.entries, epoch, start_offset))
        log.info("epoch %d starts at offset %d", epoch, start_offset)

    def cut(self, end: int) -> None:
        """Forget the entries that start past ``end`` (the log was cut back to ``end``)."""
        kept = entries_up_to(self.entries, end)
        if kept != self.entries:
            self.replace(kept)


def fsync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
