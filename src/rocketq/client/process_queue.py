"""ProcessQueue: the messages of one assigned queue that were pulled but not yet consumed.

Messages arrive in offset order. Consumers finish them in any order (concurrent mode) or in order
(orderly mode); the offset safe to commit is always the smallest one not yet finished, so a crash
redelivers instead of losing.
"""

from __future__ import annotations

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
    # offsets of the cached messages in pull order, from ``_head`` on (a list with a moving head: typed,
    # it is indexed natively when compiled, where a deque's every operation is a call)
    _order: list[int] = field(default_factory=list)
    _head: int = 0
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
        order, finished, head = self._order, self._finished, self._head
        at = len(order) - 1
        while at >= head:
            if order[at] not in finished:
                return order[at] - order[head]
            at -= 1
        return 0

    def add(self, messages: list[MessageExt]) -> None:
        """Cache newly pulled messages (offsets at or below ``max_offset`` are already here or done)."""
        cached, order = self._messages, self._order
        max_offset, added_bytes = self.max_offset, 0
        for message in messages:
            offset = message.queue_offset
            if offset <= max_offset:
                continue
            cached[offset] = message
            order.append(offset)
            added_bytes += len(message.body)
            max_offset = offset
        self.max_offset = max_offset
        self.cached_bytes += added_bytes

    def first_pending(self) -> MessageExt | None:
        """The unfinished message with the smallest offset (orderly consumption takes this one)."""
        order, finished = self._order, self._finished
        for at in range(self._head, len(order)):
            if order[at] not in finished:
                return self._messages[order[at]]
        return None

    def finish(self, messages: list[MessageExt]) -> int:
        """Mark messages consumed; returns the offset now safe to commit, or -1 when nothing is cached."""
        order, finished, cached = self._order, self._finished, self._messages
        head, count = self._head, len(messages)
        if not finished and count <= len(order) - head and self._at_head(messages):
            # the common case: a pulled batch done whole, at the head of the queue
            freed = 0
            for at in range(head, head + count):
                freed += len(cached.pop(order[at]).body)
            self.cached_bytes -= freed
            head += count
        else:
            freed = 0
            for message in messages:
                offset = message.queue_offset
                stored = cached.get(offset)
                if stored is None or offset in finished:
                    continue
                finished.add(offset)
                freed += len(stored.body)
            self.cached_bytes -= freed
            while head < len(order) and order[head] in finished:
                offset = order[head]
                finished.discard(offset)
                del cached[offset]
                head += 1
        self._head = head
        if head < len(order):
            next_offset = order[head]
            if head >= 1024 and head * 2 >= len(order):  # drop the consumed prefix now and then
                del order[:head]
                self._head = 0
            return next_offset
        order.clear()
        self._head = 0
        return self.max_offset + 1 if self.max_offset >= 0 else -1

    def _at_head(self, messages: list[MessageExt]) -> bool:
        """Whether ``messages`` are exactly the first cached offsets, in order."""
        order, head = self._order, self._head
        return all(order[head + at] == message.queue_offset for at, message in enumerate(messages))
