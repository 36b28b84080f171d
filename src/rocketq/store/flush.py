"""Flusher threads: CommitLog group commit (SYNC_FLUSH) or write-behind (ASYNC_FLUSH).

SYNC_FLUSH (RocketMQ's GroupCommitService): every put tells the flusher how far the log now reaches
(``wanted``); the flusher thread fsyncs once up to the newest write position and then releases every
waiter that fsync covered. Puts arriving during an fsync are covered by the next one, so N concurrent
writers share roughly one fsync per round instead of N. Waiting is separate from putting: a thread
blocks on ``request``'s Future; an event loop awaits ``request_on_loop``'s future, and the waiters of
one loop are released by a single ``call_soon_threadsafe`` per fsync, not one wake-up each. That
waiting is ``OffsetWaiters``, which replication shares: a SYNC_MASTER's puts wait the same way for the
offset a slave acknowledged (``rocketq.replication.master``).

ASYNC_FLUSH (FlushRealTimeService): every ``flush_interval_commit_log_ms`` flush when at least
``flush_commit_log_least_pages`` pages are dirty, and everything at least every
``flush_commit_log_thorough_interval_ms``.

fsync always runs on these threads, never on a caller's event loop.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

from rocketq.store.config import StoreConfig
from rocketq.store.mapped_file_queue import MappedFileQueue

log = logging.getLogger(__name__)

STALLED_RETRY_S = 0.1
"""How long the group commit waits before trying again when an fsync round made no progress."""


class LoopFuture(Protocol):
    """What the flusher needs of an ``asyncio.Future`` (the store does not import asyncio)."""

    def done(self) -> bool: ...
    def set_result(self, result: Any, /) -> None: ...
    def set_exception(self, exception: BaseException, /) -> None: ...


class EventLoop(Protocol):
    """What the flusher needs of an ``asyncio`` event loop."""

    def create_future(self) -> Any: ...
    def call_soon_threadsafe(self, callback: Callable[..., object], *args: Any) -> Any: ...


def _settle(futures: list[LoopFuture], flushed: int, error: BaseException | None) -> None:
    """Runs on the waiters' loop: resolve each future still waiting (a timed-out one is done)."""
    for future in futures:
        if not future.done():
            if error is None:
                future.set_result(flushed)
            else:
                future.set_exception(error)


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
        self._sync = config.sync_flush
        self._lock = threading.Lock()
        self._wakeup = threading.Condition(self._lock)
        self._wanted = 0  # the highest end offset a put asked to have fsynced
        self._flushed = 0  # what the last group commit covered
        self._idle = False  # the group-commit thread is waiting for a put (so wanted() must notify)
        self.waiters = OffsetWaiters()  # puts waiting for their fsync
        self._stopping = False
        self._worker_thread = threading.Thread(target=self._run, name="rocketq-commitlog-flush", daemon=True)
        self.flush_count = 0

    def start(self) -> None:
        """Start the thread (again after ``stop``: the store restarts it after cutting its log back)."""
        self._flushed = self._files.flushed_where  # recovery has set it by now
        self._wanted = min(self._wanted, self._flushed)
        self.waiters.rewind(min(self.waiters.reached, self._flushed))  # (a log cut back: less is flushed)
        self.waiters.advance(self._flushed)
        self._stopping = False
        if self._worker_thread.ident is not None:  # (a thread runs once)
            self._worker_thread = threading.Thread(target=self._run, name="rocketq-commitlog-flush", daemon=True)
        self._worker_thread.start()

    # -- SYNC_FLUSH: callers --------------------------------------------------------------------------

    def wanted(self, end_offset: int) -> None:
        """SYNC_FLUSH: the log now reaches ``end_offset``; have it fsynced soon (every put calls this,
        whether or not anybody waits)."""
        with self._lock:
            if end_offset > self._wanted:
                self._wanted = end_offset
                if self._idle:
                    self._idle = False
                    self._wakeup.notify()

    def request(self, end_offset: int) -> Future[int]:
        """SYNC_FLUSH, for threads: a Future resolved with the flushed offset once an fsync covers
        ``end_offset``."""
        return self.waiters.request(end_offset)

    def request_on_loop(self, end_offset: int, loop: EventLoop) -> Any:
        """SYNC_FLUSH, for an event loop (call on that loop): an ``asyncio.Future`` of ``loop``
        resolved with the flushed offset once an fsync covers ``end_offset``."""
        return self.waiters.request_on_loop(end_offset, loop)

    def wake(self) -> None:
        with self._lock:
            self._wakeup.notify()

    # -- the thread -----------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            if self._sync:
                self._run_group_commit()
            else:
                self._run_write_behind()
        except Exception as exc:  # a flusher must never die silently
            log.exception("commit log flusher stopped on an error")
            self._fail_waiting(RuntimeError(f"commit log flusher failed: {exc}"))

    def _run_group_commit(self) -> None:
        while True:
            with self._lock:
                while self._wanted <= self._flushed and not self._stopping:
                    self._idle = True
                    self._wakeup.wait(1.0)  # wanted() and stop() notify; this is only a safety net
                self._idle = False
                stopping = self._stopping
            before = self._flushed
            flushed = self._flush(0)  # covers everything written so far, across rolled files
            with self._lock:
                if flushed <= before and self._wanted > flushed and not stopping:
                    # nothing more could be flushed (a file went away under us?): do not spin
                    log.warning("group commit stuck at %d, %d wanted; retrying", flushed, self._wanted)
                    self._wakeup.wait(STALLED_RETRY_S)
                self._flushed = max(self._flushed, flushed)
            self.waiters.advance(flushed)
            if stopping:
                return

    def _run_write_behind(self) -> None:
        interval = self._config.flush_interval_commit_log_ms / 1000
        thorough = self._config.flush_commit_log_thorough_interval_ms / 1000
        last_thorough = time.monotonic()
        while True:
            with self._lock:
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
        self.waiters.fail(error)

    def stop(self) -> None:
        """Flush what is pending, then end the thread."""
        with self._lock:
            self._stopping = True
            self._wakeup.notify()
        self._worker_thread.join()
        self._fail_waiting(RuntimeError("store closed"))


