"""Held pulls (PullRequestHoldService): a pull that finds nothing waits until a message arrives on its
queue or its suspend timeout ends, then its ``ready`` callback answers it.

The store's arrival listener runs on the dispatcher thread, which hands the news to the loop with
``call_soon_threadsafe``, or on the loop's own thread (puts dispatched on the loop), which answers the
held pulls at once, in the same loop iteration as the put that woke them.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

Ready = Callable[[bool], None]
"""Answers a held pull: called once, with True when a message arrived, False when the wait timed out."""


class _Hold:
    __slots__ = ("offset", "ready", "timer")

    def __init__(self, offset: int, ready: Ready) -> None:
        self.offset = offset
        self.ready = ready
        self.timer: asyncio.TimerHandle | None = None


class LongPolling:
    """Use from the loop's thread, except ``on_arrival``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, max_offset: Callable[[str, int], int]) -> None:
        self._loop = loop
        self._loop_thread = threading.get_ident()  # built on the loop's thread
        self._max_offset = max_offset
        self._held: dict[tuple[str, int], list[_Hold]] = {}
        self.holds = 0  # pulls held since the start (answered at once: not counted)

    def hold(self, topic: str, queue_id: int, offset: int, timeout_s: float, ready: Ready) -> None:
        """Call ``ready`` once the queue's max offset passes ``offset`` (now, if it already has), or
        with False after ``timeout_s``."""
        if self._max_offset(topic, queue_id) > offset:  # arrived between the pull's read and now
            _answer(ready, True)
            return
        key = (topic, queue_id)
        entry = _Hold(offset, ready)
        entry.timer = self._loop.call_later(timeout_s, self._expire, key, entry)
        self.holds += 1
        self._held.setdefault(key, []).append(entry)

    def _expire(self, key: tuple[str, int], entry: _Hold) -> None:
        waiters = self._held.get(key, [])
        if entry in waiters:
            waiters.remove(entry)
            if not waiters:
                del self._held[key]
            _answer(entry.ready, False)

    def on_arrival(self, topic: str, queue_id: int, max_offset: int, store_timestamp: int) -> None:
        """Store arrival listener (dispatcher thread, or the loop's thread for puts dispatched there)."""
        if (topic, queue_id) in self._held:
            if threading.get_ident() == self._loop_thread:
                self._wake(topic, queue_id, max_offset)
            else:
                self._loop.call_soon_threadsafe(self._wake, topic, queue_id, max_offset)

    def _wake(self, topic: str, queue_id: int, max_offset: int) -> None:
        key = (topic, queue_id)
        waiters = self._held.get(key)
        if not waiters:
            return
        due = [entry for entry in waiters if max_offset > entry.offset]
        remaining = [entry for entry in waiters if max_offset <= entry.offset]
        if remaining:
            self._held[key] = remaining
        else:
            del self._held[key]
        for entry in due:
            if entry.timer is not None:
                entry.timer.cancel()
            _answer(entry.ready, True)

    def wake_all(self) -> None:
        """Shutdown: answer every held pull now."""
        held, self._held = self._held, {}
        for waiters in held.values():
            for entry in waiters:
                if entry.timer is not None:
                    entry.timer.cancel()
                _answer(entry.ready, True)

    @property
    def held_count(self) -> int:
        return sum(len(waiters) for waiters in self._held.values())


def _answer(ready: Ready, arrived: bool) -> None:
    try:
        ready(arrived)
    except Exception:  # one broken answer must not stop the others
        log.exception("answering a held pull failed")
