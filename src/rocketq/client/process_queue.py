"""ProcessQueue: the messages of one assigned queue that were pulled but not yet consumed.

Messages arrive in offset order. Consumers finish them in any order (concurrent mode) or in order
(orderly mode); the offset safe to commit is always the smallest one not yet finished, so a crash
redelivers instead of losing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Final

from rocketq.client.message import MessageExt, MessageQueue

_wall_clock: Final = time.time  # (bound once: compiled code reads a Final name as a C static)

_CONSUMED: Final = MessageExt("", b"", 0, -1, -1, 0, 0, 0, b"", 0)
"""Stands in the list for a message consumed ahead of the head, so its memory goes at once."""


@dataclass(slots=True)
class ProcessQueue:
    queue: MessageQueue
    next_pull_offset: int
    dropped: bool = False
    locked: bool = False  # orderly: this client holds the broker lock of the queue
    cached_bytes: int = 0
    max_offset: int = -1  # highest offset ever added
    last_pull_ms: int = 0  # when a pull of the queue last answered (ms since the epoch)
    last_consume_ms: int = 0  # when messages of it were last consumed
    # the cached messages in offset order, from ``_head`` on: a list with a moving head, which compiled
    # code indexes natively (no boxed offsets, no dict); found by offset with a binary search
    _pending: list[MessageExt] = field(default_factory=list)
    _head: int = 0
    _finished: set[int] = field(default_factory=set)  # offsets consumed out of order, past the head

    def is_dropped(self) -> bool:
        """Whether the queue was revoked (a method, so checks after an ``await`` are not optimised away)."""
        return self.dropped

    @property
    def count(self) -> int:
        """Messages pulled and not yet consumed (flow control counts these)."""
        return len(self._pending) - self._head - len(self._finished)

    @property
    def retained(self) -> int:
        """Messages this queue keeps a reference to: the pending ones and a consumed prefix not dropped yet."""
        return len(self._pending)

    @property
    def max_span(self) -> int:
        """Offsets between the first and the last message still being consumed (RocketMQ's maxSpan)."""
        pending, finished, head = self._pending, self._finished, self._head
        at = len(pending) - 1
        while at >= head:
            if pending[at].queue_offset not in finished:
                return pending[at].queue_offset - pending[head].queue_offset
            at -= 1
        return 0

    def add(self, messages: list[MessageExt]) -> None:
        """Cache newly pulled messages (offsets at or below ``max_offset`` are already here or done)."""
        pending = self._pending
        max_offset, added_bytes = self.max_offset, 0
        for message in messages:
            offset = message.queue_offset
            if offset <= max_offset:
                continue
            pending.append(message)
            added_bytes += len(message.body)
            max_offset = offset
        self.max_offset = max_offset
        self.cached_bytes += added_bytes

    def first_pending(self) -> MessageExt | None:
        """The unfinished message with the smallest offset (orderly consumption takes this one)."""
        pending, finished = self._pending, self._finished
        for at in range(self._head, len(pending)):
            if pending[at].queue_offset not in finished:
                return pending[at]
        return None

    def first_cached_offset(self) -> int:
        """The smallest offset cached and not yet consumed (-1: none)."""
        first = self.first_pending()
        return first.queue_offset if first is not None else -1

    def finish(self, messages: list[MessageExt]) -> int:
        """Mark messages consumed; returns the offset now safe to commit, or -1 when nothing is cached."""
        self.last_consume_ms = int(_wall_clock() * 1000)
        pending, finished = self._pending, self._finished
        head, count, freed = self._head, len(messages), 0
        if not finished and count <= len(pending) - head and self._at_head(messages):
            # the common case: a pulled batch done whole, at the head of the queue
            for at in range(head, head + count):
                freed += len(pending[at].body)
                pending[at] = _CONSUMED
            head += count
        else:
            for message in messages:
                offset = message.queue_offset
                at = self._index(offset)
                if at < 0 or offset in finished:
                    continue
                finished.add(offset)
                freed += len(pending[at].body)
            while head < len(pending) and pending[head].queue_offset in finished:
                finished.discard(pending[head].queue_offset)
                pending[head] = _CONSUMED
                head += 1
        self.cached_bytes -= freed
        self._head = head
        if head < len(pending):
            next_offset = pending[head].queue_offset
            if head >= 1024 and head * 2 >= len(pending):  # drop the consumed prefix now and then
                del pending[:head]
                self._head = 0
            return next_offset
        pending.clear()
        self._head = 0
        return self.max_offset + 1 if self.max_offset >= 0 else -1

    def _at_head(self, messages: list[MessageExt]) -> bool:
        """Whether ``messages`` are exactly the first cached offsets, in order."""
        pending, head = self._pending, self._head
        return all(pending[head + at].queue_offset == message.queue_offset for at, message in enumerate(messages))

    def _index(self, offset: int) -> int:
        """Where the cached message of ``offset`` is (at or after the head), or -1."""
        pending = self._pending
        low, high = self._head, len(pending)
        while low < high:
            middle = (low + high) // 2
            if pending[middle].queue_offset < offset:
                low = middle + 1
            else:
                high = middle
        return low if low < len(pending) and pending[low].queue_offset == offset else -1