def _split_covered(waiters: list[tuple[int, Any]], flushed: int) -> tuple[list[Any], list[tuple[int, Any]]]:
    """The futures of the waiters ``flushed`` covers, and the waiters still waiting."""
    covered = [future for end, future in waiters if end <= flushed]
    return covered, [(end, future) for end, future in waiters if end > flushed]


def _call_on_loop(loop: EventLoop, futures: list[LoopFuture], flushed: int, error: BaseException | None) -> None:
    with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
        loop.call_soon_threadsafe(_settle, futures, flushed, error)


class OffsetWaiters:
    """Futures waiting for an offset that only grows (how far the CommitLog is fsynced, how far a slave
    has acknowledged it) to reach theirs: ``advance`` releases every waiter the new offset covers, the
    thread waiters with their Futures and the waiters of each event loop with one
    ``call_soon_threadsafe`` per loop. ``fail`` fails every waiter, and every later one, with an error.
    Thread safe: any thread may wait, advance or fail."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reached = 0
        self._thread_waiters: list[tuple[int, Future[int]]] = []
        self._loop_waiters: dict[EventLoop, list[tuple[int, LoopFuture]]] = {}
        self._failure: BaseException | None = None

    def request(self, end_offset: int) -> Future[int]:
        """For threads: a Future resolved with the offset reached once it covers ``end_offset``."""
        future: Future[int] = Future()
        self._wait(end_offset, future, None)
        return future

    def request_on_loop(self, end_offset: int, loop: EventLoop) -> Any:
        """For an event loop (call on that loop): an ``asyncio.Future`` of ``loop`` resolved with the
        offset reached once it covers ``end_offset``."""
        future = loop.create_future()
        self._wait(end_offset, future, loop)
        return future

    def _wait(self, end_offset: int, future: Any, loop: EventLoop | None) -> None:
        """Resolve ``future`` now (failed, or already reached), or file it with the thread waiters
        (``loop`` None) or with ``loop``'s."""
        with self._lock:
            if self._failure is not None:
                future.set_exception(self._failure)
            elif self.reached >= end_offset:
                future.set_result(self.reached)
            elif loop is None:
                self._thread_waiters.append((end_offset, future))
            else:
                self._loop_waiters.setdefault(loop, []).append((end_offset, future))

    def advance(self, offset: int) -> None:
        """The offset now reaches ``offset``: release the waiters it covers."""
        with self._lock:
            if offset <= self.reached and not self._thread_waiters and not self._loop_waiters:
                return
            self.reached = max(self.reached, offset)
            reached = self.reached
            threads, self._thread_waiters = _split_covered(self._thread_waiters, reached)
            loops, still_waiting = {}, {}
            for loop, waiters in self._loop_waiters.items():
                loops[loop], rest = _split_covered(waiters, reached)
                if rest:
                    still_waiting[loop] = rest
            self._loop_waiters = still_waiting
        for future in threads:
            if not future.done():
                future.set_result(reached)
        for loop, futures in loops.items():
            if futures:
                _call_on_loop(loop, futures, reached, None)

    def rewind(self, offset: int) -> None:
        """The log was cut back: from now on ``offset`` is what is reached (waiters beyond it wait on)."""
        with self._lock:
            self.reached = offset

    def fail(self, error: BaseException) -> None:
        """Fail every waiter, and every later one, with ``error``."""
        with self._lock:
            self._failure = error
            threads, self._thread_waiters = self._thread_waiters, []
            loops, self._loop_waiters = self._loop_waiters, {}
        for _, future in threads:
            if not future.done():
                future.set_exception(error)
        for loop, waiters in loops.items():
            _call_on_loop(loop, [future for _, future in waiters], 0, error)


class PeriodicTask:
    """A daemon thread that runs ``action`` every ``interval_s`` (and once more when stopped, for
    flushers; not for the cleaner, which must not delete files on the way out). ``interval_s`` may be a
    function, asked before each wait (the cleaner runs more often under disk pressure)."""

    def __init__(
        self,
        name: str,
        interval_s: float | Callable[[], float],
        action: Callable[[], object],
        *,
        run_at_stop: bool = True,
    ) -> None:
        self._interval: Callable[[], float] = interval_s if callable(interval_s) else lambda: interval_s
        self._action = action
        self._run_at_stop = run_at_stop
        self._stop = threading.Event()
        self._worker_thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Start the thread (again after ``stop``)."""
        if self._worker_thread.is_alive():
            raise RuntimeError(f"{self._worker_thread.name} runs already")
        if self._worker_thread.ident is not None:  # (a thread runs once)
            self._stop = threading.Event()
            self._worker_thread = threading.Thread(target=self._run, name=self._worker_thread.name, daemon=True)
        self._worker_thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval()):
            self._run_once()
        if self._run_at_stop:
            self._run_once()

    def _run_once(self) -> None:
        try:
            self._action()
        except Exception:
            log.exception("%s failed; retrying next round", self._worker_thread.name)

    def stop(self) -> None:
        """Wake the thread and wait for it to end (after its last run). Idempotent."""
        self._stop.set()
        if self._worker_thread.is_alive():
            self._worker_thread.join()
