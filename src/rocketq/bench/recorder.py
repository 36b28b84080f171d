"""What a consumer benchmark's listener records: distinct deliveries, latencies, first/completion times."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from rocketq.client import MessageExt
from rocketq.client.listener import Listener

SENT_PROPERTY = "benchSentNs"
"""User property carrying the sender's ``time.perf_counter_ns()`` (the latency stream's messages)."""

STAMP_MARKS = os.environ.get("ROCKETQ_BENCH_STAMP_MARKS") == "1"
"""With ``ROCKETQ_BENCH_STAMP_MARKS=1`` in the environment (``bench/peers/e2e_chain.py`` sets it), each
latency stamp also makes a system call that does nothing, ``getppid`` at the send's stamp and ``getuid``
at the listener's, so that a system-call trace sees both stamps on its own clock. Off (the default),
nothing more is called."""


def mark_sent() -> None:
    """The send's stamp was just taken (called only with ``STAMP_MARKS``)."""
    os.getppid()


class Recorder:
    """A listener's state: distinct (queue, offset) keys, latencies, first and completion times.

    The sync listener runs on consumer threads: ``set.add`` and ``list.append`` are atomic under
    the GIL, and the timestamps are only ever set once from 0.
    """

    def __init__(self, target: int = 0) -> None:
        self.target = target
        self.seen: set[int] = set()
        self.latencies: list[int] = []
        self.first_ns = 0
        self.done_ns = 0
        self.record_size = 0
        self.calls = 0

    def count(self, messages: list[MessageExt]) -> None:
        """Record the keys of a delivered batch."""
        seen = self.seen
        for message in messages:
            seen.add((message.queue_id << 48) | message.queue_offset)
        self.calls += 1
        if messages:
            self.record_size = messages[-1].store_size
        if not self.first_ns:
            self.first_ns = time.perf_counter_ns()
        if self.target and not self.done_ns and len(seen) >= self.target:
            self.done_ns = time.perf_counter_ns()

    def stamp(self, messages: list[MessageExt]) -> None:
        """Record ``now - sent`` of every message carrying a send time, and its key."""
        now = time.perf_counter_ns()
        if STAMP_MARKS:
            os.getuid()
        for message in messages:
            sent = message.properties.get(SENT_PROPERTY)
            if sent is not None:
                self.latencies.append(now - int(sent))
        self.count(messages)

    def listener(self, kind: str, action: Callable[[list[MessageExt]], None]) -> Listener:
        """``action`` wrapped as a sync (thread pool) or async (event loop) listener that acknowledges
        every message (``True``, as CONSUME_SUCCESS)."""
        if kind == "async":

            async def on_messages(messages: list[MessageExt]) -> bool:
                action(messages)
                return True

            return on_messages

        def on_messages_sync(messages: list[MessageExt]) -> bool:
            action(messages)
            return True

        return on_messages_sync
