"""What a consumer's listener is given and may answer, and the message view it gets."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable

from rocketq.client.message import MessageExt
from rocketq.common.group_topics import RETRY_PREFIX
from rocketq.common.message import Property


class ConsumeStatus(enum.Enum):
    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


ListenerResult = ConsumeStatus | bool | None
Listener = Callable[[list[MessageExt]], ListenerResult | Awaitable[ListenerResult]]
"""Gets a batch (``consume_message_batch_max_size``, 1 by default). Returning None, True or
CONSUME_SUCCESS acknowledges it; False, RECONSUME_LATER or an exception asks for redelivery."""


def succeeded(result: ListenerResult) -> bool:
    """Whether a listener's result acknowledges its messages."""
    return result is None or result is True or result is ConsumeStatus.CONSUME_SUCCESS


def user_view(message: MessageExt) -> MessageExt:
    """A retried message as its consumer expects it: under its original topic."""
    if message.topic.startswith(RETRY_PREFIX):  # only then are the properties worth decoding here
        original = message.properties.get(Property.RETRY_TOPIC)
        if original:
            return message.with_topic(original)
    return message


Failed = list[list[MessageExt]]
"""The sub-batches of a pulled batch that its listener failed."""
