"""What the broker tells the store's retention before it deletes a CommitLog file early (under disk
pressure): whose messages in it are not consumed yet (``rocketq.store.retention``).

A message counts as not consumed when it is at or after, in its ConsumeQueue, the offset a
subscription group committed for that queue. The groups asked about are:

- every topic@group with committed offsets (``consumerOffset.json``), retry topics included;
- clustering groups online now whose subscription has no committed offset yet for a queue: they may
  still consume it from its first message, so they count from there until they commit;
- delayed messages (SCHEDULE_TOPIC_XXXX) not delivered yet, by the schedule service's progress.

Broadcasting consumers keep their offsets on the client, so the broker cannot know them: they do
not hold files back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from rocketq.broker.client_manager import ClientManager
from rocketq.broker.consumer_offsets import ConsumerOffsetManager
from rocketq.common.message import SCHEDULE_TOPIC
from rocketq.store import MessageStore
from rocketq.store.consume_queue import PADDING_SIZE, ConsumeQueue

_PADDING_LOOKAHEAD = 64
"""Entries looked at past a group's offset for its first message (padding has no message)."""

_Position = tuple[str, str, int, int | None]  # who, topic, queue id, committed offset (None: not yet)


class UnconsumedGuard:
    """Called on the store's cleaner thread (the tables it reads are copied under their locks)."""

    def __init__(
        self,
        store: MessageStore,
        offsets: ConsumerOffsetManager,
        clients: ClientManager,
        delayed: Callable[[], dict[int, int]],
    ) -> None:
        """``delayed``: the schedule service's next offset per delay level (queue ``level - 1``)."""
        self._store = store
        self._offsets = offsets
        self._clients = clients
        self._delayed = delayed

    def __call__(self, end_offset: int) -> str | None:
        """Who has not consumed a message stored below CommitLog offset ``end_offset``, or None."""
        store = self._store
        for who, topic, queue_id, committed in self._positions():
            queue = store.find_consume_queue(topic, queue_id)
            if queue is None:
                continue
            start = queue.min_offset if committed is None else max(committed, queue.min_offset)
            physical = _first_message_at(queue, start)
            if physical is not None and physical < end_offset:
                return f"{who} (topic {topic}, queue {queue_id}, from offset {start} of {queue.max_offset})"
        return None

    def _positions(self) -> Iterator[_Position]:
        queues_of: dict[str, list[int]] = {}
        for queue in self._store.queues():
            queues_of.setdefault(queue.topic, []).append(queue.queue_id)
        committed: dict[tuple[str, str], dict[int, int]] = {}
        for topic, group, queues in self._offsets.entries():
            committed[(topic, group)] = queues
            for queue_id, offset in queues.items():
                yield f"group {group}", topic, queue_id, offset
        for online in list(self._clients.consumers.values()):
            if online.message_model == "CLUSTERING":
                for topic in list(online.subscriptions):
                    known = committed.get((topic, online.name), {})
                    for queue_id in queues_of.get(topic, []):
                        if queue_id not in known:
                            yield f"group {online.name}", topic, queue_id, None
        delivered = self._delayed()
        for queue_id in queues_of.get(SCHEDULE_TOPIC, []):
            yield f"delayed messages of level {queue_id + 1}", SCHEDULE_TOPIC, queue_id, delivered.get(queue_id + 1)


def _first_message_at(queue: ConsumeQueue, offset: int) -> int | None:
    """The CommitLog offset of the first message at or after queue ``offset`` (None: none there)."""
    for position in range(offset, min(queue.max_offset, offset + _PADDING_LOOKAHEAD)):
        entry = queue.entry(position)
        if entry is not None and entry[1] != PADDING_SIZE:
            return entry[0]
    return None
