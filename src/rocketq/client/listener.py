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
"""Gets a batch (``consume_message_batch_max_size``, 1 by default). Returning None, True or
CONSUME_SUCCESS acknowledges it; False, RECONSUME_LATER, a ``Reconsume`` or an exception asks for
redelivery."""


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


Failed = list[tuple[list[MessageExt], int]]
"""The sub-batches of a pulled batch that its listener failed, each with its retry delay level."""
