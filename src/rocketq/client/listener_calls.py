"""ListenerCalls: the listener calls a push consumer has running, so a call that never returns can be
given up after ``consume_timeout_s`` (RocketMQ's consumeTimeout, 15 minutes).

A stuck call holds its queue's commit offset back for good. Giving it up, as Java's cleanExpireMsg does,
sends its messages back to the broker (they are retried through the group's retry topic) and counts
them as consumed in their queue, so the offset moves on. The call itself cannot be stopped; if it ever
returns, a failure it reports sends its messages back once more, as in Java.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Final

from rocketq.client.consume_stats import ConsumerStats
from rocketq.client.consumer_core import ConsumerCore
from rocketq.client.listener import CallTimes, Failed, ListenerResult, retry_level
from rocketq.client.message import MessageExt, MessageQueue
from rocketq.client.process_queue import ProcessQueue

log = logging.getLogger(__name__)

_monotonic: Final = time.monotonic  # (bound once: compiled code reads a Final name as a C static)


class CallSlot:
    """One run of listener calls (a consume thread's part of a pulled batch, or a coroutine's).

    The run stores the batch of the call it is in now in ``current`` before each call: one store, no
    clock read, no lock. The watcher (``ListenerCalls.overdue``, on the event loop) notes when it first
    saw each batch there; a batch still there ``timeout`` after that sighting is overdue. So a call is
    given up between ``timeout`` and ``timeout`` plus one check interval after it started, never before
    (Java's cleanExpireMsg runs once per timeout, so it gives up between one and two)."""

    __slots__ = ("current", "given_up", "process", "rearmed", "seen", "seen_at")

    def __init__(self, process: ProcessQueue, *, rearmed: bool = False) -> None:
        self.process: ProcessQueue = process
        self.current: list[MessageExt] | None = None
        self.seen: list[MessageExt] | None = None  # the batch the watcher saw here last, since ``seen_at``
        self.seen_at = 0.0
        self.given_up: list[MessageExt] | None = None  # the call already given up
        self.rearmed = rearmed  # messages the broker did not take back: not a run, closed when due


_NO_QUEUE: Final = ProcessQueue(MessageQueue("", "", -1), -1, dropped=True)
"""The queue of a ``ListenerRun`` over messages of no queue (never watched)."""


class ListenerCalls:
    def __init__(self, group: str = "") -> None:
        self._slots: set[CallSlot] = set()
        self.group = group
        self._none_warned = False  # a listener call returned None: said once per consumer
        self._none_lock = threading.Lock()

    def returned_none(self) -> None:
        """A listener call returned None, which acknowledges its messages: say so once (a listener that
        forgot its ``return`` would otherwise lose the redeliveries it meant to ask for without a word)."""
        if self._none_warned:
            return
        with self._none_lock:
            first, self._none_warned = not self._none_warned, True
        if first:
            log.warning(
                "group %s: the listener returned None, which acknowledges its messages (as CONSUME_SUCCESS does);"
                " return ConsumeStatus.CONSUME_SUCCESS or True to say so, RECONSUME_LATER or False to have them"
                " redelivered (said once per consumer)",
                self.group,
            )

    def open(self, process: ProcessQueue) -> CallSlot:
        """A run of calls on ``process``'s messages starts (any thread); ``close`` it when it ends."""
        slot = CallSlot(process)
        self._slots.add(slot)
        return slot

    def watch(self, slot: CallSlot) -> None:
        """Watch ``slot`` (a ``ListenerRun``, its own slot) until it is closed."""
        self._slots.add(slot)

    def close(self, slot: CallSlot) -> None:
        self._slots.discard(slot)

    def rearm(self, process: ProcessQueue, messages: list[MessageExt]) -> None:
        """Watch ``messages`` of a given-up call again, as if a new call on them had just started: the
        broker did not take them back, so they are given up again a timeout later."""
        slot = CallSlot(process, rearmed=True)
        slot.current = messages
        self._slots.add(slot)

    @property
    def watched(self) -> int:
        """How many calls (running, or given up and rearmed) are watched."""
        return len(self._slots)

    def overdue(self, timeout_s: float, now: float | None = None) -> list[tuple[ProcessQueue, list[MessageExt]]]:
        """The calls seen running for ``timeout_s`` or longer (by ``now``, ``time.monotonic()`` by default),
        each returned once. Call it every so often: a call is timed from the first call that sees it."""
        now = time.monotonic() if now is None else now
        overdue = []
        for slot in list(self._slots):
            current = slot.current  # read once: the run may move on to its next call meanwhile
            if current is None:
                continue
            if current is not slot.seen:
                slot.seen, slot.seen_at = current, now
            elif now - slot.seen_at >= timeout_s and current is not slot.given_up:
                slot.given_up = current
                overdue.append((slot.process, current))
                if slot.rearmed:
                    self._slots.discard(slot)
        return overdue

    async def give_up_overdue(self, core: ConsumerCore, timeout_s: float) -> None:
        """Give up the calls running longer than ``timeout_s``: their messages go back to the broker
        (clustering; broadcasting drops them, as it drops failed ones) and count as consumed, so their
        queue's offset moves on. Messages the broker does not take are tried again a timeout later."""
        for process, batch in self.overdue(timeout_s):
            if process.dropped:
                continue
            log.warning("a listener call on %d message(s) of %s ran over %.0f s", len(batch), process.queue, timeout_s)
            if core.clustering:
                returned = [message for message in batch if await _send_back(core, message)]
                if len(returned) < len(batch):
                    self.rearm(process, [message for message in batch if message not in returned])
                batch = returned
            offset = process.finish(batch)
            if offset >= 0 and not process.dropped:
                core.offsets.update(process.queue, offset)


class ListenerRun(CallSlot):
    """The bookkeeping of one run of listener calls over a pulled batch's sub-batches, the same whether
    a consume thread calls a plain function or a task awaits a coroutine (``PushConsumer._run_listener``
    and ``_call_listener``): ``starting(batch)`` before each call (False: the queue was dropped, stop and
    consume nothing more), ``raised(batch)`` from inside the ``except`` of a call that raised, then
    ``returned(batch, result)``; ``close()`` in a ``finally``, and ``failed`` holds what to retry.

    A run over a ``process``'s messages is watched by ``calls``, so that an overdue call can be given
    up (the run is its own ``CallSlot``); ``times`` learns how long the calls took."""

    __slots__ = ("_calls", "_count", "_process", "_started", "_stats", "_taken", "_times", "_topic", "failed")

    def __init__(
        self, calls: ListenerCalls, times: CallTimes, process: ProcessQueue | None, stats: ConsumerStats | None = None
    ) -> None:
        """``stats``: where the run's messages, failures and time are counted (per topic)."""
        super().__init__(_NO_QUEUE if process is None else process)
        self._calls = calls
        self._times = times
        self._stats = stats
        self._taken = 0  # messages given to the listener
        self._topic = ""
        self._process = process  # None: not a queue's messages, not watched
        if process is not None:
            calls.watch(self)
        self._count = 0
        self._started = _monotonic()
        self.failed: Failed = []  # the sub-batches to retry, each with its delay level

    def starting(self, batch: list[MessageExt]) -> bool:
        """Before a call: False when the run's queue was dropped (revoked, or the consumer closed), as
        RocketMQ checks before each call; the run then stops without consuming the rest."""
        process = self._process
        if process is not None and process.dropped:
            return False
        self._count += 1
        self._taken += len(batch)
        self._topic = batch[0].topic
        self.current = batch
        return True

    def raised(self, batch: list[MessageExt]) -> ListenerResult:
        """The call raised (log it with its traceback, from inside the ``except``): it failed."""
        log.exception("listener failed on %d message(s) of %s", len(batch), batch[0].topic)
        return False

    def returned(self, batch: list[MessageExt], result: ListenerResult) -> None:
        if result is None:
            self._calls.returned_none()
        level = retry_level(result)
        if level is not None:
            self.failed.append((batch, level))

    def close(self) -> None:
        spent = _monotonic() - self._started
        self._times.record(spent, self._count)
        if self._stats is not None and self._taken:
            failed = sum(len(batch) for batch, _ in self.failed)
            self._stats.consumed(self._topic, self._taken - failed, failed, spent)
        if self._process is not None:
            self._calls.close(self)


async def _send_back(core: ConsumerCore, message: MessageExt) -> bool:
    try:
        return await core.send_back(message, delay_level=3)
    except Exception:
        log.exception("sending back %s failed", message.msg_id)
        return False
