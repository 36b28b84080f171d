"""The checks a message passes before a producer sends it (nothing is sent when one fails), and its
properties as they travel. ``ValidationError`` says what is wrong."""

from __future__ import annotations

from rocketq.client.errors import ValidationError
from rocketq.client.message import Message
from rocketq.common.message import encode_properties
from rocketq.common.names import NOT_SENDABLE_TOPICS, empty_property_problem, separator_problem, topic_name_problem


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
