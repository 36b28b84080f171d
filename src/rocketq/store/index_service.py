"""The IndexFiles of a store: builds keys for dispatched records, answers queries by key and time."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from rocketq.common.record import SysFlag
from rocketq.store import compiled_dispatch
from rocketq.store.config import StoreConfig
from rocketq.store.index_file import IndexFile, index_file_name
from rocketq.store.key_hash import index_key_hashes
from rocketq.store.results import DispatchRequest

log = logging.getLogger(__name__)

_ROLLBACK = SysFlag.TRANSACTION_ROLLBACK_TYPE


def is_indexed(physical_offset: int, sys_flag: int, indexed_until: int) -> bool:
    """The rule for which records get their keys indexed: each record once (those past
    ``indexed_until``, where the index already reaches), never a rolled-back transaction."""
    return physical_offset > indexed_until and sys_flag & SysFlag.TRANSACTION_MASK != _ROLLBACK


def are_indexed(physical_offsets: np.ndarray, sys_flags: np.ndarray, indexed_until: int) -> np.ndarray:
    """``is_indexed`` over columns of records: a boolean mask."""
    mask: np.ndarray = (physical_offsets > indexed_until) & ((sys_flags & SysFlag.TRANSACTION_MASK) != _ROLLBACK)
    return mask


class IndexService:
    """Thread safety: the dispatcher thread writes; queries may come from any thread."""

    def __init__(self, config: StoreConfig) -> None:
        self.directory: Path = config.index_dir
        self.slot_count = config.max_hash_slot_num
        self.max_entries = config.max_index_num
        # many keys at once are written by compiled code when the store compiles its dispatch
        self._compiled = (
            compiled_dispatch.index_writer() if config.compiled_dispatch and compiled_dispatch.load() else None
        )
        self._files: list[IndexFile] = []
        self._lock = threading.Lock()

    def load(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        for path in sorted(p for p in self.directory.iterdir() if p.name.isdigit()):
            self._files.append(IndexFile(path, self.slot_count, self.max_entries, create=False))

    @property
    def files(self) -> list[IndexFile]:
        with self._lock:
            return list(self._files)

    @property
    def end_phy_offset(self) -> int:
        """CommitLog offset of the last indexed record, or -1 when nothing is indexed."""
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
        now = int(time.time() * 1000)
        name = index_file_name(now)
        while (self.directory / name).exists() or (last is not None and name <= last.path.name):
            now += 1
            name = index_file_name(now)
        self.directory.mkdir(parents=True, exist_ok=True)
        created = IndexFile(self.directory / name, self.slot_count, self.max_entries, create=True)
        with self._lock:
            self._files.append(created)
        return created

    def build(self, requests: Sequence[DispatchRequest]) -> None:
        """Index UNIQ_KEY and every KEYS entry of each record; skip what is already indexed."""
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
        self.build_hashed(index_key_hashes(keys), offsets, stamps)

    def build_hashed(self, hashes: list[int], offsets: list[int], stamps: list[int]) -> None:
        """Index keys given their hashes (``key_hash``), CommitLog offsets and store times, in order."""
        while hashes:
            written = self._writable_file().put_hashed(hashes, offsets, stamps, self._compiled)
            hashes, offsets, stamps = hashes[written:], offsets[written:], stamps[written:]

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
        for index_file in self.files[-2:]:
            index_file.flush()

    def destroy_all(self) -> None:
        with self._lock:
            files, self._files = self._files, []
        for index_file in files:
            index_file.destroy()

    def close(self) -> None:
        with self._lock:
            files, self._files = self._files, []
        for index_file in files:
            index_file.close()
