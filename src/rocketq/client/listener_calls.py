"""ListenerCalls: the listener calls a push consumer has running, so a call that never returns can be
given up after ``consume_timeout_s`` (RocketMQ's consumeTimeout, 15 minutes).

A stuck call holds its queue's commit offset back for good. Giving it up, as Java's cleanExpireMsg does,
sends its messages back to the broker (they are retried through the group's retry topic) and counts
them as consumed in their queue, so the offset moves on. The call itself cannot be stopped; if it ever
returns, a failure it reports sends its messages back once more, as in Java.
"""

from __future__ import annotations

import itertools
import logging
import time

from rocketq.client.consumer_core import ConsumerCore
from rocketq.client.message import MessageExt
from rocketq.client.process_queue import ProcessQueue

log = logging.getLogger(__name__)


class ListenerCalls:
    def __init__(self) -> None:
        self._running: dict[int, tuple[ProcessQueue, list[MessageExt], float]] = {}
        self._tokens = itertools.count()

    def begin(self, process: ProcessQueue, batch: list[MessageExt]) -> int:
        """A call on ``batch`` (messages of ``process``) starts now; its token is for ``end``. Any thread."""
        token = next(self._tokens)
        self._running[token] = (process, batch, time.monotonic())
        return token

    def end(self, token: int) -> None:
        self._running.pop(token, None)

    def overdue(self, timeout_s: float) -> list[tuple[ProcessQueue, list[MessageExt]]]:
        """The calls running longer than ``timeout_s``, each returned once (then forgotten here)."""
        started_before = time.monotonic() - timeout_s
        due = [token for token, (_, _, began) in list(self._running.items()) if began < started_before]
        overdue = []
        for token in due:
            entry = self._running.pop(token, None)
            if entry is not None:
                overdue.append((entry[0], entry[1]))
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
                    self.begin(process, [message for message in batch if message not in returned])
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
