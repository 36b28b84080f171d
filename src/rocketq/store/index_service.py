"""The IndexFiles of a store: builds keys for dispatched records, answers queries by key and time.

The index is the one part of the store that may fall behind on a full disk. An index file is big (420
MB with RocketMQ's defaults) and made before the keys that need it are written (``_make_room``: a
batch is indexed whole or not at all). When it cannot be made, the keys of the records from there on
are skipped (``skipped_from``; one log line), and the dispatcher goes on: their ConsumeQueue entries,
which consumers need, do not wait for the index. Once an index file can be made again (tried at most
once per ``RETRY_INTERVAL_S``), ``catch_up`` indexes the skipped records from the CommitLog, in order,
before any newer ones. It runs on the dispatcher's thread (never inline on a put's, which may be an
event loop). A restart catches up the same way (dispatch starts where the index ends).

A lone record's keys (a single put's dispatch pass, which runs on the broker's event loop between the
put and the answers it wakes) are kept for later (``build(..., later=True)``) instead of being hashed
and written in that pass: the dispatcher's thread builds them once ``DEFERRED_WAKE_RECORDS`` wait (the
put's dispatch wakes it) or on its idle round (every ``dispatch_interval_ms``, a second by default),
and every query, flush and other build takes them first, in CommitLog order, so a query by key right
after a send's answer finds its message as before. The thread is not woken per put, nor every few
milliseconds: each of its rounds takes the GIL from the event loop, and a broker serving a paced
stream paid for that in its latency. A crash loses nothing: a restart dispatches again from where the
index ends.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import numpy as np

from rocketq.common.record import SysFlag
from rocketq.store import compiled_dispatch
from rocketq.store.config import StoreConfig
from rocketq.store.index_file import IndexFile, index_file_name
from rocketq.store.key_hash import index_key_hashes
from rocketq.store.mapped_file import DiskFullError
from rocketq.store.results import DispatchRequest

if TYPE_CHECKING:
    from rocketq.store.commit_log import CommitLog

log = logging.getLogger(__name__)

RETRY_INTERVAL_S = 1.0
"""While keys are skipped, how often making an index file is tried again."""
DEFERRED_MAX_RECORDS = 1024
"""At most this many records' keys wait for later; the build that would pass it writes them all."""
DEFERRED_WAKE_RECORDS = 256
"""Once this many records' keys wait, the put's dispatch wakes the dispatcher's thread to build them
(``deferred_waiting``), well before a put's own pass would have to (``DEFERRED_MAX_RECORDS``)."""
CATCH_UP_RECORDS = 65_536
"""Skipped records one ``catch_up`` call indexes at most (the dispatcher's thread calls it again)."""
_Keys = tuple[list[int], list[int], list[int]]  # key hashes, CommitLog offsets, store timestamps

# read per record (see rocketq.native.modules on enum members); plain ints, which numpy takes as they are
_ROLLBACK: Final = int(SysFlag.TRANSACTION_ROLLBACK_TYPE)
_TRANSACTION_MASK: Final = int(SysFlag.TRANSACTION_MASK)


def is_indexed(physical_offset: int, sys_flag: int, indexed_until: int) -> bool:
    """The rule for which records get their keys indexed: each record once (those past
    ``indexed_until``, where the index already reaches), never a rolled-back transaction."""
    return physical_offset > indexed_until and sys_flag & _TRANSACTION_MASK != _ROLLBACK


def are_indexed(physical_offsets: np.ndarray, sys_flags: np.ndarray, indexed_until: int) -> np.ndarray:
    """``is_indexed`` over columns of records: a boolean mask."""
    mask: np.ndarray = (physical_offsets > indexed_until) & ((sys_flags & _TRANSACTION_MASK) != _ROLLBACK)
    return mask


