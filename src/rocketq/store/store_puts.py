"""The writing half of ``MessageStore``: puts into the CommitLog, waiting for their fsync, dispatching.

``StorePuts`` is the base class of ``rocketq.store.message_store.MessageStore`` (which adds the lifecycle,
recovery, a slave's writes, flushing the ConsumeQueues and statistics); its own base is ``StoreReads``.

- ``put_message``/``put_messages``/``put_batch`` are thread safe (one internal put lock) and never
  block on the disk: an append is a copy into a mapped file. They may be called from an event loop
  thread. ``measure_batch`` (checking a producer's wire batch for ``put_batch``) is pure.
  Before appending, a put makes sure the ConsumeQueue files its entries will land in exist
  (``ConsumeQueue.reserve``; an fallocate when one is due): a put is acknowledged only when consumers
  will be able to read it, and is refused with DISK_FULL (``DiskSpace``) when the disk has no room.
  A small put (``dispatch_inline_max_records``) is also dispatched by the calling thread when the
  dispatcher is idle, so arrival listeners run at once. With SYNC_FLUSH every put is fsynced by the
  next group commit; to wait for it, a thread calls ``wait_flushed(result)`` (``put_message_and_wait``
  does both) and an event loop awaits ``flushed_on_loop(result, loop)``.
- The dispatcher and the CommitLog flusher are made here (the puts wake them); ``MessageStore`` starts
  and stops their threads.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import TimeoutError as FutureTimeoutError
from typing import Any, Final

from rocketq.store.commit_log import CommitLog
from rocketq.store.config import StoreConfig
from rocketq.store.disk_space import DiskSpace
from rocketq.store.dispatch import Dispatcher
from rocketq.store.flush import CommitLogFlusher, EventLoop
from rocketq.store.index_service import IndexService
from rocketq.store.mapped_file import DiskFullError
from rocketq.store.queue_table import QueueTable, gets_no_entry, queues_of
from rocketq.store.results import BatchToStore, MeasuredBatch, MessageToStore, PutMessageResult, PutStatus
from rocketq.store.store_reads import StoreReads

_NOT_RUNNING = "store is not running"
_perf_counter: Final = time.perf_counter  # (read twice a put: bound once, not looked up in ``time`` each time)


class StorePuts(StoreReads):
    """Puts of a store: appends, their ConsumeQueue room, their dispatch and their fsync."""

    def __init__(
        self,
        config: StoreConfig,
        commit_log: CommitLog,
        table: QueueTable,
        index: IndexService | None,
        space: DiskSpace,
        on_commit_log_flushed: Callable[[int], None],
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        """``on_commit_log_flushed``: told the store time of the newest record each CommitLog flush covers.
        ``wall_clock``: seconds since the epoch, each record's store time (a broker gives its clock's)."""
        super().__init__(commit_log, table, index)
        self.config = config
        self._wall_clock = wall_clock
        self._sync_flush = config.sync_flush
        self.space = space
        self.dispatcher = Dispatcher(commit_log, self.consume_queue, index, config.dispatch_interval_ms / 1000)
        self.flusher = CommitLogFlusher(
            config, commit_log.files, lambda: self._last_store_timestamp, on_commit_log_flushed
        )
        self._open = False  # puts are taken (the store's lifecycle sets it, with the put lock held)
        self._last_store_timestamp = 0
        self._put_messages = 0
        self._put_bytes = 0
        self._put_latency_max = 0.0

    def put_message(self, message: MessageToStore) -> PutMessageResult:
        return self.put_messages((message,))

    def put_messages(self, messages: Sequence[MessageToStore], *, dispatch: bool = True) -> PutMessageResult:
        """Append messages in order (a batch is refused whole or stored whole). Thread safe; never
        blocks on the disk. With SYNC_FLUSH the next group commit fsyncs it (see ``wait_flushed``).

        ``dispatch=False`` leaves dispatching to the caller's ``dispatch_pending()`` (an event loop
        dispatches all the puts of one iteration at once); the dispatcher thread's interval is the
        backstop."""
        if not messages:
            return PutMessageResult(status=PutStatus.MESSAGE_ILLEGAL, remark="empty batch")
        if len(messages) == 1:
            one = messages[0]
            return self.put_one(
                one.topic, one.queue_id, one.body, one.properties, one.flag, one.sys_flag, one.born_timestamp,
                one.born_host, one.store_host, one.reconsume_times, one.prepared_transaction_offset, dispatch,
            )  # fmt: skip
        topic, queue_id, spread = queues_of(messages)
        return self._put(
            len(messages),
            topic,
            queue_id,
            spread,
            lambda stamp: self.commit_log.append(messages, stamp),
            dispatch,
        )

    def put_one(
        self,
        topic: str,
        queue_id: int,
        body: bytes,
        properties: str,
        flag: int,
        sys_flag: int,
        born_timestamp: int,
        born_host: bytes,
        store_host: bytes,
        reconsume_times: int,
        prepared_transaction_offset: int,
        dispatch: bool,
    ) -> PutMessageResult:
        """``put_messages`` of one message given by its fields (``MessageToStore``'s, in its order), so a
        send of one message makes no message object: ``CommitLog.append_one`` writes it (the general
        ``CommitLog.append`` when that declines: a new topic, a file to roll, a transaction half).
        ``put_messages`` of one message comes here. ``_put`` with the append written in (no closure
        made and called per message): the same steps, in the same order."""
        if self.space.refusal is not None:  # (``_admit``'s test, without its call while the disk has room)
            refusal = self._admit()
            if refusal is not None:
                return refusal
        began = _perf_counter()
        commit_log = self.commit_log
        with commit_log.put_lock:
            if not self._open:
                return PutMessageResult(status=PutStatus.SERVICE_NOT_AVAILABLE, remark=_NOT_RUNNING)
            store_timestamp = int(self._wall_clock() * 1000)
            try:
                if not gets_no_entry(sys_flag):
                    self._reserve(topic, queue_id, 1)
                result = commit_log.append_one(
                    topic, queue_id, body, properties, flag, sys_flag, born_timestamp, born_host, store_host,
                    reconsume_times, prepared_transaction_offset, store_timestamp,
                )  # fmt: skip
                if result is None:
                    message = MessageToStore(
                        topic=topic, queue_id=queue_id, body=body, properties=properties, flag=flag,
                        sys_flag=sys_flag, born_timestamp=born_timestamp, born_host=born_host, store_host=store_host,
                        reconsume_times=reconsume_times, prepared_transaction_offset=prepared_transaction_offset,
                    )  # fmt: skip
                    result = commit_log.append((message,), store_timestamp)
            except DiskFullError as exc:
                return PutMessageResult(status=PutStatus.DISK_FULL, remark=self.space.allocation_failed(exc))
            if result.ok:
                self._last_store_timestamp = store_timestamp
        return self._appended(result, 1, began, dispatch)

    def measure_batch(self, batch: BatchToStore, *, max_body_size: int | None = None) -> MeasuredBatch | None:
        """Check a producer's wire batch for ``put_batch``: its record sizes and whether it asks to
        wait for the flush. None when it must be decoded into ``MessageToStore`` for ``put_messages``
        instead (no compiled append, or an item that path treats specially or refuses, such as a body
        over ``max_body_size``, by default the maximum message size). Pure: any thread."""
        return self.commit_log.measure_batch(batch, max_body_size)

    def put_batch(self, measured: MeasuredBatch, *, dispatch: bool = True) -> PutMessageResult:
        """``put_messages`` for a measured wire batch: the same records, written without a Python
        object per message. Same contract as ``put_messages``."""
        batch = measured.batch
        return self._put(
            len(measured.sizes),
            batch.topic,
            batch.queue_id,
            (),
            lambda stamp: self.commit_log.append_batch(measured, stamp),
            dispatch,
        )

    def put_together(
        self, messages: Sequence[MessageToStore], batches: Sequence[MeasuredBatch], *, dispatch: bool = True
    ) -> PutMessageResult:
        """``messages``, then the measured ``batches`` (``WireBatches.append_together``): one put."""
        wire = self.commit_log.wire_batches
        if not batches or wire is None:  # (no compiled append: measure_batch measured no batch)
            return self.put_messages(messages, dispatch=dispatch)
        count = len(messages) + sum(len(measured.sizes) for measured in batches)
        topic, queue_id, spread = queues_of(messages) if messages else (None, 0, ())
        queues = {*spread, *((measured.batch.topic, measured.batch.queue_id) for measured in batches)}
        if topic is not None:
            queues.discard((topic, queue_id))
        return self._put(
            count, topic, queue_id, queues, lambda stamp: wire.append_together(messages, batches, stamp), dispatch
        )

    def _put(
        self,
        count: int,
        topic: str | None,
        queue_id: int,
        spread: Collection[tuple[str, int]],
        append: Callable[[int], PutMessageResult],
        dispatch: bool,
    ) -> PutMessageResult:
        """Every put but ``put_one`` (which writes these steps out) goes through here: refused while the
        disk is full; else, before its ``count`` records are appended, the ConsumeQueue files that
        ``count`` more entries of its queue (and of the queues in ``spread``, for a batch spread over
        queues) land in are made (``ConsumeQueue.reserve``; ``count`` is an upper bound: transaction
        halves get no entry). So an acknowledged message is one consumers can read; DISK_FULL when
        either cannot get space."""
        refusal = self._admit()
        if refusal is not None:
            return refusal
        began = _perf_counter()
        with self.commit_log.put_lock:
            if not self._open:
                return PutMessageResult(status=PutStatus.SERVICE_NOT_AVAILABLE, remark=_NOT_RUNNING)
            store_timestamp = int(self._wall_clock() * 1000)
            try:
                if topic is not None:
                    self._reserve(topic, queue_id, count)
                for other_topic, other_queue_id in spread:
                    self._reserve(other_topic, other_queue_id, count)
                result = append(store_timestamp)
            except DiskFullError as exc:
                return PutMessageResult(status=PutStatus.DISK_FULL, remark=self.space.allocation_failed(exc))
            if result.ok:
                self._last_store_timestamp = store_timestamp
        return self._appended(result, count, began, dispatch)

    def _admit(self) -> PutMessageResult | None:
        """DISK_FULL while the disk has no room for puts (``DiskSpace``), else None."""
        if self.space.refusal is not None:
            refusal = self.space.admit()
            if refusal is not None:
                return PutMessageResult(status=PutStatus.DISK_FULL, remark=refusal)
        return None

    def _appended(self, result: PutMessageResult, count: int, began: float, dispatch: bool) -> PutMessageResult:
        """After a put's append (the put lock released): its statistics, its dispatch and its fsync wanted."""
        if not result.ok:
            return result
        self._put_messages += count
        self._put_bytes += result.wrote_bytes
        self._put_latency_max = max(self._put_latency_max, _perf_counter() - began)
        if dispatch:
            inline = count <= self.config.dispatch_inline_max_records
            if not (inline and self.dispatcher.try_dispatch_until(result.end_offset)):
                self.dispatcher.wake()
        if self._sync_flush:
            self.flusher.wanted(result.end_offset)
        return result

    def _reserve(self, topic: str, queue_id: int, count: int) -> None:
        """Make the ConsumeQueue files the next ``count`` entries of a queue land in (put lock held)."""
        key: Any = (topic, queue_id)  # (one tuple for both lookups)
        first: int = self.commit_log.queue_offsets.get(key, 0)
        queue = self._queues.get(key) or self._table.get_or_create(topic, queue_id)
        queue.reserve(first, first + count)

    def wait_flushed(self, result: PutMessageResult, timeout_s: float | None = None) -> PutMessageResult:
        """Block until an fsync covers the put (SYNC_FLUSH; at once otherwise); FLUSH_DISK_TIMEOUT after
        the timeout (the store's ``sync_flush_timeout_ms`` by default). For threads, not event loops."""
        if not (self._sync_flush and result.ok):
            return result
        try:
            self.flusher.request(result.end_offset).result(
                self.config.sync_flush_timeout_ms / 1000 if timeout_s is None else timeout_s
            )
        except FutureTimeoutError:
            result.status = PutStatus.FLUSH_DISK_TIMEOUT
        return result

    def flushed_on_loop(self, result: PutMessageResult, loop: EventLoop) -> Any | None:
        """SYNC_FLUSH: an ``asyncio.Future`` of ``loop`` (call this on it) that resolves once an fsync
        covers the put; the waiters of one loop are woken together, once per fsync. None when there is
        nothing to wait for (ASYNC_FLUSH, or the put failed)."""
        if not (self._sync_flush and result.ok):
            return None
        return self.flusher.request_on_loop(result.end_offset, loop)

    def put_message_and_wait(self, message: MessageToStore) -> PutMessageResult:
        """``put_message`` then ``wait_flushed``: for plain threads, never on an event loop."""
        return self.wait_flushed(self.put_message(message))

    def dispatch_pending(self, max_bytes: int) -> None:
        """Dispatch what puts with ``dispatch=False`` left: on the calling thread when it is at most
        ``max_bytes`` of CommitLog and the dispatcher thread is idle, else by waking that thread."""
        end = self.commit_log.max_offset
        pending = end - self.dispatcher.dispatched_offset
        if pending > 0 and (pending > max_bytes or not self.dispatcher.try_dispatch_until(end)):
            self.dispatcher.wake()

    def dispatch_now(self) -> int:
        """Dispatch every record written so far on the calling thread (the dispatcher thread would
        within ``dispatch_interval_ms``), and index what the index skipped for want of space if it
        can now; returns how many records this call dispatched."""
        count = self.dispatcher.dispatch_until(self.commit_log.max_offset)
        while not self.dispatcher.catch_up_index() and self.index is not None and self.index.can_catch_up:
            pass
        return count
