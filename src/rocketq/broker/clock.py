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
    """The real clock: ``time.time()`` and ``asyncio.sleep``."""

    def time(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


SYSTEM_CLOCK = SystemClock()
