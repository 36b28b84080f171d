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

The work on each batch (ConsumeQueue writes, listeners, index) is ``DispatchApplier``'s. This module is
compiled, one batch per call (``dispatch_batch``), so a lone put's dispatch on the event loop
(``try_dispatch_until``) runs no interpreted code; the thread and its walk over a backlog, batch after
batch, stay interpreted (``rocketq.store.dispatch_thread``: see ``rocketq.native.modules``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from rocketq.store import dispatch_thread
from rocketq.store.commit_log import CommitLog
from rocketq.store.consume_queue import ConsumeQueue
from rocketq.store.dispatch_apply import BATCH_RECORDS, ArrivalListener, DispatchApplier
from rocketq.store.index_service import IndexService
from rocketq.store.mapped_file import DiskFullError

log = logging.getLogger(__name__)


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
        self._worker_thread = threading.Thread(
            target=dispatch_thread.run, args=(self,), name="rocketq-dispatch", daemon=True
        )
        self._worker_thread.start()

    def wake(self) -> None:
        """Called after a put that left work for the thread: dispatch (and index) without waiting for
        the idle round (``interval_s``)."""
        with self._wakeup:
            self._pending = True
            self._wakeup.notify()

    def next_wake(self) -> bool:
        """The thread's wait for a ``wake`` (or the interval, or ``stop``); True when it should stop
        after this pass."""
        with self._wakeup:
            if not self._pending and not self._stopping:
                self._wakeup.wait(self._interval)
            self._pending = False
            return self._stopping

    def wait_retry(self) -> None:
        """The thread's pause before trying a failed batch again."""
        with self._wakeup:
            self._wakeup.wait(dispatch_thread.RETRY_INTERVAL_S)

    def commit_log_end(self) -> int:
        """Where the CommitLog ends: what the thread dispatches up to."""
        return self._commit_log.max_offset

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

    def failed(self, error: Exception) -> None:
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
            count = dispatch_thread.walk(self, end_offset)
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
        try:  # (short: the caller dispatches at most a few batches here)
            while self.dispatched_offset < end_offset and self.dispatch_batch(end_offset) >= 0:
                pass
        except Exception:  # the thread tries again, and logs it
            return False
        finally:
            self._dispatch_lock.release()
        index = self._index
        if index is not None and index.deferred_waiting:  # lone puts' keys piled up: the thread builds them
            self.wake()
        return True

    def dispatch_batch(self, end_offset: int) -> int:
        """Dispatch the next batch of records below ``end_offset`` (hold the dispatch lock); returns how
        many records it dispatched, -1 when it could not move on (the record there is not complete)."""
        applier = self.applier
        commit_log = self._commit_log
        start = self.dispatched_offset
        long_stretch = end_offset - start >= self._columnar_min_bytes and commit_log.has_columnar_scan
        if not long_stretch:  # the records as their puts described them: nothing to read back
            applied, applied_end = applier.apply_described(commit_log.descriptions, start, end_offset)
            if applied:
                self.dispatched_offset = applied_end
                return applied
        limit = BATCH_RECORDS
        if long_stretch:  # the compiled scan's columns beat per-record Python over many records
            batch, next_offset = commit_log.scan_columns(start, BATCH_RECORDS)
            if batch is not None:
                commit_log.descriptions.drop_before(next_offset)  # what the scan covered
                applier.apply_columns(batch)
                self.dispatched_offset = next_offset
                return len(batch.rows)
            limit = 1  # the compiled scan left the next record (or a filler) to the Python one
        requests, next_offset = commit_log.scan(start, limit)
        if requests:
            applier.apply(requests)
        if next_offset == start:
            return -1
        self.dispatched_offset = next_offset
        return len(requests)

    def stop(self) -> None:
        """Dispatch everything written so far, then end the thread."""
        with self._wakeup:
            self._stopping = True
            self._wakeup.notify()
        if self._worker_thread is not None:
            self._worker_thread.join()
