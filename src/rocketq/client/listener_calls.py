"""ListenerCalls: the listener calls a push consumer has running, so a call that never returns can be
given up after ``consume_timeout_s`` (RocketMQ's consumeTimeout, 15 minutes).

A stuck call holds its queue's commit offset back for good. Giving it up, as Java's cleanExpireMsg does,
sends its messages back to the broker (they are retried through the group's retry topic) and counts
them as consumed in their queue, so the offset moves on. The call itself cannot be stopped: if it ever
returns, what it returns changes nothing more.
"""

from __future__ import annotations

import itertools
import time

from rocketq.client.message import MessageExt
from rocketq.client.process_queue import ProcessQueue


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
