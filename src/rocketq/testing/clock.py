"""FakeClock: a clock that moves only when a test says so (``advance``), for services that take a
``rocketq.remoting.clock.Clock``."""

from __future__ import annotations

import asyncio
import threading
import time


class FakeClock:
    """Starts at ``start`` (now by default). ``sleep`` returns once ``advance`` moved the clock past its
    deadline; ``advance`` may be called from any thread."""

    def __init__(self, start: float | None = None) -> None:
        self._now = time.time() if start is None else start
        self._lock = threading.Lock()
        self._sleepers: list[tuple[float, asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def time(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        with self._lock:
            self._sleepers.append((self._now + seconds, loop, waiter))
        await waiter

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` on and wake the sleepers whose time has come."""
        with self._lock:
            self._now += seconds
            due = [sleeper for sleeper in self._sleepers if sleeper[0] <= self._now]
            self._sleepers = [sleeper for sleeper in self._sleepers if sleeper[0] > self._now]
        for _, loop, waiter in due:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_wake, waiter)

    @property
    def sleepers(self) -> int:
        """How many sleeps are waiting for the clock to move."""
        with self._lock:
            return sum(1 for _, _, waiter in self._sleepers if not waiter.done())


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
