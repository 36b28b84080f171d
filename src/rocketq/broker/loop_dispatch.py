"""The broker's puts on its event loop: ``LoopDispatch`` dispatches the puts of one loop iteration
together, and ``FlushWaits`` awaits SYNC_FLUSH puts' group commits and SYNC_MASTER puts' slave
acknowledgements."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Protocol

from rocketq.remoting.clock import SYSTEM_CLOCK, Clock
from rocketq.store import MessageStore, PutMessageResult, PutStatus

INLINE_DISPATCH_MAX_BYTES = 256 * 1024
"""Up to this much new CommitLog is dispatched on the loop (about a millisecond of work); more goes to
the dispatcher thread, so a burst of big batches never stalls the loop."""


class LoopDispatch:
    """Dispatches the broker's puts on the loop: the first put after a pass at once, so a lone message
    reaches the pulls held for it without waiting, and the puts that follow it in the same event-loop
    iteration together in one pass right after them, so 32 concurrent sends (or one pipelining client)
    share a pass instead of paying one each. No thread hop either way. Use from ``loop`` only (kept:
    ``asyncio.get_running_loop()`` makes a ``getpid`` system call on every call, a fork check)."""

    def __init__(self, store: MessageStore, loop: asyncio.AbstractEventLoop) -> None:
        self._store = store
        self._loop = loop
        self._scheduled = False

    def request(self, *, at_once: bool = True) -> None:
        """Dispatch the caller's put: now when it is the first since the last pass and ``at_once``,
        else (or too) in the pass after the puts of this iteration. A put whose producer waits for its
        fsync passes ``at_once=False``: nobody gains from its dispatch before the group commit, and in
        the pass it costs a fraction of a lone dispatch."""
        if not self._scheduled:
            if at_once:
                self._store.dispatch_pending(INLINE_DISPATCH_MAX_BYTES)
            self._scheduled = True
            self._loop.call_soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        self._store.dispatch_pending(INLINE_DISPATCH_MAX_BYTES)


class FlushTimedOut(Exception):
    """Set on a flush waiter whose group commit took longer than the store's sync flush timeout."""


class SlaveTimedOut(FlushTimedOut):
    """Set on a waiter whose bytes no slave acknowledged within the sync flush timeout (SYNC_MASTER)."""


def timed_out_status(error: BaseException | None) -> PutStatus | None:
    """The put status for a waiter's timeout (None when ``error`` is none)."""
    if isinstance(error, SlaveTimedOut):
        return PutStatus.FLUSH_SLAVE_TIMEOUT
    if isinstance(error, FlushTimedOut):
        return PutStatus.FLUSH_DISK_TIMEOUT
    return None


class Replicas(Protocol):
    """What a SYNC_MASTER put waits on (``rocketq.replication.HAMaster``)."""

    def available(self, end_offset: int) -> bool: ...
    def acked_on_loop(self, end_offset: int, loop: Any) -> Any: ...


class FlushWaits:
    """The waits of one event loop for a put to be durable: with SYNC_FLUSH the fsync that covers it,
    with a SYNC_MASTER's ``replicas`` a slave's acknowledgement too (SLAVE_NOT_AVAILABLE at once when
    no slave can take it). ``wait`` awaits both; the status becomes FLUSH_DISK_TIMEOUT (the fsync) or
    FLUSH_SLAVE_TIMEOUT (the slave) when it takes longer than the store's ``sync_flush_timeout_ms``.

    Every wait has the same timeout, so deadlines come in order: one timer (a task sleeping on
    ``clock`` until the oldest deadline still pending, then the next, while any are pending) serves
    them all (a timer per wait cost as much as the rest of the wait). Deadlines are read on ``clock``
    (tests give a ``rocketq.testing.FakeClock``). Use from the loop only."""

    def __init__(self, store: MessageStore, replicas: Replicas | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self._store = store
        self._replicas = replicas
        self._clock = clock
        self._timeout_s = store.config.sync_flush_timeout_ms / 1000
        self._pending: deque[tuple[float, asyncio.Future[int], asyncio.Future[int] | None]] = deque()
        self._timer: asyncio.Task[None] | None = None
        self.active = store.config.sync_flush or replicas is not None
        """Whether a put asking to wait has anything to wait for."""

    def set_replicas(self, replicas: Replicas | None) -> None:
        """Wait for ``replicas`` from now on (a broker that became a SYNC_MASTER), or no longer (None)."""
        self._replicas = replicas
        self.active = self._store.config.sync_flush or replicas is not None

    async def wait(self, result: PutMessageResult) -> PutMessageResult:
        waiter = self.watch(result)
        if waiter is None:
            return result
        try:
            await waiter
        except FlushTimedOut as exc:
            result.status = timed_out_status(exc) or result.status
        return result

    def watch(self, result: PutMessageResult) -> asyncio.Future[int] | None:
        """The future of the fsync and the slave acknowledgement that cover ``result`` (None when there
        is nothing to wait for); it fails with ``FlushTimedOut`` (the fsync) or ``SlaveTimedOut`` after
        the store's sync flush timeout. No slave to take it: ``result``'s status becomes
        SLAVE_NOT_AVAILABLE and only the fsync is waited for."""
        loop = asyncio.get_running_loop()
        flushed: asyncio.Future[int] | None = self._store.flushed_on_loop(result, loop)
        replicated: asyncio.Future[int] | None = None
        replicas = self._replicas
        if replicas is not None and result.ok:
            if replicas.available(result.end_offset):
                replicated = replicas.acked_on_loop(result.end_offset, loop)
            else:
                result.status = PutStatus.SLAVE_NOT_AVAILABLE
        if flushed is None or replicated is None:
            waiter = flushed if replicated is None else replicated
            if waiter is None:
                return None
        else:
            waiter = _both(loop, flushed, replicated)
        pending = self._pending
        while pending and pending[0][1].done():  # settled waits leave from the front as new ones come
            pending.popleft()
        pending.append((self._clock.time() + self._timeout_s, waiter, flushed))
        if self._timer is None:
            self._timer = loop.create_task(self._expire())
        return waiter

    async def _expire(self) -> None:
        """The timer: fail each wait still pending at its deadline, until none are pending."""
        clock = self._clock
        pending = self._pending
        while pending:
            await clock.sleep(pending[0][0] - clock.time())
            now = clock.time()
            while pending and (pending[0][1].done() or pending[0][0] <= now):
                _, waiter, flushed = pending.popleft()
                if not waiter.done():
                    timed_out = FlushTimedOut() if flushed is not None and not flushed.done() else SlaveTimedOut()
                    waiter.set_exception(timed_out)
        self._timer = None


def _both(
    loop: asyncio.AbstractEventLoop, first: asyncio.Future[int], second: asyncio.Future[int]
) -> asyncio.Future[int]:
    """A future resolved once ``first`` and ``second`` are (failed as the first of them to fail)."""
    both: asyncio.Future[int] = loop.create_future()

    def settle(_: asyncio.Future[int]) -> None:
        if both.done():
            return
        for part in (first, second):
            if part.done() and not part.cancelled() and part.exception() is not None:
                both.set_exception(part.exception())  # type: ignore[arg-type]
                return
        if first.done() and second.done():
            both.set_result(min(first.result(), second.result()))

    first.add_done_callback(settle)
    second.add_done_callback(settle)
    return both
