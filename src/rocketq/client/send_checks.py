"""The checks a message passes before a producer sends it (nothing is sent when one fails), its
properties as they travel, and the send request that carries it. ``ValidationError`` says what is
wrong."""

from __future__ import annotations

import time

from rocketq.client.config import ProducerConfig
from rocketq.client.errors import ValidationError
from rocketq.client.message import Message, MessageQueue
from rocketq.common.message import encode_properties
from rocketq.common.names import NOT_SENDABLE_TOPICS, empty_property_problem, separator_problem, topic_name_problem
from rocketq.protocol import RemotingCommand, RequestCode, make_request
from rocketq.protocol.headers import IDEMPOTENT_SEND_FIELD
from rocketq.remoting.connection import next_opaque


def checked_properties(message: Message, max_message_size: int, valid_topics: set[str]) -> dict[str, str]:
    """``message``'s properties as they travel, once its topic, body and properties passed the checks
    (``valid_topics``: topics already checked, which this adds to: a regular expression per topic, not
    per message). ``properties_text`` makes the last check."""
    topic = message.topic
    if topic not in valid_topics:
        problem = topic_name_problem(topic)
        if problem is None and topic in NOT_SENDABLE_TOPICS:
            problem = f"the topic {topic!r} is written by the broker only"
        if problem is not None:
            raise ValidationError(problem)
        valid_topics.add(topic)
    if not message.body:
        raise ValidationError("the message body is empty")
    if len(message.body) > max_message_size:
        raise ValidationError(f"the message body of {len(message.body)} bytes exceeds the maximum {max_message_size}")
    problem = empty_property_problem(message.properties)
    if problem is not None:
        raise ValidationError(problem)
    return message.wire_properties()


def properties_text(properties: dict[str, str]) -> str:
    """``properties`` encoded, or ValidationError when a name or value holds a separator."""
    text = encode_properties(properties)
    problem = separator_problem(properties, text)
    if problem is not None:
        raise ValidationError(problem)
    return text


def send_request(
    config: ProducerConfig,
    queue: MessageQueue,
    body: bytes,
    properties: str,
    sys_flag: int,
    flag: int,
    *,
    batch: bool = False,
    oneway: bool = False,
    idempotent: bool = False,
) -> RemotingCommand:
    """The SEND_MESSAGE_V2 (or SEND_BATCH_MESSAGE) request of a producer with ``config`` for ``body``
    to ``queue``, born now."""
    # SendMessageRequestHeaderV2's fields written out (keys a..m), built here in compiled code (the
    # header's own to_ext_fields is interpreted); tests/client/test_written_headers.py holds them equal.
    fields = {
        "a": config.group,
        "b": queue.topic,
        "c": config.create_topic_key,
        "d": str(config.default_topic_queue_nums),
        "e": str(queue.queue_id),
        "f": str(sys_flag),
        "g": str(int(time.time() * 1000)),
        "h": str(flag),
        "i": properties,
        "j": "0",
        "k": "false",
        "m": "true" if batch else "false",
    }
    if idempotent:
        fields[IDEMPOTENT_SEND_FIELD] = "true"
    code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
    return make_request(code, opaque=next_opaque(), ext_fields=fields, body=body, oneway=oneway)
