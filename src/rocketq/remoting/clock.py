"""The clock that time-driven services read and sleep on, so tests can give them a fake one
(``rocketq.testing.FakeClock``) instead of sleeping."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    def time(self) -> float:
        """Seconds since the epoch, as ``time.time()``."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return once the clock moved ``seconds`` on."""
        ...


class SystemClock:
    """The real clock: ``time.time()`` and ``asyncio.sleep``. Its ``time`` is ``time.time`` itself, so a
    read (once per held pull) runs no Python frame."""

    time = staticmethod(time.time)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


SYSTEM_CLOCK = SystemClock()


async def wanted_or_slept(wanted: asyncio.Event, clock: Clock, seconds: float) -> None:
    """Return when ``wanted`` is set or ``clock`` moved ``seconds`` on, whichever comes first (the event is
    left as it is)."""
    if wanted.is_set():
        return
    waiters = {asyncio.ensure_future(wanted.wait()), asyncio.ensure_future(clock.sleep(seconds))}
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)
