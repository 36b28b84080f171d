"""ListenerCalls: the listener calls a push consumer has running, so a call that never returns can be
given up after ``consume_timeout_s`` (RocketMQ's consumeTimeout, 15 minutes).

A stuck call holds its queue's commit offset back for good. Giving it up, as Java's cleanExpireMsg does,
sends its messages back to the broker (they are retried through the group's retry topic) and counts
them as consumed in their queue, so the offset moves on. The call itself cannot be stopped; if it ever
returns, a failure it reports sends its messages back once more, as in Java.
"""

from __future__ import annotations

import logging
import time

from rocketq.client.consumer_core import ConsumerCore
from rocketq.client.message import MessageExt
from rocketq.client.process_queue import ProcessQueue

log = logging.getLogger(__name__)


class CallSlot:
    """One run of listener calls (a consume thread's part of a pulled batch, or a coroutine's): the call
    it is in now, as (batch, when it started), which the run sets before each call; no lock, one store."""

    __slots__ = ("current", "given_up", "process", "rearmed")

    def __init__(self, process: ProcessQueue, *, rearmed: bool = False) -> None:
        self.process = process
        self.current: tuple[list[MessageExt], float] | None = None
        self.given_up: tuple[list[MessageExt], float] | None = None  # the call already given up
        self.rearmed = rearmed  # messages the broker did not take back: not a run, closed when due


def _same_call(call: tuple[list[MessageExt], float], other: tuple[list[MessageExt], float] | None) -> bool:
    # By the batch's identity and the start time, not the tuple's: compiled code boxes a new tuple per read.
    return other is not None and call[0] is other[0] and call[1] == other[1]


class ListenerCalls:
    def __init__(self) -> None:
        self._slots: set[CallSlot] = set()

    def open(self, process: ProcessQueue) -> CallSlot:
        """A run of calls on ``process``'s messages starts (any thread); ``close`` it when it ends."""
        slot = CallSlot(process)
        self._slots.add(slot)
        return slot

    def close(self, slot: CallSlot) -> None:
        self._slots.discard(slot)

    def overdue(self, timeout_s: float) -> list[tuple[ProcessQueue, list[MessageExt]]]:
        """The calls running longer than ``timeout_s``, each returned once."""
        started_before = time.monotonic() - timeout_s
        overdue = []
        for slot in list(self._slots):
            current = slot.current  # read once: the run may move on to its next call meanwhile
            if current is not None and current[1] < started_before and not _same_call(current, slot.given_up):
                slot.given_up = current
                overdue.append((slot.process, current[0]))
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
                    slot = CallSlot(process, rearmed=True)
                    slot.current = ([message for message in batch if message not in returned], time.monotonic())
                    self._slots.add(slot)
                batch = returned
            offset = process.finish(batch)
            if offset >= 0 and not process.dropped:
                core.offsets.update(process.queue, offset)


async def _send_back(core: ConsumerCore, message: MessageExt) -> bool:
    try:
        return await core.send_back(message, delay_level=3)
    except Exception:
        log.exception("sending back %s failed", message.msg_id)
        return False
