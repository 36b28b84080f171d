"""Held pulls (PullRequestHoldService): a pull that finds nothing waits until a message arrives on its
queue or its suspend timeout ends, then its ``Hold.answer`` answers it.

The store's arrival listener runs on the dispatcher thread, which hands the news to the loop with
``call_soon_threadsafe``, or on the loop's own thread (puts dispatched on the loop), which answers the
held pulls at once, in the same loop iteration as the put that woke them, handing them the record
that arrived when it is the only one (so a pull waiting for exactly it is answered without a read).

One timer serves every held pull: their deadlines (read on the broker's clock) wait in a heap, and one
task sleeps on that clock until the earliest of them, answers the pulls whose time has come and sleeps
again until the next. A pull answered before its deadline (woken) leaves its place in the heap behind
(it is skipped there); the heap is compacted when such places outnumber the held pulls.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import threading
from typing import Final

from rocketq.remoting.clock import SYSTEM_CLOCK, Clock
from rocketq.store.results import DispatchRequest
from rocketq.store.store_reads import StoreReads

log = logging.getLogger(__name__)

_NEVER: Final = float("inf")
COMPACT_MIN: Final = 64
"""The deadline heap is compacted (the places of answered pulls dropped) once it holds more than this
many places and more than ``COMPACT_RATIO`` times the pulls still held."""
COMPACT_RATIO: Final = 4


class Hold:
    """A held pull as long polling keeps it: the queue offset it waits to see passed, its queue (set by
    ``LongPolling.hold``), whether it still waits, and ``answer`` (the pull handler's ``HeldPull`` says
    how), called once."""

    __slots__ = ("key", "offset", "waiting")

    def __init__(self, offset: int) -> None:
        self.offset = offset
        self.key: tuple[str, int] = ("", 0)
        self.waiting = False

    def answer(self, arrived: bool, record: DispatchRequest | None) -> None:
        """Answer the pull: ``arrived`` is True when a message arrived (or the broker closes), False
        when the wait timed out; ``record`` is the record that arrived when the store's notice brought
        exactly one on the loop's thread (``ArrivalListener``), else None."""
        raise NotImplementedError


