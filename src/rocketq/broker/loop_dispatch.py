"""The broker's puts on its event loop: ``LoopDispatch`` dispatches the puts of one loop iteration
together, and ``FlushWaits`` awaits SYNC_FLUSH puts' group commits."""

from __future__ import annotations

import asyncio
from collections import deque

from rocketq.store import MessageStore, PutMessageResult, PutStatus

INLINE_DISPATCH_MAX_BYTES = 256 * 1024
"""Up to this much new CommitLog is dispatched on the loop (about a millisecond of work); more goes to
the dispatcher thread, so a burst of big batches never stalls the loop."""


class LoopDispatch:
    """Dispatches the broker's puts on the loop: the first put after a pass at once, so a lone message
    reaches the pulls held for it without waiting, and the puts that follow it in the same event-loop
    iteration together in one pass right after them, so 32 concurrent sends (or one pipelining client)
    share a pass instead of paying one each. No thread hop either way. Use from the loop only."""

    def __init__(self, store: MessageStore) -> None:
        self._store = store
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
            asyncio.get_running_loop().call_soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        self._store.dispatch_pending(INLINE_DISPATCH_MAX_BYTES)


class FlushTimedOut(Exception):
    """Set on a flush waiter whose group commit took longer than the store's sync flush timeout."""


class FlushWaits:
    """SYNC_FLUSH waits of one event loop: ``wait`` awaits the fsync that covers a put, and the status
    becomes FLUSH_DISK_TIMEOUT when it takes longer than the store's ``sync_flush_timeout_ms``.

    Every wait has the same timeout, so deadlines come in order: one timer, set for the oldest
    deadline still pending, serves them all (a timer per wait cost as much as the rest of the wait).
    Use from the loop only."""

    def __init__(self, store: MessageStore) -> None:
        self._store = store
        self._timeout_s = store.config.sync_flush_timeout_ms / 1000
        self._pending: deque[tuple[float, asyncio.Future[int]]] = deque()
        self._timer: asyncio.TimerHandle | None = None

    async def wait(self, result: PutMessageResult) -> PutMessageResult:
        waiter = self.watch(result)
        if waiter is None:
            return result
        try:
            await waiter
        except FlushTimedOut:
            result.status = PutStatus.FLUSH_DISK_TIMEOUT
        return result

    def watch(self, result: PutMessageResult) -> asyncio.Future[int] | None:
        """The future of the fsync that covers ``result`` (None when there is nothing to wait for); it
        fails with ``FlushTimedOut`` after the store's sync flush timeout."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[int] | None = self._store.flushed_on_loop(result, loop)
        if waiter is None:
            return None
        pending = self._pending
        while pending and pending[0][1].done():  # settled waits leave from the front as new ones come
            pending.popleft()
        pending.append((loop.time() + self._timeout_s, waiter))
        if self._timer is None:
            self._timer = loop.call_at(pending[0][0], self._expire)
        return waiter

    def _expire(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        pending = self._pending
        while pending and (pending[0][1].done() or pending[0][0] <= now):
            _, waiter = pending.popleft()
            if not waiter.done():
                waiter.set_exception(FlushTimedOut())
        self._timer = loop.call_at(pending[0][0], self._expire) if pending else None
