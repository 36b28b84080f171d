"""ConsumeThreads: the threads a push consumer runs a plain-function listener on.

Between ``min_threads`` and ``max_threads`` threads take work, in submission order, from one queue.
A thread starts when work arrives and no idle thread is waiting for it, up to ``max_threads``; a
thread above ``min_threads`` ends after ``keep_alive_s`` without work. This is RocketMQ's
``consumeThreadMin``/``consumeThreadMax`` as a Python user reads them (a pool that grows under load and
shrinks back), not Java's (whose unbounded queue keeps the pool at its minimum). ``call`` runs a
function on a thread and hands its result back to the event loop as a future, with one loop wake-up
for however many results are waiting.

Why not ``concurrent.futures.ThreadPoolExecutor``: a consume thread answers through the event loop, so
the executor's per-task Future, its condition variables and its idle semaphore were all overhead, and
its Python-level bookkeeping ran under the GIL on both sides of every hand-over. On the paced latency
stream of ``rocketq bench consumer`` the executor's hand-over took 130 us (p50) from submission to the
listener; see docs/benchmark-rounds.md#a-plain-function-listener-waited-for-its-thread.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

log = logging.getLogger(__name__)

KEEP_ALIVE_S = 60.0
"""How long a thread above the minimum waits for work before it ends (RocketMQ's is a minute too)."""

Work = Callable[[], None]
T = TypeVar("T")


class ConsumeThreads:
    def __init__(self, min_threads: int, max_threads: int, *, name: str, keep_alive_s: float = KEEP_ALIVE_S) -> None:
        if not 1 <= min_threads <= max_threads:
            raise ValueError(f"consume threads need 1 <= min ({min_threads}) <= max ({max_threads})")
        self.min_threads = min_threads
        self.max_threads = max_threads
        self.name = name
        self.keep_alive_s = keep_alive_s
        self._work: queue.SimpleQueue[Work | None] = queue.SimpleQueue()
        self._lock = threading.Lock()  # guards the three counts below and ``_closed``
        self._threads = 0  # alive
        self._idle = 0  # alive and not running work
        self._pending = 0  # submitted, not yet taken by a thread
        self._started = 0  # for thread names
        self._closed = False
        # results of ``call`` on their way to the loop, taken by it in one wake-up however many wait
        self._results: collections.deque[tuple[asyncio.Future[Any], Any]] = collections.deque()
        self._results_called = False  # a wake-up to take them is already on its way
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def threads(self) -> int:
        """Consume threads alive now."""
        return self._threads

    @property
    def idle(self) -> int:
        """Consume threads alive and waiting for work now."""
        return self._idle

    @property
    def spare(self) -> int:
        """How many pieces of work submitted now would start at once: idle threads no submitted work is
        waiting for, and threads that may still be started."""
        return max(0, self._idle - self._pending) + self.max_threads - self._threads

    def submit(self, work: Work) -> None:
        """Run ``work`` on a consume thread, starting one if every live thread has work waiting for it.
        ``work`` must not raise (anything it raises is logged). RuntimeError once closed."""
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self.name} is closed")
            self._pending += 1
            start = self._pending > self._idle and self._threads < self.max_threads
            if start:
                self._threads += 1
                self._idle += 1
                self._started += 1
                number = self._started
        if start:
            threading.Thread(target=self._serve, name=f"{self.name}-{number}", daemon=True).start()
        self._work.put(work)

    def call(self, function: Callable[[], T]) -> asyncio.Future[T]:
        """Run ``function`` on a consume thread; its result (or exception) arrives in the returned future
        of the calling loop, which is cancelled if the threads are closed first."""
        self._loop = loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        try:
            self.submit(lambda: self._run_for(future, function))
        except RuntimeError:  # closed: nothing waits for this any more
            future.cancel()
        return future

    def _run_for(self, future: asyncio.Future[T], function: Callable[[], T]) -> None:
        try:
            outcome: Any = function()
        except Exception as exc:
            outcome = exc
        self._results.append((future, outcome))
        if not self._results_called:
            self._results_called = True
            assert self._loop is not None  # set by call()
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                self._loop.call_soon_threadsafe(self._take_results)

    def _take_results(self) -> None:
        self._results_called = False  # before taking: a result added after this calls again
        results = self._results
        while results:
            future, outcome = results.popleft()
            if future.done():  # its waiter may have been cancelled meanwhile
                continue
            if isinstance(outcome, Exception):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)

    def close(self) -> None:
        """Stop taking work: what is queued is dropped, each thread ends after the work it is running."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            threads = self._threads
        while True:
            try:
                self._work.get_nowait()
            except queue.Empty:
                break
        for _ in range(threads):
            self._work.put(None)

    def _serve(self) -> None:
        while True:
            try:
                work = self._work.get(timeout=self.keep_alive_s)
            except queue.Empty:
                with self._lock:
                    if self._threads > self.min_threads and self._idle > self._pending:
                        self._threads -= 1
                        self._idle -= 1
                        return
                continue
            with self._lock:
                self._idle -= 1
                if work is None:
                    self._threads -= 1
                    return
                self._pending -= 1
            try:
                work()
            except Exception:
                log.exception("consume work raised")
            with self._lock:
                self._idle += 1
