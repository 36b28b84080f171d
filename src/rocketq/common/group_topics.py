"""The topics the broker keeps for each consumer group: its retry topic and its dead-letter topic,
and how many retries lead from one to the other by default; the consumer groups every broker knows."""

from __future__ import annotations

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
DEFAULT_MAX_RECONSUME_TIMES = 16
"""Retries of a failing message before it is a dead letter, unless the group or consumer sets another."""
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
"""The group tools pull with when they read queues without consuming them as a group (RocketMQ's
``MixAll.TOOLS_CONSUMER_GROUP``); every broker knows it without creating it."""


def retry_topic(group: str) -> str:
    """Where the group's failed messages wait for redelivery (every member subscribes to it)."""
    return RETRY_PREFIX + group


def dlq_topic(group: str) -> str:
    """Where the group's messages go after their last retry (nobody consumes it unless asked)."""
    return DLQ_PREFIX + group
