"""Held pulls (PullRequestHoldService): a pull that finds nothing waits until a message arrives on its
queue or its suspend timeout ends. The store's arrival listener runs on the dispatcher thread, which hands
the news to the loop with ``call_soon_threadsafe``, or on the loop's own thread (a small put dispatched
inline), which wakes the held pulls at once."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable


class LongPolling:
    def __init__(self, loop: asyncio.AbstractEventLoop, max_offset: Callable[[str, int], int]) -> None:
        self._loop = loop
        self._loop_thread = threading.get_ident()  # built on the loop's thread
        self._max_offset = max_offset
        self._held: dict[tuple[str, int], list[tuple[int, asyncio.Future[None]]]] = {}

    async def wait_for_message(self, topic: str, queue_id: int, offset: int, timeout_s: float) -> bool:
        """Wait until the queue's max offset passes ``offset``; False when the timeout ended first."""
        future: asyncio.Future[None] = self._loop.create_future()
        key = (topic, queue_id)
        waiters = self._held.setdefault(key, [])
        entry = (offset, future)
        waiters.append(entry)
        try:
            if self._max_offset(topic, queue_id) > offset:  # arrived between the pull and the hold
                return True
            async with asyncio.timeout(timeout_s):
                await future
            return True
        except TimeoutError:
            return False
        finally:
            waiters = self._held.get(key, [])
            if entry in waiters:
                waiters.remove(entry)
            if not waiters:
                self._held.pop(key, None)

    def on_arrival(self, topic: str, queue_id: int, max_offset: int, store_timestamp: int) -> None:
        """Store arrival listener (dispatcher thread, or the loop's thread for puts dispatched inline)."""
        if (topic, queue_id) in self._held:
            if threading.get_ident() == self._loop_thread:
                self._wake(topic, queue_id, max_offset)
            else:
                self._loop.call_soon_threadsafe(self._wake, topic, queue_id, max_offset)

    def _wake(self, topic: str, queue_id: int, max_offset: int) -> None:
        for offset, future in list(self._held.get((topic, queue_id), ())):
            if max_offset > offset and not future.done():
                future.set_result(None)

    def wake_all(self) -> None:
        """Shutdown: answer every held pull now."""
        for waiters in self._held.values():
            for _, future in waiters:
                if not future.done():
                    future.set_result(None)
