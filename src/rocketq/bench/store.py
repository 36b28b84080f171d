"""``rocketq bench store``: throughput and latency of the storage engine against the raw disk.

For each body size, in fresh stores under one scratch directory:

- ``raw_write`` / ``raw_fsync``: the machine baseline. The same total bytes as one append run written
  with ``os.write`` in 1 MiB chunks without fsync; and write + fdatasync of one record-sized chunk at
  a time into a preallocated file (what one SYNC_FLUSH put costs at best).
- ``async_append`` (one message per ``put_message``), ``async_append_batch`` (``put_messages`` of
  ``batch`` messages) and ``async_append_wire_batch`` (``measure_batch`` + ``put_batch`` of a
  SEND_BATCH_MESSAGE body of ``batch`` messages, the broker's path for a producer's batch; its
  records also carry the properties the broker adds, ~60 bytes more each; skipped without numba),
  ASYNC_FLUSH, dispatcher running as normal; latency is per put call.
- ``dispatch``: after each append run, the time until the dispatcher has caught up with the CommitLog.
  ``msgs_per_s`` is end to end (first put to last record dispatched); ``drain_per_s`` is the rate at
  which the backlog left at the last put was dispatched.
- ``cq_read``: every queue read sequentially through its ConsumeQueue, 1024 messages per call.
- ``dispatch_rebuild``: the batch store closed, ``consumequeue/`` and ``index/`` deleted, and the
  store reopened: ``start()`` rebuilds both from the CommitLog before returning.
- ``sync_append``: SYNC_FLUSH, ``writers`` coroutines on one event loop each putting one message and
  awaiting its group commit, as the broker does (``GroupedPuts``); ``sync_append_threads``: ``writers`` threads each
  calling ``put_message_and_wait`` (see ``rocketq.bench.store_sync``).
- ``backlog`` (optional): one store grown to ``backlog`` messages; every ``backlog_step`` messages the
  append rate of that step and the latency of random single-message reads.

Messages are built before the clock starts, so the numbers are the store's, not message construction.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocketq.bench import MB, Extra, Measurement, Sink, latency_us
from rocketq.bench.store_sync import SYNC_WRITERS, WRITER_KINDS
from rocketq.bench.store_workload import QUEUES, TOPIC, build_messages, build_wire_batches, stored_bytes
from rocketq.store import compiled_append
from rocketq.store.config import FlushDiskType, StoreConfig
from rocketq.store.message_store import MessageStore
from rocketq.store.results import BatchToStore, GetStatus, MessageToStore, PutMessageResult, PutStatus

log = logging.getLogger(__name__)

READ_BATCH = 1024
RAW_CHUNK = 1024 * 1024
RAW_FSYNC_ITERATIONS = 5000
SYNC_SINGLE_WRITER_MESSAGES = 20_000
SYNC_MESSAGES_PER_WRITER = 5_000
BACKLOG_READS = 1000
BACKLOG_BODY_SIZE = 100

NOTES = (
    "Messages are pre-built before timing (the bench measures the store, not message construction).",
    "Latency is per put/get call. MB = 10^6 bytes of stored records (CommitLog record bytes).",
)


class BenchError(RuntimeError):
    """A benchmark step failed (a put or read did not succeed)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreBenchOptions:
    sizes: tuple[int, ...] = (100, 1024)
    messages: int = 1_000_000
    flush: str = "both"  # "async", "sync" or "both"
    writers: tuple[int, ...] = (1, 32)
    writer_kinds: tuple[str, ...] = WRITER_KINDS  # SYNC_FLUSH: coroutines on a loop, threads
    batch: int = 64
    backlog: int | None = None
    backlog_step: int = 1_000_000
    file_size: int | None = None  # CommitLog file size; None: StoreConfig's default (1 GiB)
    directory: Path | None = None  # parent of the scratch directory; None: the system temp dir

    def sync_messages(self, writers: int) -> int:
        """How many messages a SYNC_FLUSH run with ``writers`` writers puts."""
        if writers == 1:
            return min(self.messages, SYNC_SINGLE_WRITER_MESSAGES)
        return min(self.messages, SYNC_MESSAGES_PER_WRITER * writers)


def _wire_put(store: MessageStore) -> Callable[[BatchToStore], PutMessageResult]:
    def put(batch: BatchToStore) -> PutMessageResult:
        measured = store.measure_batch(batch)
        if measured is None:
            raise BenchError("a bench batch was not accepted by the compiled append")
        return store.put_batch(measured)

    return put


@contextlib.contextmanager
def frozen_gc() -> Iterator[None]:
    """Move pre-built objects out of the collector's way (as a broker never holds millions of them)."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextlib.contextmanager
def quiet(logger_name: str, level: int = logging.ERROR) -> Iterator[None]:
    """Raise a logger's level for the duration (for warnings a step causes on purpose)."""
    logger = logging.getLogger(logger_name)
    before = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(before)


