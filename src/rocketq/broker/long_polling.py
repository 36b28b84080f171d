"""Held pulls (PullRequestHoldService): a pull that finds nothing waits until a message arrives on its
queue or its suspend timeout ends, then its ``Hold.answer`` answers it.

The store's arrival listener runs on the dispatcher thread, which hands the news to the loop with
``call_soon_threadsafe``, or on the loop's own thread (puts dispatched on the loop), which answers the
held pulls at once, in the same loop iteration as the put that woke them, handing them the record
that arrived when it is the only one (so a pull waiting for exactly it is answered without a read).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

from rocketq.store.results import DispatchRequest

log = logging.getLogger(__name__)


class Hold:
    """A held pull as long polling keeps it: the queue offset it waits to see passed, its timer, and
    ``answer`` (the pull handler's ``HeldPull`` says how), called once."""

    __slots__ = ("offset", "timer")

    def __init__(self, offset: int) -> None:
        self.offset = offset
        self.timer: asyncio.TimerHandle | None = None

    def answer(self, arrived: bool, record: DispatchRequest | None) -> None:
        """Answer the pull: ``arrived`` is True when a message arrived (or the broker closes), False
        when the wait timed out; ``record`` is the record that arrived when the store's notice brought
        exactly one on the loop's thread (``ArrivalListener``), else None."""
        raise NotImplementedError


class LongPolling:
    """Use from the loop's thread, except ``on_arrival``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, max_offset: Callable[[str, int], int]) -> None:
        self._loop = loop
        self._loop_thread = threading.get_ident()  # built on the loop's thread
        self._max_offset = max_offset
        self._held: dict[tuple[str, int], list[Hold]] = {}
        self.holds = 0  # pulls held since the start (answered at once: not counted)

    def hold(self, topic: str, queue_id: int, entry: Hold, timeout_s: float) -> None:
        """Answer ``entry`` once the queue's max offset passes its offset (now, if it already has), or
        with ``arrived`` False after ``timeout_s``."""
        if self._max_offset(topic, queue_id) > entry.offset:  # arrived between the pull's read and now
            _answer(entry, True, None)
            return
        key = (topic, queue_id)
        entry.timer = self._loop.call_later(timeout_s, self._expire, key, entry)
        self.holds += 1
        waiters = self._held.get(key)
        if waiters is None:
            self._held[key] = [entry]
        else:
            waiters.append(entry)

    def _expire(self, key: tuple[str, int], entry: Hold) -> None:
        waiters = self._held.get(key, [])
        if entry in waiters:
            waiters.remove(entry)
            if not waiters:
                del self._held[key]
            _answer(entry, False, None)

    def on_arrival(
        self, topic: str, queue_id: int, max_offset: int, store_timestamp: int, record: DispatchRequest | None
    ) -> None:
        """Store arrival listener (dispatcher thread, or the loop's thread for puts dispatched there,
        whose ``record`` is handed to the pulls it wakes)."""
        if (topic, queue_id) in self._held:
            if threading.get_ident() == self._loop_thread:
                self._wake(topic, queue_id, max_offset, record)
            else:  # (the record is the dispatcher's to reuse: not handed over)
                self._loop.call_soon_threadsafe(self._wake, topic, queue_id, max_offset, None)

    def _wake(self, topic: str, queue_id: int, max_offset: int, record: DispatchRequest | None) -> None:
        key = (topic, queue_id)
        waiters = self._held.get(key)
        if not waiters:
            return
        due = [entry for entry in waiters if max_offset > entry.offset]
        if len(due) == len(waiters):
            del self._held[key]
        elif due:
            self._held[key] = [entry for entry in waiters if max_offset <= entry.offset]
        for entry in due:
            timer = entry.timer
            if timer is not None:
                timer.cancel()
            _answer(entry, True, record)

    def wake_all(self) -> None:
        """Shutdown: answer every held pull now."""
        held, self._held = self._held, {}
        for waiters in held.values():
            for entry in waiters:
                if entry.timer is not None:
                    entry.timer.cancel()
                _answer(entry, True, None)

    @property
    def held_count(self) -> int:
        return sum(len(waiters) for waiters in self._held.values())


def _answer(entry: Hold, arrived: bool, record: DispatchRequest | None) -> None:
    try:
        entry.answer(arrived, record)
    except Exception:  # one broken answer must not stop the others
        log.exception("answering a held pull failed")
