"""The broker's puts on its event loop: ``LoopDispatch`` dispatches the puts of one loop iteration
together, and ``wait_flushed`` awaits a SYNC_FLUSH put's group commit."""

from __future__ import annotations

import asyncio

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

    def request(self) -> None:
        if not self._scheduled:
            self._store.dispatch_pending(INLINE_DISPATCH_MAX_BYTES)
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        self._store.dispatch_pending(INLINE_DISPATCH_MAX_BYTES)


class _FlushTimedOut(Exception):
    """Set on a flush waiter whose group commit took longer than the store's sync flush timeout."""


def _expire(waiter: asyncio.Future[int]) -> None:
    if not waiter.done():
        waiter.set_exception(_FlushTimedOut())


async def wait_flushed(store: MessageStore, result: PutMessageResult) -> PutMessageResult:
    """Await the fsync that covers ``result`` (SYNC_FLUSH; at once otherwise); the status becomes
    FLUSH_DISK_TIMEOUT when it takes longer than the store's ``sync_flush_timeout_ms``. One timer per
    wait (``call_later``): a fraction of what ``asyncio.timeout`` costs, on the path of every put."""
    loop = asyncio.get_running_loop()
    waiter = store.flushed_on_loop(result, loop)
    if waiter is None:
        return result
    timer = loop.call_later(store.config.sync_flush_timeout_ms / 1000, _expire, waiter)
    try:
        await waiter
    except _FlushTimedOut:
        result.status = PutStatus.FLUSH_DISK_TIMEOUT
    finally:
        timer.cancel()
    return result
