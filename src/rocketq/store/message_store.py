"""MessageStore: the one facade the broker uses (RocketMQ's DefaultMessageStore).

Threading contract:
- Puts (``put_message``/``put_messages``/``put_batch``, waiting for their fsync; the base class
  ``StorePuts`` in ``rocketq.store.store_puts``) are thread safe and never block on the disk.
- Reads (``get_messages``, offsets, lookups, queries; the base class ``StoreReads`` in
  ``rocketq.store.store_reads``) are thread safe and see every record the dispatcher has indexed.
  ``get_messages`` returns views into the mapped files; release the result.
- A slave's writes (``append_replica``, ``truncate_to``) are in ``rocketq.store.replica_log``.
- Background threads: the dispatcher, the CommitLog flusher, the ConsumeQueue/index flusher (which
  also writes the checkpoint) and the cleaner (retention and disk space: ``rocketq.store.retention``).
  fsync happens only on them. ``close()`` stops them after dispatching and flushing everything, and
  removes ``abort``.
- Arrival listeners run on the dispatcher thread: hand work to your loop with
  ``loop.call_soon_threadsafe``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable

from rocketq.store.checkpoint import StoreCheckpoint
from rocketq.store.commit_log import CommitLog
from rocketq.store.config import StoreConfig
from rocketq.store.disk_space import RECHECK_INTERVAL_S, DiskSpace, disk_usage
from rocketq.store.dispatch_apply import ArrivalListener
from rocketq.store.epochs import EpochFile
from rocketq.store.ext_writer import BitMapCalculator, ExtWriter
from rocketq.store.flush import PeriodicTask
from rocketq.store.index_service import IndexService
from rocketq.store.queue_table import QueueTable
from rocketq.store.recovery import RecoveryReport, recover_commit_log, recover_logics
from rocketq.store.replica_log import append_replica_bytes, cut_loaded_files, finish_cut, pending_cut, record_cut
from rocketq.store.results import StoreStats
from rocketq.store.retention import Retention, UnconsumedGuard
from rocketq.store.store_lock import StoreLock
from rocketq.store.store_puts import StorePuts

log = logging.getLogger(__name__)


class MessageStore(StorePuts):
    def __init__(
        self,
        config: StoreConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        """``clock``: monotonic seconds, for how often a refused put looks at the disk again.
        ``wall_clock``: seconds since the epoch, the store time of each record put (a broker gives its
        clock's, so a test's fake clock decides when a delayed message is due)."""
        commit_log = CommitLog(config)
        index = IndexService(config, commit_log, clock) if config.message_index_enable else None
        space = DiskSpace(config, clock)
        super().__init__(config, commit_log, QueueTable(config), index, space, self._on_commit_log_flushed, wall_clock)
        self._clock = clock
        self.checkpoint = StoreCheckpoint(config.checkpoint_path)
        self.epochs = EpochFile(config.epochs_path)  # who wrote which stretch of the log (``epochs``)
        self.retention = Retention(self, self.space)
        self._logics_flusher = PeriodicTask(
            "rocketq-logics-flush", config.flush_interval_consume_queue_ms / 1000, self.flush_logics
        )
        self._clean_lock = threading.Lock()  # one cleaning at a time: retention rounds, clean_expired_consume_queues
        self._cleaner = PeriodicTask("rocketq-clean", self._clean_interval, self._retention_round, run_at_stop=False)
        self._lock = StoreLock(config.lock_path)
        self.recovery: RecoveryReport | None = None

    # -- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> MessageStore:
        """Load files, recover, rebuild what is missing, then start the background threads.

        Raises:
            RuntimeError: The store is open already (``close`` it first).
        """
        if self._open:
            raise RuntimeError(f"store {self.config.store_path_root_dir} is open already")
        config = self.config
        config.store_path_root_dir.mkdir(parents=True, exist_ok=True)
        self._lock.acquire()
        try:
            clean = not config.abort_path.exists()
            self.checkpoint = StoreCheckpoint.load(config.checkpoint_path)
            self.epochs = EpochFile.load(config.epochs_path)
            self.commit_log.files.load()
            self._table.load()
            if self.index is not None:
                self.index.load()
            began = time.monotonic()
            cut_to = pending_cut(config.truncate_path)
            if cut_to is not None:
                cut_loaded_files(self.commit_log, self._table, self.index, self.epochs, cut_to)
            self.recovery = self._recover(clean)
            if cut_to is not None:
                parts = (config, self.commit_log, self._table, self.checkpoint)
                finish_cut(*parts, self.flush_logics, self._store_time_at, cut_to)
            if not clean:
                log.warning(
                    "store %s recovered in %.1f s: %d records checked, %d damaged place(s) cut off, log ends at %d",
                    config.store_path_root_dir,
                    time.monotonic() - began,
                    self.recovery.records_checked,
                    len(self.recovery.damage),
                    self.recovery.commit_log_end,
                )
            config.abort_path.touch()
        except BaseException:
            self._lock.release()
            raise
        self._open = True
        self.dispatcher.start()
        self.flusher.start()
        self._logics_flusher.start()
        self._cleaner.start()
        log.info(
            "store %s started: commit log [%d, %d), %d consume queues, clean shutdown before: %s",
            config.store_path_root_dir,
            self.commit_log.min_offset,
            self.commit_log.max_offset,
            len(self._queues),
            clean,
        )
        return self

    def __enter__(self) -> MessageStore:
        return self.start() if not self._open else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Dispatch and flush everything, write the checkpoint, remove ``abort``. Idempotent. The
        background threads have ended when it returns, also when a step of closing failed."""
        if not self._open:
            return
        with self.commit_log.put_lock:
            self._open = False
        try:
            clean = self._stop_threads()
            self._table.write_registry(force=True)
            self.commit_log.close()
            self._table.close()
            if self.index is not None:
                self.index.close()
            if clean:
                self.config.abort_path.unlink(missing_ok=True)
        finally:
            self._lock.release()
        log.info("store %s closed", self.config.store_path_root_dir)

    def _stop_threads(self) -> bool:
        """End the dispatcher (after it dispatched every record it can), then the flushers (after a last
        flush) and the cleaner: each also when ending one before it raised. True when all was dispatched."""
        clean = False
        with contextlib.ExitStack() as stops:  # (its callbacks run last pushed first)
            stops.callback(self._logics_flusher.stop)
            stops.callback(self._cleaner.stop)
            stops.callback(self.flusher.stop)
            self.dispatcher.stop()
            try:
                self.dispatcher.dispatch_until(self.commit_log.max_offset)
                clean = True
            except Exception as exc:  # the next start recovers as after a crash: it dispatches them
                dispatched = self.dispatcher.dispatched_offset
                log.error("store closing with records from %d not dispatched: %s", dispatched, exc)
        return clean

    # -- recovery -------------------------------------------------------------------------------------

    def _recover(self, clean: bool) -> RecoveryReport:
        config = self.config
        report = recover_commit_log(
            self.commit_log,
            clean_shutdown=clean,
            checkpoint_min_timestamp=self.checkpoint.min_timestamp(with_index=self.index is not None),
            check_crc=config.check_crc_on_recover,
        )
        end = report.commit_log_end
        self.dispatcher.dispatched_offset = recover_logics(
            report, self.commit_log, self._table, self.index, self.checkpoint.index_msg_timestamp
        )
        self.dispatcher.dispatch_until(end)
        self.commit_log.queue_offsets = {key: queue.max_offset for key, queue in self._queues.items()}
        self._last_store_timestamp = self.dispatcher.dispatched_timestamp
        self._table.mark_changed()
        return report

    # -- cutting the log back (a slave whose log diverged from its master's) ----------------------------

    def truncate_to(self, offset: int) -> int:
        """Cut the CommitLog back to ``offset`` (everything from there on is removed) with the
        ConsumeQueue entries and index entries of the records removed, and the epoch entries that
        start past it; returns the new end of the log (``offset``, or less when ``offset`` falls
        inside a record: the log ends before it). Nothing when the log ends at or before ``offset``.

        Crash safe: the offset is first written to ``truncate`` in the store folder (fsynced); the
        store is then closed and started again, and a start that finds that file cuts the log there
        before it recovers, flushes everything and only then removes it. A crash anywhere in between
        leaves a store that the next start cuts back to the same place. The store refuses puts, and
        reads find nothing, while this runs: call it from the thread that serves them (a broker's
        loop), not beside it.
        """
        if offset >= self.commit_log.max_offset:
            return self.commit_log.max_offset
        if offset < 0:
            raise ValueError(f"cannot cut the log back to {offset}")
        log.warning(
            "store %s: cutting the commit log back from %d to %d",
            self.config.store_path_root_dir,
            self.commit_log.max_offset,
            offset,
        )
        record_cut(self.config.truncate_path, offset)
        self.close()
        self.start()
        return self.commit_log.max_offset

    def start_writing(self) -> int:
        """A slave's store about to take puts (its broker becomes master): dispatch every record it
        copied, cut off a record its master sent only part of, and go on numbering each queue from its
        ConsumeQueue's end. Returns the end of the log, where the puts go."""
        self.dispatch_now()
        if self.dispatcher.dispatched_offset < self.commit_log.max_offset:
            self.truncate_to(self.dispatcher.dispatched_offset)
        with self.commit_log.put_lock:
            self.commit_log.queue_offsets = {key: queue.max_offset for key, queue in self._queues.items()}
        return self.commit_log.max_offset

    # -- replication ----------------------------------------------------------------------------------

    def append_replica(self, offset: int, data: bytes | memoryview) -> int:
        """A slave's write: append a master's CommitLog bytes at the same ``offset`` (which must be
        where this log ends; in an empty log it must start a file), then dispatch them as any put, so
        ConsumeQueues, index and message ids come out as the master's. The bytes must not cross a file
        boundary (the master sends each file's bytes apart). Returns the new end of the log.

        Raises:
            ValueError: ``offset`` is not this log's end, or the bytes cross a file boundary.
            DiskFullError: A file could not be allocated (nothing is appended).
        """
        with self.commit_log.put_lock:
            if not self._open:
                raise ValueError("store is not running")
            end = append_replica_bytes(self.commit_log.files, self.commit_log.max_offset, offset, data)
        if not data:
            return end
        self._put_bytes += len(data)
        if not self.dispatcher.try_dispatch_until(end):
            self.dispatcher.wake()
        self._last_store_timestamp = max(self._last_store_timestamp, self.dispatcher.dispatched_timestamp)
        if self._sync_flush:
            self.flusher.wanted(end)
        return end

    # -- topics and listeners -------------------------------------------------------------------------

    def add_arrival_listener(self, listener: ArrivalListener) -> None:
        self.dispatcher.listeners.append(listener)

    def set_unconsumed_guard(self, guard: UnconsumedGuard | None) -> None:
        """Who has not consumed what (the broker's committed offsets): retention under disk pressure
        keeps the files it names (``rocketq.store.retention``)."""
        self.retention.guard = guard

    def set_bit_map_calculator(self, calculator: BitMapCalculator | None) -> None:
        """Give dispatched records of filtered topics ext units with their filter bit maps (needs
        ``enable_consume_queue_ext``; without it, or with None, no units are written)."""
        ext = None
        if calculator is not None and self.config.enable_consume_queue_ext:
            ext = ExtWriter(self.commit_log, self.consume_queue, calculator, self._clock)
        self.dispatcher.applier.ext = ext

    def _retention_round(self) -> int:
        with self._clean_lock:
            return self.retention.run()

    def clean_expired_consume_queues(self) -> int:
        """Delete the ConsumeQueue files whose entries all point below the CommitLog's first offset
        (CLEAN_EXPIRED_CONSUMEQUEUE): files retention has not deleted, such as after CommitLog files
        were removed while the broker was down. A queue's last file stays (it holds the queue's end
        offset). Returns how many files were deleted."""
        with self._clean_lock:
            minimum = self.commit_log.min_offset
            return sum(queue.delete_before(minimum) for queue in self._table.all())

    def delete_topic(self, topic: str) -> None:
        """Remove a topic's ConsumeQueues (its records age out of the CommitLog with the rest)."""
        doomed = self._table.remove_topic(topic)
        with self.commit_log.put_lock:
            for key in doomed:
                self.commit_log.queue_offsets.pop(key, None)

    # -- flushing -------------------------------------------------------------------------------------

    def _on_commit_log_flushed(self, store_timestamp: int) -> None:
        self.checkpoint.physic_msg_timestamp = max(self.checkpoint.physic_msg_timestamp, store_timestamp)

    def flush_logics(self) -> None:
        """Flush ConsumeQueues and the index, then the checkpoint (runs on the logics flush thread)."""
        stamp = self.dispatcher.dispatched_timestamp
        for queue in self._table.all():
            queue.flush(0)
        if self.index is not None:
            self.index.flush()
        if stamp:
            self.checkpoint.logics_msg_timestamp = stamp
            self.checkpoint.index_msg_timestamp = stamp
        self.checkpoint.flush()
        self._table.write_registry()

    # -- statistics -----------------------------------------------------------------------------------

    def disk_used_ratio(self) -> float:
        """Used share of the store's file system (``DiskUsage.used_ratio``)."""
        return disk_usage(self.config.store_path_root_dir).used_ratio

    @property
    def disk_full(self) -> bool:
        """Puts are refused for want of disk space now (``space.refusal`` says why)."""
        return self.space.refusal is not None

    def _clean_interval(self) -> float:
        """Retention runs every ``clean_resource_interval_ms``; every second while puts are refused."""
        return RECHECK_INTERVAL_S if self.disk_full else self.config.clean_resource_interval_ms / 1000

    def stats(self) -> StoreStats:
        return StoreStats(
            commit_log_min_offset=self.commit_log.min_offset,
            commit_log_max_offset=self.commit_log.max_offset,
            commit_log_flushed_offset=self.commit_log.files.flushed_where,
            commit_log_files=len(self.commit_log.files.files),
            dispatched_offset=self.dispatcher.dispatched_offset,
            consume_queues=len(self._queues),
            index_files=len(self.index.files) if self.index else 0,
            put_messages=self._put_messages,
            put_bytes=self._put_bytes,
            get_messages=self._get_messages,
            disk_used_ratio=self.disk_used_ratio(),
            disk_full=self.disk_full,
            put_latency_ms_max=self._put_latency_max * 1000,
        )

    @property
    def is_open(self) -> bool:
        return self._open
