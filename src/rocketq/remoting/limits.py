"""What one client may make a server hold, so that no client can starve the others.

Three things grow with what a client does rather than with what the server chooses:

- **Answers it does not read.** Each answer waits in the connection's write buffer until the client
  reads it. Once a connection's unsent answers pass ``write_buffer_high_water`` bytes the server stops
  reading that connection and starts none of its requests already read; it carries on when they have
  drained below ``write_buffer_low_water`` (RocketMQ's ``writeBufferHighWaterMark`` /
  ``writeBufferLowWaterMark``). A client that never reads costs about one answer plus the high-water
  mark, not one answer per request it sent.
- **Answers it makes the server's threads work on.** A request handled on a worker thread (a query, a
  message view) writes its answer only when done, so the write buffer cannot hold those back: a
  connection with ``max_worker_requests`` such requests under way has no more of its requests started
  until one finishes.
- **Frames it never finishes.** A frame is buffered until its last byte arrives. A connection holds at
  most one partial frame of at most the server's maximum frame size (16 MiB by default), the whole
  process at most ``max_buffered_request_bytes`` across every server it runs (a NameServer and a Broker
  in ``rocketq up`` share it): a connection whose bytes would pass that is not read until others'
  frames complete. A frame not complete ``frame_timeout_s`` after its first byte closes its connection.
- **Connections it leaves open.** A connection that sends nothing for ``idle_timeout_s``
  (``serverChannelMaxIdleTimeSeconds``) is closed.

Each limit logs when it acts. ``RequestBytesBudget`` is plain bookkeeping: the connections pause and
resume their own reading.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

log = logging.getLogger(__name__)

MIB: Final = 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerLimits:
    """The limits one server applies to each of its connections (see the module docstring)."""

    write_buffer_high_water: int = 4 * MIB
    write_buffer_low_water: int = 1 * MIB
    max_worker_requests: int = 16
    frame_timeout_s: float = 30.0
    idle_timeout_s: float = 120.0
    max_buffered_request_bytes: int = 256 * MIB

    def __post_init__(self) -> None:
        if not 0 <= self.write_buffer_low_water <= self.write_buffer_high_water:
            raise ValueError("write buffer marks need 0 <= low water <= high water")
        if self.frame_timeout_s <= 0 or self.idle_timeout_s <= 0:
            raise ValueError("frame and idle timeouts must be positive")
        if self.max_buffered_request_bytes <= 0 or self.max_worker_requests <= 0:
            raise ValueError("max_buffered_request_bytes and max_worker_requests must be positive")

    @property
    def scan_interval_s(self) -> float:
        """How often a server looks for stalled frames and idle connections."""
        return max(0.05, min(10.0, self.idle_timeout_s / 4, self.frame_timeout_s / 4))


class RequestBytesBudget:
    """Bytes of partial request frames held by the connections that share this budget.

    Each holder reports how many bytes it holds now (``hold``); a holder that would pass the limit is
    told to wait, and is woken (its ``wake`` callback) once others have released enough. Use from one
    event loop.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._held: dict[object, int] = {}
        self._waiting: dict[object, Callable[[], None]] = {}

    def raise_limit(self, limit: int) -> None:
        """Use the larger of the current limit and ``limit`` (servers of one process share a budget)."""
        self.limit = max(self.limit, limit)

    def hold(self, holder: object, nbytes: int, wake: Callable[[], None]) -> bool:
        """Record that ``holder`` now holds ``nbytes``. False when the budget is over its limit with
        them: the holder should stop taking more until ``wake`` is called."""
        before = self._held.get(holder, 0)
        self._waiting.pop(holder, None)
        if nbytes:
            self._held[holder] = nbytes
        else:
            self._held.pop(holder, None)
        self.used += nbytes - before
        if nbytes < before:
            self._wake_waiters()
        if self.used > self.limit and 0 < nbytes < self.used:  # a lone holder is bounded by the frame size
            self._waiting[holder] = wake
            return False
        return True

    def release(self, holder: object) -> None:
        """``holder`` is gone: its bytes are free and it no longer waits."""
        self._waiting.pop(holder, None)
        self.used -= self._held.pop(holder, 0)
        self._wake_waiters()

    @property
    def waiting(self) -> int:
        """How many holders wait for room."""
        return len(self._waiting)

    def _wake_waiters(self) -> None:
        for holder, wake in list(self._waiting.items()):
            if self.used <= self.limit or self._held.get(holder, 0) >= self.used:  # room, or alone
                del self._waiting[holder]
                wake()


_process_budget: RequestBytesBudget | None = None


def process_budget(limit: int) -> RequestBytesBudget:
    """The budget every server of this process shares, at least ``limit`` bytes."""
    global _process_budget
    if _process_budget is None:
        _process_budget = RequestBytesBudget(limit)
    else:
        _process_budget.raise_limit(limit)
    return _process_budget
