"""ListenerSlots: at most ``limit`` coroutine-listener calls of a push consumer at a time
(``consume_thread_max``), as an ``asyncio.Semaphore`` would allow them, first come first served.

Every pulled batch takes a slot before its listener is called, and a slot is nearly always free: a
free one is taken by a plain call (``take_now``), without the three coroutines that ``async with`` a
semaphore makes (its ``__aenter__``, ``acquire`` and ``__aexit__``, interpreted). Only a call that finds
none free waits (``take``). Compiled (``rocketq.native``). Use from the consumer's event loop only.
"""

from __future__ import annotations

import asyncio
from collections import deque


class ListenerSlots:
    def __init__(self, limit: int) -> None:
        self._free = limit
        self._waiting: deque[asyncio.Future[None]] = deque()  # in the order they came

    @property
    def free(self) -> int:
        """Slots nobody holds now."""
        return self._free

    def take_now(self) -> bool:
        """Take a slot if one is free and nobody waits for one (True), else take nothing (False)."""
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return True
        return False

    async def take(self) -> None:
        """Take a slot, waiting for one after those who wait already. Cancelled while waiting, it takes
        none (a slot handed to it meanwhile goes to the next in line)."""
        if self.take_now():
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # handed a slot, cancelled before it resumed
                self.release()
            elif waiter in self._waiting:  # (``release`` drops cancelled ones it meets)
                self._waiting.remove(waiter)
            raise

    def release(self) -> None:
        """Give a slot back: to the first caller still waiting, or to the free ones."""
        waiting = self._waiting
        while waiting:
            waiter = waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot passes to it, never becomes free
                return
        self._free += 1
