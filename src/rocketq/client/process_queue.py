"""ProcessQueue: the messages of one assigned queue that were pulled but not yet consumed.

Messages arrive in offset order. Consumers finish them in any order (concurrent mode) or in order
(orderly mode); the offset safe to commit is always the smallest one not yet finished, so a crash
redelivers instead of losing.
"""

from __future__ import annotations

import collections
import itertools
from dataclasses import dataclass, field

from rocketq.client.message import MessageExt, MessageQueue


@dataclass(slots=True)
class ProcessQueue:
    queue: MessageQueue
    next_pull_offset: int
    dropped: bool = False
    locked: bool = False  # orderly: this client holds the broker lock of the queue
    cached_bytes: int = 0
    max_offset: int = -1  # highest offset ever added
    _order: collections.deque[int] = field(default_factory=collections.deque)
    _messages: dict[int, MessageExt] = field(default_factory=dict)
    _finished: set[int] = field(default_factory=set)

    def is_dropped(self) -> bool:
        """Whether the queue was revoked (a method, so checks after an ``await`` are not optimised away)."""
        return self.dropped

    @property
    def count(self) -> int:
        """Messages pulled and not yet consumed (flow control counts these)."""
        return len(self._messages) - len(self._finished)

    @property
    def max_span(self) -> int:
        """Offsets between the first and the last message still being consumed (RocketMQ's maxSpan)."""
        order, finished = self._order, self._finished
        for last in reversed(order):
            if last not in finished:
                return last - order[0]
        return 0

    def add(self, messages: list[MessageExt]) -> None:
        """Cache newly pulled messages (offsets at or below ``max_offset`` are already here or done)."""
        cached, order_append = self._messages, self._order.append
        max_offset, added_bytes = self.max_offset, 0
        for message in messages:
            offset = message.queue_offset
            if offset <= max_offset:
                continue
            cached[offset] = message
            order_append(offset)
            added_bytes += len(message.body)
            max_offset = offset
        self.max_offset = max_offset
        self.cached_bytes += added_bytes

    def first_pending(self) -> MessageExt | None:
        """The unfinished message with the smallest offset (orderly consumption takes this one)."""
        for offset in self._order:
            if offset not in self._finished:
                return self._messages[offset]
        return None

    def finish(self, messages: list[MessageExt]) -> int:
        """Mark messages consumed; returns the offset now safe to commit, or -1 when nothing is cached."""
        order, finished, cached = self._order, self._finished, self._messages
        count = len(messages)
        if (  # the common case: a pulled batch done whole, at the head of the queue
            not finished
            and count <= len(order)
            and [message.queue_offset for message in messages] == list(itertools.islice(order, count))
        ):
            freed = 0
            for _ in range(count):
                freed += len(cached.pop(order.popleft()).body)
            self.cached_bytes -= freed
            return order[0] if order else self.max_offset + 1
        freed = 0
        for message in messages:
            offset = message.queue_offset
            stored = cached.get(offset)
            if stored is None or offset in finished:
                continue
            finished.add(offset)
            freed += len(stored.body)
        self.cached_bytes -= freed
        while order and order[0] in finished:
            offset = order.popleft()
            finished.discard(offset)
            del cached[offset]
        if order:
            return order[0]
        return self.max_offset + 1 if self.max_offset >= 0 else -1
