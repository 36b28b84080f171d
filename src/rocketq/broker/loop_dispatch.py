"""LoopDispatch: the broker's puts of one event-loop iteration dispatched together, on the loop."""

from __future__ import annotations

import asyncio

from rocketq.store import MessageStore

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
