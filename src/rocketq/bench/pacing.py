"""The paced stream every latency measurement uses (``e2e_latency``, the echo floor, the peers script
in ``bench/peers``): one send at a time, the i-th due ``i / rate`` seconds after the first, so that a
slow send delays the next one instead of the schedule drifting. Standard library only."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


async def paced(rate: int, count: int, send: Callable[[int], Awaitable[object]]) -> float:
    """Await ``send(perf_counter_ns())`` ``count`` times on the schedule above (the stamp is taken just
    before each send); returns the seconds from the first send to the end of the last."""
    interval_ns = 1_000_000_000 // rate
    clock = time.perf_counter_ns
    began = clock()
    for i in range(count):
        delay = began + i * interval_ns - clock()
        if delay > 0:
            await asyncio.sleep(delay / 1e9)
        await send(clock())
    return (clock() - began) / 1e9