class IndexService:
    """Thread safety: writes hold ``_write_lock`` (the dispatcher thread, or a query, flush or build
    taking the keys kept for later); queries may come from any thread."""

    def __init__(self, config: StoreConfig, commit_log: CommitLog, clock: Callable[[], float] = time.monotonic) -> None:
        """``commit_log``: where skipped records are read again; ``clock``: monotonic seconds."""
        self._commit_log = commit_log
        self._clock = clock
        self.skipped_from: int | None = None
        """The CommitLog offset from which records' keys were skipped (no index file could be made)."""
        self._retry_at = 0.0
        self._spares: list[IndexFile] = []  # made by _make_room before the writes that fill the last file
        self.directory: Path = config.index_dir
        self.slot_count = config.max_hash_slot_num
        self.max_entries = config.max_index_num
        # many keys at once are written by compiled code when the store compiles its dispatch
        self._compiled = (
            compiled_dispatch.index_writer() if config.compiled_dispatch and compiled_dispatch.load() else None
        )
        self._files: list[IndexFile] = []
        self._lock = threading.Lock()  # the list of files
        self._write_lock = threading.Lock()  # the writes (the dispatcher, a query or a flush taking the deferred)
        self._deferred: list[DispatchRequest] = []  # records whose keys wait (``build(..., later=True)``)

    def load(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        for path in sorted(p for p in self.directory.iterdir() if p.name.isdigit()):
            self._files.append(IndexFile(path, self.slot_count, self.max_entries, create=False))

    @property
    def files(self) -> list[IndexFile]:
        with self._lock:
            return list(self._files)

    @property
    def deferred_waiting(self) -> bool:
        """Whether enough records' keys wait for later (``DEFERRED_WAKE_RECORDS``) that the dispatcher's
        thread should build them now rather than on its idle round."""
        return len(self._deferred) >= DEFERRED_WAKE_RECORDS

    @property
    def deferred_count(self) -> int:
        """How many records' keys wait for later."""
        return len(self._deferred)

    @property
    def end_phy_offset(self) -> int:
        """CommitLog offset of the last indexed record, or -1 when nothing is indexed."""
        files = self._files
        if files:  # the common case, without copying the list: the last file has entries
            last = files[-1]
            if not last.is_empty:
                return last.end_phy_offset
        for index_file in reversed(self.files):
            if not index_file.is_empty:
                return index_file.end_phy_offset
        return -1

    @property
    def end_timestamp(self) -> int:
        last = self._files[-1] if self._files else None
        return last.end_timestamp if last is not None and not last.is_empty else 0

    def discard_after(self, commit_log_end: int, timestamp: int) -> None:
        """Abnormal recovery: destroy files that index records past the log's end or after
        ``timestamp`` (the checkpoint's index time); dispatch rebuilds them."""
        while self._files:
            last = self._files[-1]
            if last.is_empty or (last.end_phy_offset < commit_log_end and last.end_timestamp <= timestamp):
                if last.is_empty:
                    with self._lock:
                        self._files.pop()
                    last.destroy()
                    continue
                return
            log.warning("index %s: beyond the recovered store, rebuilding it", last.path.name)
            with self._lock:
                self._files.pop()
            last.destroy()

    def _writable_file(self) -> IndexFile:
        last = self._files[-1] if self._files else None
        if last is not None and not last.is_full:
            return last
        following = self._spares.pop(0) if self._spares else self._new_file()
        with self._lock:
            self._files.append(following)
        return following

    def _new_file(self) -> IndexFile:
        """A new index file, named after every other (DiskFullError when it cannot be allocated)."""
        newest = self._spares[-1] if self._spares else self._files[-1] if self._files else None
        now = int(time.time() * 1000)
        name = index_file_name(now)
        while (self.directory / name).exists() or (newest is not None and name <= newest.path.name):
            now += 1
            name = index_file_name(now)
        self.directory.mkdir(parents=True, exist_ok=True)
        return IndexFile(self.directory / name, self.slot_count, self.max_entries, create=True)

    def _make_room(self, count: int) -> None:
        """Make the files ``count`` more keys need before any is written (DiskFullError when one
        cannot be allocated: then none of them is written, and a batch is never indexed in part)."""
        last = self._files[-1] if self._files else None
        room = 0 if last is None else last.max_entries - last.index_count
        if room >= count:  # the common case: the last file has room
            return
        for spare in self._spares:
            room += spare.max_entries - spare.index_count
        while room < count:
            spare = self._new_file()
            self._spares.append(spare)
            room += spare.max_entries - spare.index_count

    def build(self, requests: Sequence[DispatchRequest], *, later: bool = False) -> None:
        """Index UNIQ_KEY and every KEYS entry of each record; skip what is already indexed. With
        ``later``, only keep the records for ``build_deferred`` (see the module doc)."""
        with self._write_lock:
            deferred = self._deferred
            if later and len(deferred) < DEFERRED_MAX_RECORDS:
                deferred.extend(requests)
                return
            if deferred:
                requests = [*deferred, *requests]
                self._deferred = []
            hashes, offsets, stamps = self._keys(requests)
            self._build_hashed(hashes, offsets, stamps)

    def build_deferred(self) -> None:
        """Index the records kept for later, if any (any thread). Takes the write lock even when none
        are kept: the dispatcher thread may be writing the ones it took, which a query must wait for."""
        with self._write_lock:
            self._take_deferred()

    def _take_deferred(self) -> None:
        deferred = self._deferred
        if deferred:
            self._deferred = []
            hashes, offsets, stamps = self._keys(deferred)
            self._build_hashed(hashes, offsets, stamps)

    def _keys(self, requests: Sequence[DispatchRequest]) -> _Keys:
        already = self.end_phy_offset
        keys: list[str] = []
        offsets: list[int] = []
        stamps: list[int] = []
        for request in requests:
            if not is_indexed(request.commit_log_offset, request.sys_flag, already):
                continue
            prefix = request.topic + "#"
            for key in request.keys:
                if key:
                    keys.append(prefix + key)
                    offsets.append(request.commit_log_offset)
                    stamps.append(request.store_timestamp)
            if request.uniq_key:
                keys.append(prefix + request.uniq_key)
                offsets.append(request.commit_log_offset)
                stamps.append(request.store_timestamp)
        return index_key_hashes(keys), offsets, stamps

    def build_hashed(self, hashes: list[int], offsets: list[int], stamps: list[int]) -> None:
        """Index keys given their hashes (``key_hash``), CommitLog offsets and store times, in order
        (after the records kept for later). Skipped (from the first one on) when their index file
        cannot be made: see the module doc."""
        with self._write_lock:
            self._take_deferred()
            self._build_hashed(hashes, offsets, stamps)

    def _build_hashed(self, hashes: list[int], offsets: list[int], stamps: list[int]) -> None:
        if not hashes or self.skipped_from is not None:  # (catch_up, on the dispatcher's thread, fills in)
            return
        try:
            self._write(hashes, offsets, stamps)
        except DiskFullError as exc:
            self._skip(offsets[0], exc)

    def _write(self, hashes: list[int], offsets: list[int], stamps: list[int]) -> None:
        self._make_room(len(hashes))
        while hashes:
            written = self._writable_file().put_hashed(hashes, offsets, stamps, self._compiled)
            hashes, offsets, stamps = hashes[written:], offsets[written:], stamps[written:]

    def _skip(self, offset: int, error: DiskFullError) -> None:
        self._retry_at = self._clock() + RETRY_INTERVAL_S
        if self.skipped_from is None:
            self.skipped_from = offset
            log.error(
                "index: %s; keys of the records from CommitLog offset %d on are not indexed until space returns"
                " (their messages are stored and consumable; queries by key miss them meanwhile)",
                error,
                offset,
            )

    @property
    def can_catch_up(self) -> bool:
        """Skipped records wait to be indexed, and no failure makes ``catch_up`` wait for its retry."""
        return self.skipped_from is not None and self._clock() >= self._retry_at

    def catch_up(self, until: int) -> bool:
        """Index skipped records (``skipped_from``) below CommitLog offset ``until``, at most
        ``CATCH_UP_RECORDS`` of them per call; True once none below ``until`` is left. Tries no more
        than once per ``RETRY_INTERVAL_S`` after a failure. Runs on the dispatcher's thread."""
        with self._write_lock:
            return self._catch_up(until)

    def _catch_up(self, until: int) -> bool:
        offset = self.skipped_from
        if offset is None:
            return True
        if self._clock() < self._retry_at:
            return False
        done = 0
        while offset < until and done < CATCH_UP_RECORDS:
            requests, next_offset = self._commit_log.scan(offset, 1024)
            requests = [request for request in requests if request.commit_log_offset < until]
            try:
                hashes, offsets, stamps = self._keys(requests)
                self._write(hashes, offsets, stamps)
            except DiskFullError as exc:
                self.skipped_from = offset
                self._skip(offset, exc)
                return False
            if next_offset == offset:
                break
            offset = next_offset
            done += len(requests)
        if offset < until and done >= CATCH_UP_RECORDS:
            self.skipped_from = offset
            return False
        log.warning("index: caught up with the records skipped from CommitLog offset %d on", self.skipped_from)
        self.skipped_from = None
        return True

    def query(
        self,
        topic: str,
        key: str,
        max_num: int,
        begin_ms: int,
        end_ms: int,
        accept: Callable[[int], bool] | None = None,
    ) -> list[int]:
        """CommitLog offsets of records indexed under ``key`` and stored within [begin_ms, end_ms] (to the
        second), newest first: at most ``max_num``, and only those ``accept`` accepts when given."""
        self.build_deferred()
        found: list[int] = []
        full_key = f"{topic}#{key}"
        for index_file in reversed(self.files):
            if len(found) >= max_num:
                break
            if index_file.overlaps(begin_ms, end_ms):
                index_file.lookup(full_key, begin_ms, end_ms, max_num, found, accept)
        return found

    def delete_before(self, commit_log_min_offset: int) -> None:
        """Drop whole files whose every entry points below the CommitLog's first offset."""
        while len(self._files) > 1 and self._files[0].end_phy_offset < commit_log_min_offset:
            with self._lock:
                first = self._files.pop(0)
            log.info("index %s: all its records are deleted, removing it", first.path.name)
            first.destroy()

    def flush(self) -> None:
        # Older files were flushed when they filled up; only the last two can be dirty.
        self.build_deferred()
        for index_file in self.files[-2:]:
            index_file.flush()

    def destroy_all(self) -> None:
        with self._write_lock:
            self._deferred = []
        with self._lock:
            files, self._files = self._files + self._spares, []
            self._spares = []
        for index_file in files:
            index_file.destroy()

    def close(self) -> None:
        self.build_deferred()
        with self._lock:
            files, self._files = self._files + self._spares, []
            self._spares = []
        for index_file in files:
            index_file.close()
