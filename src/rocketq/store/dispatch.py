"""The dispatcher (RocketMQ's ReputMessageService): CommitLog -> ConsumeQueues and IndexFiles.

It takes records in CommitLog order from ``dispatched_offset``. A short stretch (below
``dispatch_columnar_min_bytes``: a lone put's pass) is taken as the puts described the records
(``CommitLog.descriptions``), without reading them back; records not described so (wire batches, a
slave's copy, recovery) are read back from the log (``scan``). A long stretch goes through the compiled
scan's columns (``scan_columns``) when it is there, which costs less per record than Python does. It
groups the ConsumeQueue entries by queue so each queue gets one write per batch, indexes keys, and
then tells the arrival listener which queues grew (the broker wakes long-polling pulls with it).
Re-dispatching records that are already in a ConsumeQueue or index is harmless: both skip what they
have, which is what makes recovery and rebuilds simple.

A batch that fails (a file that cannot be made on a full disk) leaves ``dispatched_offset`` where it
was: the thread tries the batch again every ``RETRY_INTERVAL_S`` (nothing is skipped, no entry is
left empty), and logs the failure once per episode, not once per try. Dispatching on a caller's
thread (``try_dispatch_until``) never raises: a failure there is left to the thread.

The work on each batch read (ConsumeQueue writes, listeners, index) is ``DispatchApplier``'s, which is
compiled; this module keeps the thread and the walk along the CommitLog, which stay interpreted.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from rocketq.store.commit_log import CommitLog
from rocketq.store.consume_queue import ConsumeQueue
from rocketq.store.dispatch_apply import ArrivalListener, DispatchApplier
from rocketq.store.index_service import IndexService
from rocketq.store.mapped_file import DiskFullError

log = logging.getLogger(__name__)

BATCH_RECORDS = 4096
RETRY_INTERVAL_S = 0.5
"""How long the thread waits before trying a failed batch again."""


class Dispatcher:
    def __init__(
        self,
        commit_log: CommitLog,
        consume_queue_of: Callable[[str, int], ConsumeQueue],
        index: IndexService | None,
        interval_s: float,
    ) -> None:
        self._commit_log = commit_log
        self._index = index
        self.applier = DispatchApplier(consume_queue_of, index)
        self._interval = interval_s
        # at least this much CommitLog goes through the compiled columnar path (below it, numpy's
        # fixed cost per batch outweighs the per-record Python it saves)
        self._columnar_min_bytes = commit_log.config.dispatch_columnar_min_bytes
        self.dispatched_offset = 0
        self._wakeup = threading.Condition()
        self._pending = False
        self._stopping = False
        self._worker_thread: threading.Thread | None = None
        self._dispatch_lock = threading.Lock()  # the thread and dispatch_now() callers take turns
        self.failing: str | None = None  # why dispatch is stuck at dispatched_offset (None: it is not)

    @property
    def listeners(self) -> list[ArrivalListener]:
        """Told of each batch's queues that grew (the applier's list)."""
        return self.applier.listeners

    @property
    def dispatched_timestamp(self) -> int:
        """Store time of the newest dispatched record."""
        return self.applier.dispatched_timestamp

    @property
    def dispatched_count(self) -> int:
        return self.applier.dispatched_count

    def start(self) -> None:
        """Start the thread (again after ``stop``: the store restarts it after cutting its log back)."""
        self._stopping = self._pending = False
        self._worker_thread = threading.Thread(target=self._run, name="rocketq-dispatch", daemon=True)
        self._worker_thread.start()

    def wake(self) -> None:
        """Called after a put: dispatch without waiting for the next interval."""
        with self._wakeup:
            self._pending = True
            self._wakeup.notify()

    def _run(self) -> None:
        while True:
            with self._wakeup:
                if not self._pending and not self._stopping:
                    self._wakeup.wait(self._interval)
                self._pending = False
                stopping = self._stopping
            try:
                self.dispatch_until(self._commit_log.max_offset)
                self.catch_up_index()
            except Exception as exc:
                self._failed(exc)
                if not stopping:
                    with self._wakeup:
                        self._wakeup.wait(RETRY_INTERVAL_S)
            if stopping:
                return

    def catch_up_index(self) -> bool:
        """Index the keys kept for later (a lone put's, ``IndexService.build``), then what the index
        skipped while no index file could be made (a step of it); True once nothing dispatched is left
        unindexed. The first part does not take the dispatch lock: a put's dispatch on the event loop
        (``try_dispatch_until``) never finds the thread busy with it."""
        if self._index is None:
            return True
        self._index.build_deferred()
        if self._index.skipped_from is None:
            return True
        with self._dispatch_lock:
            return self._index.catch_up(self.dispatched_offset)

    def _failed(self, error: Exception) -> None:
        """Log a failure once per episode (with its traceback when it is not a full disk)."""
        if self.failing is not None:
            return
        self.failing = f"{type(error).__name__}: {error}"
        if isinstance(error, DiskFullError):
            log.error("dispatch stopped at offset %d: %s; retrying", self.dispatched_offset, error)
        else:
            log.exception("dispatch failed at offset %d; retrying", self.dispatched_offset)

    def dispatch_until(self, end_offset: int) -> int:
        """Dispatch every record below ``end_offset``; returns how many records were dispatched.
        Raises what a batch raised (``dispatched_offset`` stays at that batch)."""
        with self._dispatch_lock:
            count = self._dispatch_until(end_offset)
        if self.failing is not None:
            log.warning("dispatch resumed at offset %d (%s is over)", self.dispatched_offset, self.failing)
            self.failing = None
        return count

    def try_dispatch_until(self, end_offset: int) -> bool:
        """Dispatch on the calling thread if the dispatcher is idle and not stuck; False (and nothing
        done, or a failure left to the thread) otherwise. Saves a thread hop between a small put and
        the pulls waiting for it."""
        if self.failing is not None or not self._dispatch_lock.acquire(blocking=False):
            return False
        try:
            self._dispatch_until(end_offset)
        except Exception:  # the thread tries again, and logs it
            return False
        finally:
            self._dispatch_lock.release()
        return True

    def _dispatch_until(self, end_offset: int) -> int:
        applier = self.applier
        count = 0
        commit_log = self._commit_log
        while self.dispatched_offset < end_offset:
            long_stretch = (
                end_offset - self.dispatched_offset >= self._columnar_min_bytes and commit_log.has_columnar_scan
            )
            if not long_stretch:  # the records as their puts described them: nothing to read back
                known = commit_log.descriptions.take(self.dispatched_offset, end_offset, BATCH_RECORDS)
                if known:
                    applier.apply(known)
                    count += len(known)
                    last = known[-1]
                    self.dispatched_offset = last.commit_log_offset + last.size
                    continue
            limit = BATCH_RECORDS
            if long_stretch:  # the compiled scan's columns beat per-record Python over many records
                batch, next_offset = commit_log.scan_columns(self.dispatched_offset, BATCH_RECORDS)
                if batch is not None:
                    commit_log.descriptions.drop_before(next_offset)  # what the scan covered
                    applier.apply_columns(batch)
                    count += len(batch.rows)
                    self.dispatched_offset = next_offset
                    continue
                limit = 1  # the compiled scan left the next record (or a filler) to the Python one
            requests, next_offset = commit_log.scan(self.dispatched_offset, limit)
            if requests:
                applier.apply(requests)
                count += len(requests)
            if next_offset == self.dispatched_offset:
                break
            self.dispatched_offset = next_offset
        return count

    def stop(self) -> None:
        """Dispatch everything written so far, then end the thread."""
        with self._wakeup:
            self._stopping = True
            self._wakeup.notify()
        if self._worker_thread is not None:
            self._worker_thread.join()
