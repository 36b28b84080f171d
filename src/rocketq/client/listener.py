"""What a consumer's listener is given and may answer, and the message view it gets."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from rocketq.client.message import MessageExt
from rocketq.common.group_topics import RETRY_PREFIX
from rocketq.common.message import Property


class ConsumeStatus(enum.Enum):
    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


@dataclass(frozen=True, slots=True)
class Reconsume:
    """A listener's answer that also says when to redeliver (RocketMQ's
    ``ConsumeConcurrentlyContext.delayLevelWhenNextConsume``): ``delay_level`` 1-18 waits that delay
    level, 0 lets the broker choose (3 + the message's reconsume times, as RECONSUME_LATER does), -1
    sends the messages straight to the group's dead-letter queue. Orderly consumption retries in place
    whatever the level."""

    delay_level: int = 0


ListenerResult = ConsumeStatus | Reconsume | bool | None
Listener = Callable[[list[MessageExt]], ListenerResult | Awaitable[ListenerResult]]
"""Gets a batch (``consume_message_batch_max_size``, 1 by default). Returning True or CONSUME_SUCCESS
acknowledges it; False, RECONSUME_LATER, a ``Reconsume`` or an exception asks for redelivery.

Returning None (a function without ``return``) acknowledges it too, unlike RocketMQ's Java client, which
takes a null status as RECONSUME_LATER: a Python listener that ends without ``return`` has consumed its
messages. The first None a consumer's listener returns is logged as a WARNING (once per consumer), so a
forgotten ``return RECONSUME_LATER`` does not go unnoticed."""


def retry_level(result: ListenerResult) -> int | None:
    """None when a listener's result acknowledges its messages, else the delay level to redeliver them at."""
    if result is None or result is True or result is ConsumeStatus.CONSUME_SUCCESS:
        return None
    return result.delay_level if isinstance(result, Reconsume) else 0


def user_view(message: MessageExt) -> MessageExt:
    """A retried message as its consumer expects it: under its original topic."""
    if message.topic.startswith(RETRY_PREFIX):  # only then are the properties worth decoding here
        original = message.properties.get(Property.RETRY_TOPIC)
        if original:
            return message.with_topic(original)
    return message


def user_views(batch: list[MessageExt]) -> list[MessageExt]:
    """``user_view`` of each message of a pulled batch (one queue's, so of one topic): ``batch`` itself
    unless that topic is a retry topic."""
    if batch and batch[0].topic.startswith(RETRY_PREFIX):
        return [user_view(message) for message in batch]
    return batch


Failed = list[tuple[list[MessageExt], int]]
"""The sub-batches of a pulled batch that its listener failed, each with its retry delay level."""


def listener_batches(messages: list[MessageExt], batch_size: int) -> list[list[MessageExt]]:
    """``messages`` cut into listener calls of ``batch_size`` (``consume_message_batch_max_size``), as
    their users see them (a pulled batch comes from one queue, so only a retry topic's batch needs
    ``user_view``)."""
    size = max(1, batch_size)
    messages = user_views(messages)
    if size == 1:
        return [[message] for message in messages]
    return [messages[start : start + size] for start in range(0, len(messages), size)]


def worker_parts(
    messages: list[MessageExt], batch_size: int, spare: int, calls_per_part: int = 1
) -> list[list[MessageExt]]:
    """A pulled batch cut for ``spare`` consume threads (or coroutine slots) that could start on it
    now: whole when none could (one hand-over per pull while all are busy), else spread over them, so
    a burst into one queue is consumed as concurrently as RocketMQ's one request per listener call
    would be, but with at least ``calls_per_part`` listener calls in a part (``CallTimes``: a part of
    fast calls is not worth waking a thread for). Parts hold whole listener calls of ``batch_size``."""
    size = max(1, batch_size)
    if len(messages) <= size:  # one listener call (a caught-up queue's usual pull)
        return [messages]
    calls = -(-len(messages) // size)
    parts = min(calls, max(1, spare), max(1, calls // max(1, calls_per_part)))
    if parts == 1:
        return [messages]
    per_part = -(-calls // parts) * size  # whole listener calls in each part
    return [messages[start : start + per_part] for start in range(0, len(messages), per_part)]


HANDOVER_S = 100e-6
"""Listener time a part of a pulled batch should hold to be worth a hand-over of its own: waking a
consume thread, and the GIL passing to it and back, cost tens of microseconds of CPU on a small VM."""


class CallTimes:
    """A listener's mean call time, a moving average over its recent runs of calls, and from it how
    many calls a part of a pulled batch should hold (``worker_parts``). Written from consume threads
    without a lock: a lost update only delays the average a little."""

    __slots__ = ("mean_s",)

    def __init__(self) -> None:
        self.mean_s: float | None = None  # nothing measured yet: spread batches as widely as allowed

    def record(self, seconds: float, calls: int) -> None:
        if calls > 0:
            per_call = seconds / calls
            self.mean_s = per_call if self.mean_s is None else 0.8 * self.mean_s + 0.2 * per_call

    def calls_per_part(self) -> int:
        mean = self.mean_s
        if mean is None or mean >= HANDOVER_S:
            return 1
        return int(HANDOVER_S / max(mean, 1e-9))