class LongPolling:
    """Use from the loop's thread, except ``on_arrival``. ``store``: whose queues the pulls wait on;
    ``clock`` is the broker's: the deadlines are read and slept on it (tests give a ``FakeClock``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, store: StoreReads, clock: Clock = SYSTEM_CLOCK) -> None:
        self._loop = loop
        self._loop_thread = threading.get_ident()  # built on the loop's thread
        self._store = store  # (its queues' max offsets: a method of a compiled class, called natively)
        self._clock = clock
        self._held: dict[tuple[str, int], list[Hold]] = {}
        self._deadlines: list[tuple[float, int, Hold]] = []  # a heap; answered pulls' places stay till popped
        self._placed = 0  # deadlines placed (their order among equal deadlines)
        self._waiting = 0  # pulls held now
        self._timer: asyncio.Task[None] | None = None  # the one timer: sleeps until ``_timer_at``
        self._timer_at = _NEVER
        self.holds = 0  # pulls held since the start (answered at once: not counted)

    def hold(self, topic: str, queue_id: int, entry: Hold, timeout_s: float) -> None:
        """Answer ``entry`` once the queue's max offset passes its offset (now, if it already has), or
        with ``arrived`` False once the broker's clock is ``timeout_s`` on."""
        # (the clock first: an interpreted clock may let the dispatcher's thread run, which must not
        # come between the check and the pull's joining the waiters)
        deadline = self._clock.time() + timeout_s
        # (a message arrived between the pull's read and now: answered at once)
        if self._store.get_max_offset_in_queue(topic, queue_id) > entry.offset:
            _answer(entry, True, None)
            return
        key = entry.key = (topic, queue_id)
        entry.waiting = True
        self._placed += 1
        deadlines = self._deadlines
        heapq.heappush(deadlines, (deadline, self._placed, entry))
        self.holds += 1
        self._waiting += 1
        waiters = self._held.get(key)
        if waiters is None:
            self._held[key] = [entry]
        else:
            waiters.append(entry)
        if deadline < self._timer_at:
            self._set_timer(deadline)
        elif len(deadlines) > COMPACT_MIN and len(deadlines) > COMPACT_RATIO * self._waiting:
            self._deadlines = [place for place in deadlines if place[2].waiting]
            heapq.heapify(self._deadlines)

    def _set_timer(self, deadline: float) -> None:
        """Make the one timer wake at ``deadline`` (earlier than it would)."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = deadline
        self._timer = self._loop.create_task(self._expire_from(deadline))

    async def _expire_from(self, deadline: float) -> None:
        """The timer: sleep until ``deadline``, answer the pulls whose deadline passed, and on until none
        is left."""
        clock = self._clock
        while True:
            await clock.sleep(deadline - clock.time())
            now = clock.time()
            deadlines = self._deadlines
            while deadlines and (deadlines[0][0] <= now or not deadlines[0][2].waiting):
                entry = heapq.heappop(deadlines)[2]
                if entry.waiting:
                    self._forget(entry)
                    _answer(entry, False, None)
            if not deadlines:
                self._timer, self._timer_at = None, _NEVER
                return
            deadline = self._timer_at = deadlines[0][0]

    def _forget(self, entry: Hold) -> None:
        """``entry`` no longer waits: out of its queue's waiters."""
        entry.waiting = False
        self._waiting -= 1
        waiters = self._held.get(entry.key)
        if waiters is not None and entry in waiters:
            waiters.remove(entry)
            if not waiters:
                del self._held[entry.key]

    def on_arrival(
        self, topic: str, queue_id: int, max_offset: int, store_timestamp: int, record: DispatchRequest | None
    ) -> None:
        """Store arrival listener (dispatcher thread, or the loop's thread for puts dispatched there,
        whose ``record`` is handed to the pulls it wakes)."""
        key = (topic, queue_id)
        waiters = self._held.get(key)
        if waiters is None:
            return
        if threading.get_ident() == self._loop_thread:
            self._answer_due(key, waiters, max_offset, record)
        else:  # (the record is the dispatcher's to reuse: not handed over)
            self._loop.call_soon_threadsafe(self._wake, key, max_offset)

    def _wake(self, key: tuple[str, int], max_offset: int) -> None:
        waiters = self._held.get(key)
        if waiters is not None:
            self._answer_due(key, waiters, max_offset, None)

    def _answer_due(
        self, key: tuple[str, int], waiters: list[Hold], max_offset: int, record: DispatchRequest | None
    ) -> None:
        """Answer ``key``'s waiters whose offset ``max_offset`` passed (their deadlines' places stay in
        the heap, skipped there)."""
        if len(waiters) == 1:  # (the common case: one consumer on the queue)
            due = waiters
            if max_offset <= waiters[0].offset:
                return
            del self._held[key]
        else:
            due = [entry for entry in waiters if max_offset > entry.offset]
            if len(due) == len(waiters):
                del self._held[key]
            elif due:
                self._held[key] = [entry for entry in waiters if max_offset <= entry.offset]
        self._waiting -= len(due)
        for entry in due:
            entry.waiting = False
            _answer(entry, True, record)

    def wake_all(self) -> None:
        """Shutdown: answer every held pull now (and stop the timer)."""
        held, self._held = self._held, {}
        self._deadlines, self._waiting = [], 0
        if self._timer is not None:
            self._timer.cancel()
            self._timer, self._timer_at = None, _NEVER
        for waiters in held.values():
            for entry in waiters:
                entry.waiting = False
                _answer(entry, True, None)

    @property
    def held_count(self) -> int:
        """Pulls held now."""
        return self._waiting


def _answer(entry: Hold, arrived: bool, record: DispatchRequest | None) -> None:
    try:
        entry.answer(arrived, record)
    except Exception:  # one broken answer must not stop the others
        log.exception("answering a held pull failed")
