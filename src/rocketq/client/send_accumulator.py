"""Automatic batching of single sends (``ProducerConfig.auto_batch``): the bookkeeping, apart from I/O.

A ``Producer.send`` of a plain message to a topic that has no request in flight leaves at once, alone,
exactly as without auto-batching. A send made while an earlier request to the same topic is still in
flight waits instead, with the other sends made meanwhile, and they leave together, as one
SEND_BATCH_MESSAGE request, when the loop finishes its current turn: no timer, no added delay beyond
that turn (the answers that wake many senders at once arrive in one turn, so their next sends gather).
A batch holds at most ``batch_max_messages`` messages and ``batch_max_bytes`` bytes of batch body; more
waiting sends leave as several batches, side by side. A batch goes to one queue chosen as for a single
send (round-robin across requests: sticky for the batch), and fails or is retried as a whole.

``coalescible`` says which messages may wait: plain ones only (no delay level, no transactional
marker, stored before the answer, a body small enough to travel uncompressed); the producer sends
every other kind, and idempotent, orderly, oneway and queue-chosen sends, on its usual paths.
``Accumulator`` counts the requests in flight per topic and holds the waiting sends. ``split_result``
turns the batch's answer into each send's own ``SendResult``.
"""

from __future__ import annotations

import asyncio
from typing import Final

from rocketq.client.message import Message, MessageQueue, SendResult
from rocketq.common.message import Property
from rocketq.protocol.batch import ITEM_OVERHEAD

_NOT_COALESCED_PROPERTIES: Final = frozenset(
    {
        Property.DELAY_TIME_LEVEL,
        Property.TRANSACTION_PREPARED,
        "__STARTDELIVERTIME",  # the timer properties of RocketMQ 4.x (Aliyun) and 5.x: a delivery time
        "TIMER_DELIVER_MS",
        "TIMER_DELAY_SEC",
        "TIMER_DELAY_MS",
    }
)


def coalescible(message: Message, compress_over: int) -> bool:
    """Whether ``message`` may travel in an automatic batch: no delay or delivery time, not a half
    message, ``wait_store_msg_ok`` left on, and a body that a single send would not compress (a batch
    carries its bodies as they are)."""
    if message.delay_level > 0 or not message.wait_store_msg_ok or len(message.body) > compress_over:
        return False
    # (compiled, a loop over the usual one or two names: no method call, as isdisjoint was)
    return all(name not in _NOT_COALESCED_PROPERTIES for name in message.properties)


def item_size(body: bytes, properties: str) -> int:
    """The bytes a message of ``body`` and ``properties`` takes in a batch body (properties travel as
    UTF-8)."""
    length = len(properties) if properties.isascii() else len(properties.encode())
    return ITEM_OVERHEAD + len(body) + length


class WaitingSend:
    """One send waiting for its batch: the message as it travels (body, properties text, flag), its
    unique id, and what its caller waits on. ``deadline`` (on the loop's clock, ``loop.time()``) and
    ``retries`` are the send's own."""

    __slots__ = ("body", "deadline", "flag", "future", "properties", "retries", "size", "unique_id")

    def __init__(
        self,
        body: bytes,
        properties: str,
        flag: int,
        unique_id: str,
        future: asyncio.Future[SendResult],
        deadline: float,
        retries: int,
    ) -> None:
        self.body = body
        self.properties = properties
        self.flag = flag
        self.size = item_size(body, properties)
        self.unique_id = unique_id
        self.future = future
        self.deadline = deadline
        self.retries = retries


class Accumulator:
    """The requests in flight and the sends waiting, per topic. ``add`` returns True for the first
    send waiting on a topic: the caller then arranges one ``take`` at the end of the loop's turn."""

    __slots__ = ("_in_flight", "_waiting", "max_bytes", "max_messages")

    def __init__(self, max_bytes: int, max_messages: int) -> None:
        self.max_bytes = max_bytes
        self.max_messages = max_messages
        self._in_flight: dict[str, int] = {}
        self._waiting: dict[str, list[WaitingSend]] = {}

    def busy(self, topic: str) -> bool:
        """Whether a request to ``topic`` is in flight (a new send then waits for the next batch)."""
        return self._in_flight.get(topic, 0) > 0

    def fits(self, send: WaitingSend) -> bool:
        """Whether ``send`` is small enough to wait for a batch at all."""
        return send.size <= self.max_bytes

    def start_if_idle(self, topic: str) -> bool:
        """``started(topic)`` when no request to ``topic`` is in flight (True); else nothing (False: it is
        ``busy``). One dictionary read where ``busy`` and then ``started`` made three calls."""
        in_flight = self._in_flight
        if topic in in_flight:  # (a topic's entry goes when its count returns to 0: finished)
            return False
        in_flight[topic] = 1
        return True

    def started(self, topic: str) -> None:
        self._in_flight[topic] = self._in_flight.get(topic, 0) + 1

    def finished(self, topic: str) -> None:
        left = self._in_flight[topic] - 1
        if left:
            self._in_flight[topic] = left
        else:
            del self._in_flight[topic]

    def add(self, topic: str, send: WaitingSend) -> bool:
        waiting = self._waiting.get(topic)
        if waiting is None:
            self._waiting[topic] = [send]
            return True
        waiting.append(send)
        return False

    def topics_waiting(self) -> list[str]:
        return list(self._waiting)

    def take(self, topic: str) -> list[list[WaitingSend]]:
        """The sends waiting on ``topic``, in order, cut into batches within the caps (cancelled ones
        left out); none wait afterwards."""
        batches: list[list[WaitingSend]] = []
        batch: list[WaitingSend] = []
        size = 0
        for send in self._waiting.pop(topic, []):
            if send.future.done():  # its caller gave up (cancelled) before it left
                continue
            if batch and (len(batch) >= self.max_messages or size + send.size > self.max_bytes):
                batches.append(batch)
                batch, size = [], 0
            batch.append(send)
            size += send.size
        if batch:
            batches.append(batch)
        return batches


def split_result(result: SendResult, batch: list[WaitingSend]) -> list[SendResult]:
    """Each send's own result from the answer to its batch: its unique id, its offset message id (the
    answer lists them comma-joined, in order), the batch's queue and its place in it (the answer gives
    the first queue offset; the batch's messages are stored at consecutive offsets)."""
    offset_ids = result.offset_msg_id.split(",")
    if len(offset_ids) != len(batch):
        offset_ids = [""] * len(batch)
    queue: MessageQueue = result.message_queue
    return [
        SendResult(result.status, send.unique_id, offset_ids[i], queue, result.queue_offset + i)
        for i, send in enumerate(batch)
    ]
