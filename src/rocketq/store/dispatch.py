"""The dispatcher (RocketMQ's ReputMessageService): CommitLog -> ConsumeQueues and IndexFiles.

It reads records in CommitLog order from ``dispatched_offset``, groups the ConsumeQueue entries by
queue so each queue gets one write per batch, indexes keys, and then tells the arrival listener
which queues grew (the broker wakes long-polling pulls with it). Re-dispatching records that are
already in a ConsumeQueue or index is harmless: both skip what they have, which is what makes
recovery and rebuilds simple.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

import numpy as np

from rocketq.common.record import NOT_QUEUED_TRANSACTIONS, SysFlag
from rocketq.store import compiled_dispatch as columns
from rocketq.store.commit_log import ColumnBatch, CommitLog
from rocketq.store.consume_queue import ENTRY_SIZE, ConsumeQueue, Entry
from rocketq.store.index_service import IndexService, are_indexed, is_indexed
from rocketq.store.results import DispatchRequest

log = logging.getLogger(__name__)

ArrivalListener = Callable[[str, int, int, int], None]
"""(topic, queue_id, max queue offset (exclusive), store timestamp of the newest record)."""

_NOT_IN_QUEUE = NOT_QUEUED_TRANSACTIONS
BATCH_RECORDS = 4096
COLUMNAR_MIN_RECORDS = 16
"""Shorter compiled-scan batches are applied record by record: the columnar path's fixed cost (numpy
for the index keys, array set-up) breaks even at about this many records."""
_Record = tuple[
    str, int, int, int, int, int, int
]  # topic, queue id, queue offset, physical offset, size, tags, sys flag


class Dispatcher:
    def __init__(
        self,
        commit_log: CommitLog,
        consume_queue_of: Callable[[str, int], ConsumeQueue],
        index: IndexService | None,
        interval_s: float,
    ) -> None:
        self._commit_log = commit_log
        self._consume_queue_of = consume_queue_of
        self._index = index
        self._interval = interval_s
        # at least this much CommitLog goes through the compiled columnar path (below it, numpy's
        # fixed cost per batch outweighs the per-record Python it saves)
        self._columnar_min_bytes = commit_log.config.dispatch_columnar_min_bytes
        self.dispatched_offset = 0
        self.dispatched_timestamp = 0  # store time of the newest dispatched record
        self.listeners: list[ArrivalListener] = []
        self._wakeup = threading.Condition()
        self._pending = False
        self._stopping = False
        self._worker_thread: threading.Thread | None = None
        self._dispatch_lock = threading.Lock()  # the thread and dispatch_now() callers take turns
        self.dispatched_count = 0

    def start(self) -> None:
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
            except Exception:
                log.exception("dispatch failed at offset %d; retrying", self.dispatched_offset)
                if not stopping:
                    self._wakeup_after_error()
            if stopping:
                return

    def _wakeup_after_error(self) -> None:
        with self._wakeup:
            self._wakeup.wait(0.5)

    def dispatch_until(self, end_offset: int) -> int:
        """Dispatch every record below ``end_offset``; returns how many records were dispatched."""
        with self._dispatch_lock:
            return self._dispatch_until(end_offset)

    def try_dispatch_until(self, end_offset: int) -> bool:
        """Dispatch on the calling thread if the dispatcher is idle; False (nothing done) if it is busy.
        Saves a thread hop between a small put and the pulls waiting for it."""
        if not self._dispatch_lock.acquire(blocking=False):
            return False
        try:
            self._dispatch_until(end_offset)
        finally:
            self._dispatch_lock.release()
        return True

    def _dispatch_until(self, end_offset: int) -> int:
        count = 0
        while self.dispatched_offset < end_offset:
            limit = BATCH_RECORDS
            if end_offset - self.dispatched_offset >= self._columnar_min_bytes and self._commit_log.has_columnar_scan:
                batch, next_offset = self._commit_log.scan_columns(self.dispatched_offset, BATCH_RECORDS)
                if batch is not None:
                    self.apply_columns(batch)
                    count += len(batch.rows)
                    self.dispatched_offset = next_offset
                    continue
                limit = 1  # the compiled scan left the next record (or a filler) to the Python one
            requests, next_offset = self._commit_log.scan(self.dispatched_offset, limit)
            if requests:
                self.apply(requests)
                count += len(requests)
            if next_offset == self.dispatched_offset:
                break
            self.dispatched_offset = next_offset
        return count

    def apply(self, requests: list[DispatchRequest]) -> None:
        """Write one batch of records into the ConsumeQueues, notify the arrival listeners, then index
        the batch's keys."""
        arrived = self._put_records(
            (r.topic, r.queue_id, r.queue_offset, r.commit_log_offset, r.size, r.tags_code, r.sys_flag)
            for r in requests
        )
        self.dispatched_timestamp = requests[-1].store_timestamp
        # Listeners (the pulls held for these queues) first: they read the ConsumeQueues, not the index,
        # and a lone message's consumer should not wait for its keys to be hashed.
        self._notify(arrived)
        if self._index is not None:
            self._index.build(requests)
        self.dispatched_count += len(requests)

    def _put_records(self, records: Iterable[_Record]) -> dict[tuple[str, int], int]:
        """ConsumeQueue entries for records in log order, each queue's contiguous run in one write;
        returns each queue's new max offset."""
        by_queue: dict[tuple[str, int], tuple[int, list[Entry]]] = {}
        for topic, queue_id, queue_offset, physical, size, tags_code, sys_flag in records:
            if sys_flag & SysFlag.TRANSACTION_MASK in _NOT_IN_QUEUE:
                continue
            key = (topic, queue_id)
            entry = (physical, size, tags_code)
            batch = by_queue.get(key)
            if batch is None:
                by_queue[key] = (queue_offset, [entry])
            elif batch[0] + len(batch[1]) == queue_offset:
                batch[1].append(entry)
            else:  # not contiguous (rebuilt queue, or records out of order): flush what we have
                self._put(key, *batch)
                by_queue[key] = (queue_offset, [entry])
        for key, (first_offset, entries) in by_queue.items():
            self._put(key, first_offset, entries)
        return {key: first_offset + len(entries) for key, (first_offset, entries) in by_queue.items()}

    def _notify(self, arrived: dict[tuple[str, int], int]) -> None:
        for (topic, queue_id), max_offset in arrived.items():
            for listener in self.listeners:
                try:
                    listener(topic, queue_id, max_offset, self.dispatched_timestamp)
                except Exception:
                    log.exception("arrival listener failed for %s-%d", topic, queue_id)

    def _apply_rows(self, batch: ColumnBatch) -> None:
        """``apply_columns`` for a short batch, record by record (numpy's fixed cost would dominate)."""
        topics = batch.topics
        rows = batch.rows.tolist()
        arrived = self._put_records(
            (topics[topic], queue_id, queue_offset, physical, size, tags_code, sys_flag)
            for physical, size, queue_id, queue_offset, sys_flag, _, topic, tags_code in rows
        )
        self.dispatched_timestamp = rows[-1][columns.STORE_TIMESTAMP]
        self._notify(arrived)
        if self._index is not None and len(batch.key_hashes):
            already = self._index.end_phy_offset
            hashes: list[int] = []
            offsets: list[int] = []
            stamps: list[int] = []
            for key_hash, record in zip(batch.key_hashes.tolist(), batch.key_records.tolist(), strict=True):
                row = rows[record]
                if is_indexed(row[columns.PHYSICAL], row[columns.SYS_FLAG], already):
                    hashes.append(key_hash)
                    offsets.append(row[columns.PHYSICAL])
                    stamps.append(row[columns.STORE_TIMESTAMP])
            self._index.build_hashed(hashes, offsets, stamps)
        self.dispatched_count += len(rows)

    def apply_columns(self, batch: ColumnBatch) -> None:
        """``apply`` for records the compiled scan parsed: each queue's entries grouped and packed by
        compiled code (``group_entries``) and written as one block, the listeners told, the index keys
        (already hashed) indexed; no per-record Python."""
        rows = batch.rows
        if len(rows) < COLUMNAR_MIN_RECORDS:
            self._apply_rows(batch)
            return
        group = columns.entry_grouper()
        entries = np.empty(len(rows) * ENTRY_SIZE, dtype=np.uint8)
        runs = np.empty((len(rows), len(columns.RUN)), dtype=np.int64)
        count = group(rows, entries, runs)
        block = entries.tobytes()
        arrived: dict[tuple[str, int], int] = {}
        topics = batch.topics
        for start, end, topic, queue_id, first_offset, end_physical in runs[:count].tolist():
            key = (topics[topic], queue_id)
            self._consume_queue_of(*key).put_block(
                first_offset, block[start * ENTRY_SIZE : end * ENTRY_SIZE], end_physical
            )
            arrived[key] = first_offset + end - start
        self.dispatched_timestamp = int(rows[-1, columns.STORE_TIMESTAMP])
        self._notify(arrived)
        if self._index is not None and len(batch.key_hashes):
            records = batch.key_records
            physical = rows[records, columns.PHYSICAL]
            keep = are_indexed(physical, rows[records, columns.SYS_FLAG], self._index.end_phy_offset)
            self._index.build_hashed(
                batch.key_hashes[keep].tolist(),
                physical[keep].tolist(),
                rows[records, columns.STORE_TIMESTAMP][keep].tolist(),
            )
        self.dispatched_count += len(rows)

    def _put(self, key: tuple[str, int], first_offset: int, entries: list[Entry]) -> None:
        self._consume_queue_of(*key).put(first_offset, entries)

    def stop(self) -> None:
        """Dispatch everything written so far, then end the thread."""
        with self._wakeup:
            self._stopping = True
            self._wakeup.notify()
        if self._worker_thread is not None:
            self._worker_thread.join()