def _check_put(status: PutStatus) -> None:
    if status is not PutStatus.PUT_OK:
        raise BenchError(f"put failed: {status.value}")


class StoreBench:
    """Runs every measurement of ``rocketq bench store`` and hands each to ``emit``."""

    def __init__(self, options: StoreBenchOptions, emit: Sink) -> None:
        self.options = options
        self.emit = emit
        self._root = Path(".")
        self._runs = 0
        self._raw_mb_per_s = 0.0
        self._raw_fsync_per_s = 0.0

    def run(self) -> None:
        """All measurements, in a scratch directory that is removed afterwards."""
        parent = self.options.directory
        if parent is not None:
            parent.mkdir(parents=True, exist_ok=True)
        self._root = Path(tempfile.mkdtemp(prefix="rocketq-bench-", dir=parent))
        try:
            for size in self.options.sizes:
                self._run_size(size)
            if self.options.backlog:
                self.backlog(self.options.backlog)
        finally:
            shutil.rmtree(self._root, ignore_errors=True)

    # -- stores ---------------------------------------------------------------------------------------

    def _config(self, flush: FlushDiskType) -> StoreConfig:
        self._runs += 1
        path = self._root / f"store-{self._runs}"
        if self.options.file_size is None:
            return StoreConfig(store_path_root_dir=path, flush_disk_type=flush)
        return StoreConfig(
            store_path_root_dir=path, flush_disk_type=flush, mapped_file_size_commit_log=self.options.file_size
        )

    @staticmethod
    def _destroy(config: StoreConfig) -> None:
        shutil.rmtree(config.store_path_root_dir, ignore_errors=True)

    def _run_size(self, size: int) -> None:
        options = self.options
        log.info("bench store: %d-byte bodies", size)
        count = max(options.messages, options.sync_messages(max(options.writers)))
        messages = build_messages(size, count)
        with frozen_gc():
            record_bytes = stored_bytes(messages[: options.messages]) / options.messages
            if options.flush in ("async", "both"):
                self.raw_write(size, options.messages, round(record_bytes * options.messages))
                self.async_runs(size, messages[: options.messages])
            if options.flush in ("sync", "both"):
                self.raw_fsync(size, round(record_bytes))
                self.sync_runs(size, messages)
        del messages

    def _report(
        self,
        name: str,
        size: int | None,
        messages: int,
        seconds: float,
        nbytes: int,
        latencies: list[int] | None = None,
        *,
        writers: int = 1,
        batch: int = 1,
        extra: Extra | None = None,
    ) -> Measurement:
        """Build a measurement from raw counts, emit it and return it."""
        measurement = Measurement.from_counts(
            name, size, messages, seconds, nbytes, latencies, writers=writers, batch=batch, extra=extra
        )
        self.emit(measurement)
        return measurement

    # -- machine baseline -----------------------------------------------------------------------------

    def raw_write(self, size: int, messages: int, total: int) -> None:
        """``total`` bytes written to a plain file with ``os.write`` in 1 MiB chunks, no fsync."""
        path = self._root / "raw-write"
        chunk = b"x" * RAW_CHUNK
        latencies: list[int] = []
        clock = time.perf_counter_ns
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            left = total
            began = clock()
            while left > 0:
                piece = chunk if left >= RAW_CHUNK else chunk[:left]
                t = clock()
                os.write(fd, piece)
                latencies.append(clock() - t)
                left -= len(piece)
            seconds = (clock() - began) / 1e9
        finally:
            os.close(fd)
            path.unlink(missing_ok=True)
        extra: Extra = {"bytes": total, "chunk": RAW_CHUNK}
        self._raw_mb_per_s = self._report("raw_write", size, messages, seconds, total, latencies, extra=extra).mb_per_s

    def raw_fsync(self, size: int, chunk_size: int) -> None:
        """write + fdatasync of one record-sized chunk, repeatedly, into a preallocated file."""
        path = self._root / "raw-fsync"
        chunk = b"x" * chunk_size
        iterations = min(RAW_FSYNC_ITERATIONS, max(self.options.sync_messages(1), 100))
        latencies: list[int] = []
        clock = time.perf_counter_ns
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.posix_fallocate(fd, 0, chunk_size * iterations)  # like a store file
            began = clock()
            for i in range(iterations):
                t = clock()
                os.pwrite(fd, chunk, i * chunk_size)
                os.fdatasync(fd)
                latencies.append(clock() - t)
            seconds = (clock() - began) / 1e9
        finally:
            os.close(fd)
            path.unlink(missing_ok=True)
        measured = self._report(
            "raw_fsync", size, iterations, seconds, iterations * chunk_size, latencies, extra={"chunk": chunk_size}
        )
        self._raw_fsync_per_s = measured.msgs_per_s

    # -- ASYNC_FLUSH ----------------------------------------------------------------------------------

    def async_runs(self, size: int, messages: list[MessageToStore]) -> None:
        """Append one per call, in batches and in wire batches (fresh stores); read the batch store,
        then rebuild it."""
        config = self._config(FlushDiskType.ASYNC_FLUSH)
        with MessageStore(config) as store:
            self._append(store, size, "async_append", store.put_message, messages, len(messages), 1)
        self._destroy(config)
        batch = self.options.batch
        if compiled_append.load() is not None:
            wire_batches = build_wire_batches(messages, batch)
            config = self._config(FlushDiskType.ASYNC_FLUSH)
            with MessageStore(config) as store:
                put = _wire_put(store)
                self._append(store, size, "async_append_wire_batch", put, wire_batches, len(messages), batch)
            self._destroy(config)
            del wire_batches
        config = self._config(FlushDiskType.ASYNC_FLUSH)
        with MessageStore(config) as store:
            chunks = [messages[i : i + batch] for i in range(0, len(messages), batch)]
            self._append(store, size, "async_append_batch", store.put_messages, chunks, len(messages), batch)
            self.read_all(store, size)
        self.rebuild(config, size)
        self._destroy(config)

    def _append(
        self,
        store: MessageStore,
        size: int,
        name: str,
        put: Callable[[Any], PutMessageResult],
        units: Sequence[Any],
        count: int,
        batch: int,
    ) -> None:
        """Time ``put`` of every unit (a message, a list of them or a wire batch: ``count`` messages in
        all), then the dispatcher catching up."""
        latencies: list[int] = []
        record = latencies.append
        clock = time.perf_counter_ns
        ok = PutStatus.PUT_OK
        bytes_before = store.stats().put_bytes
        dispatched_before = store.dispatcher.dispatched_count
        began = clock()
        for unit in units:
            t = clock()
            status = put(unit).status
            record(clock() - t)
            if status is not ok:
                _check_put(status)
        ended = clock()
        undispatched = count - (store.dispatcher.dispatched_count - dispatched_before)
        caught_up = self._wait_dispatched(store)
        seconds = (ended - began) / 1e9
        wrote = store.stats().put_bytes - bytes_before
        extra: Extra = {"bytes": wrote}
        if self._raw_mb_per_s:
            extra["vs_raw_write"] = wrote / MB / seconds / self._raw_mb_per_s
        self._report(name, size, count, seconds, wrote, latencies, batch=batch, extra=extra)
        lag = (caught_up - ended) / 1e9
        extra = {"lag_s": lag, "behind_at_last_put": undispatched, "drain_per_s": undispatched / lag if lag else None}
        total = (caught_up - began) / 1e9
        self._report("dispatch", size, count, total, wrote, batch=batch, extra=extra)

    @staticmethod
    def _wait_dispatched(store: MessageStore) -> int:
        """Poll until every appended record is dispatched; returns the ``perf_counter_ns`` then."""
        while True:
            stats = store.stats()
            if stats.dispatched_offset >= stats.commit_log_max_offset:
                return time.perf_counter_ns()
            time.sleep(0.001)

    def read_all(self, store: MessageStore, size: int) -> None:
        """Every queue from offset 0 to its end, ``READ_BATCH`` messages per ``get_messages``."""
        latencies: list[int] = []
        clock = time.perf_counter_ns
        count = total_bytes = 0
        get = store.get_messages
        began = clock()
        for queue_id in range(QUEUES):
            offset = 0
            while True:
                t = clock()
                result = get(TOPIC, queue_id, offset, READ_BATCH)
                found = result.status is GetStatus.FOUND
                if found:
                    count += result.message_count
                    total_bytes += result.total_bytes
                    offset = result.next_begin_offset
                result.release()
                latencies.append(clock() - t)
                if not found:
                    break
        seconds = (clock() - began) / 1e9
        expected = store.stats().put_messages
        if count != expected:
            raise BenchError(f"read {count} messages, {expected} were stored")
        extra: Extra = {"calls": len(latencies)}
        self._report("cq_read", size, count, seconds, total_bytes, latencies, batch=READ_BATCH, extra=extra)

    def rebuild(self, config: StoreConfig, size: int) -> None:
        """Delete the closed store's ConsumeQueues and index; time the ``start()`` that rebuilds them."""
        shutil.rmtree(config.consume_queue_dir)
        shutil.rmtree(config.index_dir, ignore_errors=True)
        store = MessageStore(config)
        with quiet("rocketq.store.message_store"):
            began = time.perf_counter_ns()
            store.start()
            seconds = (time.perf_counter_ns() - began) / 1e9
        try:
            stats = store.stats()
            records = store.dispatcher.dispatched_count
            rebuilt = len(store.recovery.rebuilt) if store.recovery else 0
            if not rebuilt or records == 0:
                raise BenchError("the store did not rebuild its consume queues")
            log_bytes = stats.commit_log_max_offset - stats.commit_log_min_offset
        finally:
            store.close()
        self._report("dispatch_rebuild", size, records, seconds, log_bytes, extra={"queues_rebuilt": rebuilt})

    # -- SYNC_FLUSH -----------------------------------------------------------------------------------

    def sync_runs(self, size: int, messages: list[MessageToStore]) -> None:
        """Each writer kind and count in a fresh SYNC_FLUSH store; the ratio is within one kind."""
        for kind in self.options.writer_kinds:
            rates: dict[int, float] = {}
            name = "sync_append" if kind == "loop" else f"sync_append_{kind}"
            for writers in self.options.writers:
                count = self.options.sync_messages(writers)
                config = self._config(FlushDiskType.SYNC_FLUSH)
                with MessageStore(config) as store:
                    try:
                        seconds, latencies = SYNC_WRITERS[kind](store, messages[:count], writers)
                    except RuntimeError as exc:
                        raise BenchError(str(exc)) from exc
                    flushes = store.flusher.flush_count
                    wrote = store.stats().put_bytes
                self._destroy(config)
                rates[writers] = count / seconds
                extra: Extra = {"fsyncs": flushes, "msgs_per_fsync": count / max(flushes, 1)}
                if writers == 1 and self._raw_fsync_per_s:
                    extra["vs_raw_fsync"] = rates[1] / self._raw_fsync_per_s
                if writers != 1 and 1 in rates:
                    extra["ratio_vs_1_writer"] = rates[writers] / rates[1]
                self._report(name, size, count, seconds, wrote, latencies, writers=writers, extra=extra)

    # -- backlog --------------------------------------------------------------------------------------

    def backlog(self, total: int) -> None:
        """Grow one store to ``total`` messages; per step, append rate and random-read latency."""
        step = self.options.backlog_step
        batch = self.options.batch
        rng = random.Random(42)
        prefix = os.urandom(8).hex().upper()
        config = self._config(FlushDiskType.ASYNC_FLUSH)
        with MessageStore(config) as store:
            done = 0
            while done < total:
                count = min(step, total - done)
                messages = build_messages(BACKLOG_BODY_SIZE, count, done, prefix)
                batches = [messages[i : i + batch] for i in range(0, count, batch)]
                with frozen_gc():
                    seconds, latencies, wrote = self._timed_batches(store, batches)
                    ended = time.perf_counter_ns()
                    lag = (self._wait_dispatched(store) - ended) / 1e9
                del messages, batches
                done += count
                reads = self._random_reads(store, rng)
                read_mean = sum(reads) / len(reads) / 1000
                read_p50, read_p99 = latency_us(reads)
                extra: Extra = {"total": done, "dispatch_lag_s": lag, "read_mean_us": read_mean}
                extra.update(read_p50_us=read_p50, read_p99_us=read_p99)
                self._report("backlog", BACKLOG_BODY_SIZE, count, seconds, wrote, latencies, batch=batch, extra=extra)
        self._destroy(config)

    @staticmethod
    def _timed_batches(store: MessageStore, batches: list[list[MessageToStore]]) -> tuple[float, list[int], int]:
        latencies: list[int] = []
        clock = time.perf_counter_ns
        put_many = store.put_messages
        ok = PutStatus.PUT_OK
        bytes_before = store.stats().put_bytes
        began = clock()
        for chunk in batches:
            t = clock()
            status = put_many(chunk).status
            latencies.append(clock() - t)
            if status is not ok:
                _check_put(status)
        seconds = (clock() - began) / 1e9
        return seconds, latencies, store.stats().put_bytes - bytes_before

    @staticmethod
    def _random_reads(store: MessageStore, rng: random.Random) -> list[int]:
        """``BACKLOG_READS`` single-message reads at random offsets of random queues (ns each)."""
        clock = time.perf_counter_ns
        latencies: list[int] = []
        ends = [store.get_max_offset_in_queue(TOPIC, q) for q in range(QUEUES)]
        for _ in range(BACKLOG_READS):
            queue_id = rng.randrange(QUEUES)
            offset = rng.randrange(ends[queue_id])
            t = clock()
            result = store.get_messages(TOPIC, queue_id, offset, 1)
            found = result.status is GetStatus.FOUND
            result.release()
            latencies.append(clock() - t)
            if not found:
                raise BenchError(f"no message at {TOPIC}-{queue_id} offset {offset}: {result.status.value}")
        return latencies


def run_store_bench(options: StoreBenchOptions, emit: Sink) -> None:
    """Run ``rocketq bench store`` with ``options``, handing every measurement to ``emit``."""
    StoreBench(options, emit).run()
