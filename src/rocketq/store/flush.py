"""Flusher threads: CommitLog group commit (SYNC_FLUSH) or write-behind (ASYNC_FLUSH).

SYNC_FLUSH (RocketMQ's GroupCommitService): each put registers (end offset, Future). The flusher
thread takes every request waiting, fsyncs once up to the newest write position, and resolves every
request that fsync covered. Puts arriving during an fsync wait for the next one, so N concurrent
writers share roughly one fsync per round instead of N.

ASYNC_FLUSH (FlushRealTimeService): every ``flush_interval_commit_log_ms`` flush when at least
``flush_commit_log_least_pages`` pages are dirty, and everything at least every
``flush_commit_log_thorough_interval_ms``.

fsync always runs on these threads, never on a caller's event loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

from rocketq.store.config import StoreConfig
from rocketq.store.mapped_file_queue import MappedFileQueue

log = logging.getLogger(__name__)


class CommitLogFlusher:
    def __init__(
        self,
        config: StoreConfig,
        files: MappedFileQueue,
        last_store_timestamp: Callable[[], int],
        on_flushed: Callable[[int], None],
    ) -> None:
        self._config = config
        self._files = files
        self._on_flushed = on_flushed
        self._last_store_timestamp = last_store_timestamp
        self._sync = config.flush_disk_type.value == "SYNC_FLUSH"
        self._requests: list[tuple[int, Future[int]]] = []
        self._wakeup = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="rocketq-commitlog-flush", daemon=True)
        self.flush_count = 0

    def start(self) -> None:
        self._thread.start()

    def request(self, end_offset: int) -> Future[int]:
        """SYNC_FLUSH: a Future resolved with the flushed offset once an fsync covers ``end_offset``."""
        future: Future[int] = Future()
        with self._wakeup:
            self._requests.append((end_offset, future))
            self._wakeup.notify()
        return future

    def wake(self) -> None:
        with self._wakeup:
            self._wakeup.notify()

    def _run(self) -> None:
        try:
            if self._sync:
                self._run_group_commit()
            else:
                self._run_write_behind()
        except Exception:  # a flusher must never die silently
            log.exception("commit log flusher stopped on an error")
            self._fail_waiting(RuntimeError("commit log flusher failed"))

    def _run_group_commit(self) -> None:
        while True:
            with self._wakeup:
                while not self._requests and not self._stopping:
                    self._wakeup.wait(1.0)  # request() and stop() notify; this is only a safety net
                requests, self._requests = self._requests, []
                stopping = self._stopping
            if requests:
                flushed = self._flush(0)
                for end_offset, future in requests:
                    if flushed < end_offset:  # a file rolled mid-flush: flush the rest
                        flushed = self._flush(0)
                    future.set_result(flushed)
            elif stopping:
                return

    def _run_write_behind(self) -> None:
        interval = self._config.flush_interval_commit_log_ms / 1000
        thorough = self._config.flush_commit_log_thorough_interval_ms / 1000
        last_thorough = time.monotonic()
        while True:
            with self._wakeup:
                if not self._stopping:
                    self._wakeup.wait(interval)
                stopping = self._stopping
            least_pages = self._config.flush_commit_log_least_pages
            if stopping or time.monotonic() - last_thorough >= thorough:
                least_pages = 0
                last_thorough = time.monotonic()
            self._flush(least_pages)
            if stopping:
                return

    def _flush(self, least_pages: int) -> int:
        before = self._files.flushed_where
        stamp = self._last_store_timestamp()  # taken first: everything stored by then gets flushed
        flushed = self._files.flush(least_pages)
        if flushed != before:
            self.flush_count += 1
            self._on_flushed(stamp)
        return flushed

    def _fail_waiting(self, error: BaseException) -> None:
        with self._wakeup:
            requests, self._requests = self._requests, []
        for _, future in requests:
            if not future.done():
                future.set_exception(error)

    def stop(self) -> None:
        """Flush what is pending, then end the thread."""
        with self._wakeup:
            self._stopping = True
            self._wakeup.notify()
        self._thread.join()
        self._fail_waiting(RuntimeError("store closed"))


class PeriodicTask:
    """A daemon thread that runs ``action`` every ``interval_s`` (and once more when stopped, for
    flushers; not for the cleaner, which must not delete files on the way out)."""

    def __init__(self, name: str, interval_s: float, action: Callable[[], object], *, run_at_stop: bool = True) -> None:
        self._interval = interval_s
        self._action = action
        self._run_at_stop = run_at_stop
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._run_once()
        if self._run_at_stop:
            self._run_once()

    def _run_once(self) -> None:
        try:
            self._action()
        except Exception:
            log.exception("%s failed; retrying next round", self._thread.name)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
